"""``diverge-codec relay -- COMMAND [ARG...]`` or ``relay --url URL``: relay an MCP server's notifications as a channel.

A thin layer over ``diverge_codec.relay``: the options are ``RelayOptions``'
fields, the output is the mcp-notifications channel as stream records (stdout, never a
terminal unless ``--force-tty``, or ``--out``), and the report is one JSON line on stderr,
after a line for each failed call and a hint for a server not reached (``_watch``). Exit
status: 0 the server ended on its own with 0 or was shut down on request (a signal,
``--duration``, ``--until-answered``), 1 it failed, was killed or never answered
``initialize``, 2 bad usage or a command that cannot start, 3 a call or request failed.

On Linux the command makes itself a child subreaper, so whatever the server starts is its
descendant until the end, even a daemon that left the server's process group and cleared
its environment; at the end every such process is killed and reaped (``relay.leftovers``).
A command is POSIX only: on Windows the command refuses, exit 2. ``--url`` relays a remote
server over Streamable HTTP (``relay.streamable_http``, the ``[http]`` extra) on any system.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import _json
from .._collector import paused_collector
from ..relay import (
    DEFAULT_GRACE, DEFAULT_MAX_LINE, DEFAULT_OUTBOX_BYTES, DEFAULT_RECONNECT_WINDOW, DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_STREAM_TIMEOUT, DISCOVER_TIMEOUT, MODERN_VERSIONS, PROTOCOL_VERSION, PROTOCOLS, SUPPORTED_VERSIONS, RelayReport,
)
from ..relay import LOG_LEVELS as SERVER_LOG_LEVELS
from ._safe import UsageError, create_private
from ._watch import DEFAULT_LOG_LEVEL, EXIT_CALL_FAILED, LOG_LEVELS, Watch, refuse_terminal

if TYPE_CHECKING:
    from ..relay import Command, Relay, RelayOptions, Remote


def parse_call(text: str, option: str = "--call") -> tuple[str, dict[str, Any]]:
    """``NAME=JSON`` (the arguments, an object) or ``NAME`` alone (no arguments)."""
    name, equals, arguments = text.partition("=")
    if not name:
        raise UsageError(f"{option}: a name is needed before '='")
    if not equals:
        return name, {}
    try:
        value = _json.loads(arguments.encode())
    except ValueError:
        raise UsageError(f"{option} {name}: the arguments are not JSON") from None
    if not isinstance(value, dict):
        raise UsageError(f"{option} {name}: the arguments must be a JSON object")
    return name, value


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be more than 0: {text!r}")
        return value
    return parse


def _driver(tls: bool) -> ModuleType:
    """The relay's API (``diverge_codec.relay``) with asyncio loaded; for pipes, asyncio without ``ssl`` (a tenth of
    start-up, OpenSSL's set-up), hidden while asyncio loads and then put back: a later ``import ssl`` works, only
    asyncio's TLS stays off. (``--url`` loads asyncio with ``ssl`` before this: a server may name an https URL,
    its authorization's.)"""
    hide = not tls and "asyncio" not in sys.modules and "ssl" not in sys.modules
    with paused_collector():
        if hide:
            sys.modules["ssl"] = None  # type: ignore[assignment]  # None in sys.modules: "import ssl" raises ImportError
        try:
            from .. import relay
            relay.Relay  # noqa: B018  (loads the API, and asyncio with it)
            relay.RelayUnsupported  # noqa: B018  (the stdio driver, loaded as before)
        finally:
            if hide:
                del sys.modules["ssl"]
    return relay


def _options(args: argparse.Namespace, read_bytes: int | None = None) -> RelayOptions:
    import subprocess

    from ..relay import RelayOptions

    return RelayOptions(read_bytes=read_bytes,
        calls=[parse_call(text) for text in args.call],
        requests=[parse_call(text, "--request") for text in args.request], until_answered=args.until_answered, duration=args.duration,
        grace=args.grace, request_timeout=args.request_timeout, reconnect_window=args.reconnect_window,
        stream_timeout=args.stream_timeout,
        protocol_version=args.protocol_version, protocol=args.protocol, server_log_level=args.server_log_level,
        max_line=args.max_line,
        outbox_bytes=args.outbox_bytes, server_stderr=subprocess.DEVNULL if args.quiet_server else None)


async def _run(server: Command | Remote, out_fd: int, options: RelayOptions, watch: Watch) -> tuple[dict[str, Any], int]:
    """One server relayed onto the channel at ``out_fd`` through the API; for a command, what this subreaper
    adopted and no mark found is ended after it."""
    from ..relay import Command, Relay, end_adopted, exit_status, open_writer

    relay = Relay(server, options, channel=await open_writer(out_fd))
    try:
        async with relay:
            report = await _until_signalled(relay, watch)
    finally:
        adopted = await end_adopted() if isinstance(server, Command) else 0
    if adopted:
        report.server["leftovers"] = report.server.get("leftovers", 0) + adopted
    return report.as_dict(), exit_status(report)


async def _until_signalled(relay: Relay[Any], watch: Watch) -> RelayReport:
    """Wait for the relay with SIGINT/SIGTERM as its shutdown (where the loop has signal handlers), watched (``_watch``)."""
    import asyncio
    import signal

    loop = asyncio.get_running_loop()
    handled = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, relay.shutdown, f"signal {signal.Signals(signum).name}")
            handled.append(signum)
        except NotImplementedError:  # Windows' loop: Ctrl-C ends the process
            pass
    watch.attach(relay)
    try:
        return await relay.wait()
    finally:
        watch.detach()
        for signum in handled:
            loop.remove_signal_handler(signum)


def _http_target(args: argparse.Namespace, command: list[str]) -> Remote:
    """The remote server of ``--url``: its URL, headers (``${NAME}`` taken from the environment), token command and
    TLS, checked before anything starts (exit 2 on bad usage, naming the option or variable, never a value)."""
    from ..relay import CommandToken, CredentialError, NetworkPolicy, Remote, check_url, expand_header, load_client, parse_header

    if command:
        raise UsageError("relay takes --url or a command after '--', not both")
    if args.protocol in MODERN_VERSIONS and args.transport == "sse":
        raise UsageError(f"--protocol {args.protocol}: --transport sse speaks the 2025 era alone")
    tls_options = (args.cacert, args.cert, args.key)
    try:
        headers = [parse_header(text) for text in args.header]
        headers = [parse_header(f"{name}: {expand_header(name, value)}") for name, value in headers]
        url = check_url(args.url)
        if any(tls_options) and not url.startswith("https:"):
            raise ValueError("--cacert, --cert and --key are for an https:// --url")
        if args.token_command is not None and any(name.lower() == "authorization" for name, _ in headers):
            raise ValueError("--token-command sets the Authorization header: give it or --header 'Authorization: ...', not both")
        # the TLS options made into a context once, here, so a file that cannot be used is refused before the start
        given = NetworkPolicy(cafile=args.cacert, cert=args.cert, key=args.key)
        network = NetworkPolicy(ssl_context=given.tls()) if any(tls_options) else None
        load_client()
    except (ValueError, ImportError, CredentialError) as error:
        raise UsageError(str(error)) from None
    for name, exists in (("SSL_CERT_FILE", os.path.isfile), ("SSL_CERT_DIR", os.path.isdir)):
        path = os.environ.get(name)
        if path and url.startswith("https:") and not (exists(path) and os.access(path, os.R_OK)):
            raise UsageError(f"{name} names no readable {'file' if name.endswith('FILE') else 'folder'} of CA certificates")
    token = CommandToken(args.token_command) if args.token_command is not None else None
    return Remote(url, headers, args.transport, token=token, network=network)


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters

ALLOCATOR_KEEPS = {M_MMAP_THRESHOLD: 4 << 20, M_TRIM_THRESHOLD: 32 << 20}
"""glibc's defaults give a block over 128 KiB its own mapping, unmapped when freed, and trim the
heap's free top past 128 KiB: a relay that reads chunks of up to 1 MiB and writes as many bytes of
records would fault in fresh zeroed pages for every chunk (a quarter of its CPU on a fast server:
``benchmarks/relay_cost.py``, 0.46 -> 0.33 CPU seconds for 150 MB). Blocks up to 4 MiB come from
the heap instead, and up to 32 MiB of freed heap is kept for the next chunk."""


def _keep_freed_memory() -> bool:
    """Tune glibc's allocator for the relay's chunk-sized blocks (Linux with glibc; elsewhere nothing):
    whether it took both settings."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt  # where a setting is refused (0), reads stay asyncio's size
        return all([mallopt(parameter, value) == 1 for parameter, value in ALLOCATOR_KEEPS.items()])
    except (OSError, AttributeError):
        return False


def cmd_relay(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.config is not None or args.out_dir is not None or args.server:
        return _fleet(args, command)
    remote = None
    if args.url is not None:
        remote = _http_target(args, command)
    elif args.header or args.token_command or args.cacert or args.cert or args.key or args.transport != "auto":
        raise UsageError("--header, --transport, --token-command, --cacert, --cert and --key are for --url")
    elif not command:
        raise UsageError("relay needs the server's command after '--', or --url")
    elif sys.platform == "win32":
        raise UsageError("relay runs MCP servers on POSIX systems only (Linux, macOS); "
                         "--url, inspect and encode run everywhere")
    refuse_terminal(args.out, args.force_tty)
    with paused_collector():  # start-up makes what lives as long as the process: frozen, never walked
        watch = Watch(args.answers, args.report, args.request_timeout,  # its files made (or refused) before the server starts
                      log_level=args.log_level)
        relay = _driver(tls=args.url is not None and args.url[:6].lower() == "https:")
        import asyncio

        server = remote if remote is not None else relay.Command(command)
        # a pipeful a read, once freed blocks are kept: else each read's block is a fresh mapping
        options = _options(args, read_bytes=relay.PIPE_BYTES if _keep_freed_memory() else None)
        out_fd = os.dup(sys.stdout.fileno()) if args.out in (None, "-") else create_private(args.out)
        gc.freeze()
    if remote is None:
        relay.become_subreaper()
    try:
        report, status = asyncio.run(_run(server, out_fd, options, watch))
    except relay.RelayUnsupported as error:
        raise UsageError(str(error)) from None
    return watch.finish(report, status)


def _fleet(args: argparse.Namespace, command: list[str]) -> int:
    """``--config FILE --out-dir DIR [--server NAME ...]``: every server of the config in this process (``_fleet``)."""
    if args.config is None or args.out_dir is None:
        raise UsageError("--config and --out-dir go together (--server names servers of --config)")
    alone = {"a command": command, "--url": args.url, "--out": args.out, "--header": args.header, "--answers": args.answers,
             "--token-command": args.token_command, "--cacert": args.cacert, "--cert": args.cert, "--key": args.key}
    given = [name for name, value in alone.items() if value]
    if given:
        raise UsageError(f"--config takes its servers from the file: {given[0]} is for one server")
    if sys.platform == "win32":
        raise UsageError("relay --config runs MCP servers on POSIX systems only (Linux, macOS)")
    from ._fleet import cmd_fleet

    _driver(tls=True)
    return cmd_fleet(args, _options(args))


EPILOG = f"""\
output: the channel (binary stream records) on stdout, or --out FILE; never onto a
terminal (exit 2) unless --force-tty. On stderr: one line for each call or request
that failed (its name, the JSON-RPC error code and the server's message, isError,
or a timeout), one line with a hint for a server that could not be reached, and
last the JSON report (or in --report FILE). While it runs, a line for each thing an
operator must know as it happens (--log-level info, the default; debug: every HTTP
exchange and stdio step; quiet: the report alone) and, with stderr a terminal, a
status line: seen, relayed, dropped, and that Ctrl-C stops it. No argument value
or answer is printed unless --answers; no header value, token or cookie ever is.

exit status: 0 the server ended on its own with 0 or was shut down on request
(SIGINT/SIGTERM, --duration, --until-answered) and every call and request
succeeded; 1 it failed, was killed, never answered initialize, could not be
reached or ended the session; 2 bad usage, a terminal as the channel, or a command
that cannot start; {EXIT_CALL_FAILED} it ended as asked, but a call or request failed. A
second SIGINT/SIGTERM skips the grace.

examples:
  diverge-codec relay -- python examples/mcp_relay/server.py > channel.bin
      (a stdio server, until it exits or Ctrl-C)
  diverge-codec relay --call 'emit_all={{}}' --until-answered -- python server.py \\
      | diverge-codec inspect --channel mcp-notifications -
  diverge-codec relay --url http://127.0.0.1:8000/mcp --request 'tools/list={{}}' \\
      --answers - --until-answered --out channel.bin
  diverge-codec relay --url https://example.com/mcp \\
      --header 'Authorization: Bearer ...' --duration 60 --out channel.bin
"""


def register(commands: Any) -> None:
    relay = commands.add_parser(
        "relay", help="relay an MCP server's notifications as an mcp-notifications channel",
        description="Start COMMAND as a stdio MCP server (or reach one at --url over Streamable HTTP), do\n"
                    "the MCP handshake, relay every notification it writes as the mcp-notifications\n"
                    "channel (stream records), and print a JSON report on stderr.",
        usage="diverge-codec relay [options] -- COMMAND [ARG...]\n       diverge-codec relay [options] --url URL "
              "[--header 'NAME: VALUE' ...]",
        epilog=EPILOG)
    relay.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARG...]",
                       help="the server to start, after '--'")
    relay.add_argument("--url", metavar="URL",
                       help="relay the MCP server at this http(s) URL over Streamable HTTP instead of a command "
                            "(needs the [http] extra)")
    relay.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                       help="send this header with every request to --url (repeatable); ${NAME} in VALUE is taken "
                            "from the environment, so a secret stays out of ps: 'Authorization: Bearer ${MCP_TOKEN}'")
    relay.add_argument("--transport", choices=("auto", "streamable-http", "sse"), default="auto",
                       help="--url: the transport; auto (the default) tries Streamable HTTP and falls back to the "
                            "older HTTP+SSE (MCP 2024-11-05) where the server answers 400, 404 or 405")
    relay.add_argument("--token-command", metavar="'CMD'",
                       help="--url: a shell command whose output is a bearer token ('Bearer TOKEN' too), run at "
                            "start and again when the server answers 401: at once for a token that served, else at "
                            "most every 10 s; ended with all it started after 30 s or at the relay's end (the token "
                            "never appears in ps, the report, an error or a log line)")
    relay.add_argument("--cacert", metavar="FILE", help="--url https: verify the server against this CA bundle (PEM)")
    relay.add_argument("--cert", metavar="FILE", help="--url https: present this client certificate (PEM; mTLS)")
    relay.add_argument("--key", metavar="FILE", help="--url https: the client certificate's private key (PEM), if not in --cert")
    relay.add_argument("--out", metavar="FILE", help="write the channel here instead of stdout")
    relay.add_argument("--config", metavar="FILE",
                       help="relay every server of this mcpServers JSON (Claude Desktop, Cursor, VS Code) in one "
                            "process, each channel to --out-dir DIR/KEY.bin; a summary line per server on stderr")
    relay.add_argument("--out-dir", metavar="DIR", help="--config: the folder of the channels, one file per server")
    relay.add_argument("--server", action="append", default=[], metavar="NAME",
                       help="--config: relay only this server of the config (repeatable)")
    relay.add_argument("--call", action="append", default=[], metavar="NAME=JSON",
                       help="call tool NAME with these arguments after the handshake (repeatable)")
    relay.add_argument("--request", action="append", default=[], metavar="METHOD=JSON",
                       help="send this request after the handshake, before the calls (repeatable), "
                            "e.g. tools/list='{}' (a method the server's revision has: MCP 2026-07-28 has no "
                            "logging/setLevel, ping or resources/subscribe)")
    relay.add_argument("--until-answered", action="store_true", help="shut the server down once every call and request is answered")
    relay.add_argument("--duration", type=_positive(float), metavar="SECONDS", help="shut the server down after this long")
    relay.add_argument("--grace", type=_positive(float), default=DEFAULT_GRACE, metavar="SECONDS",
                       help="wait this long after closing the server's stdin, again after SIGTERM, and for its "
                            "output to end once it exited (default %(default)s)")
    relay.add_argument("--request-timeout", type=_positive(float), default=DEFAULT_REQUEST_TIMEOUT, metavar="SECONDS",
                       help="cancel a request unanswered this long and count it failed; initialize unanswered "
                            "this long fails the handshake (default %(default)s)")
    relay.add_argument("--reconnect-window", type=_positive(float), default=DEFAULT_RECONNECT_WINDOW, metavar="SECONDS",
                       help="--url: how long a server that was reached may stay unreachable, tried again with backoff, "
                            "before the relay ends (exit 1, 'connection lost'); a session the server lost is made "
                            "again within it (default %(default)s)")
    relay.add_argument("--stream-timeout", type=_positive(float), default=DEFAULT_STREAM_TIMEOUT, metavar="SECONDS",
                       help="--url: the server's stream of its own messages silent this long (not a byte) is opened "
                            "again from its last event: a flow a NAT or proxy dropped is noticed (default %(default)s, "
                            "the MCP Python SDK's read timeout)")
    relay.add_argument("--protocol-version", default=PROTOCOL_VERSION, choices=SUPPORTED_VERSIONS, metavar="REVISION",
                       help="the MCP revision offered: one of %(choices)s (default %(default)s)")
    relay.add_argument("--protocol", default="auto", choices=PROTOCOLS, metavar="auto|REVISION",
                       help="the MCP era: auto (default) probes with server/discover and falls back to initialize "
                            f"(no answer within {DISCOVER_TIMEOUT:g} s, or any answer that is not modern); a revision "
                            "forces it: one of %(choices)s (over --url, a modern POST first, then the 2025 handshake)")
    relay.add_argument("--server-log-level", choices=SERVER_LOG_LEVELS, metavar="LEVEL",
                       help="the server's log messages from this level up: asked on each request on the 2026-07-28 "
                            "era (debug unless given), sent as logging/setLevel first on the 2025 era (only when given)")
    relay.add_argument("--max-line", type=_positive(int), default=DEFAULT_MAX_LINE, metavar="BYTES",
                       help="longest server line relayed; a channel record is at most one byte more, the tag "
                            "(default %(default)s: records within the stream's default 16 MiB limit)")
    relay.add_argument("--outbox-bytes", type=_positive(int), default=DEFAULT_OUTBOX_BYTES, metavar="BYTES",
                       help="notifications queued for a slow consumer before dropping (default %(default)s)")
    relay.add_argument("--quiet-server", action="store_true", help="discard the server's stderr")
    _register_person_options(relay)
    relay.set_defaults(run=cmd_relay)


def _register_person_options(relay: argparse.ArgumentParser) -> None:
    """The options about what a person sees (``_watch``): answers, the report's place, a terminal as the channel."""
    relay.add_argument("--answers", metavar="FILE|-",
                       help="write each answer to --request and --call, as a JSON line {\"request\": ..., \"answer\": ...}, "
                            "to FILE (made private) or - for stderr; they can hold values, so none is shown without it")
    relay.add_argument("--report", metavar="FILE", help="write the JSON report to FILE instead of last on stderr")
    relay.add_argument("--log-level", choices=tuple(LOG_LEVELS), default=DEFAULT_LOG_LEVEL,
                       help="what is said on stderr while it runs: info (the default, on a terminal or not) a line for "
                            "each thing an operator must know as it happens (a session started again, the server "
                            "unreachable, a token refused); debug adds each HTTP exchange and each stdio lifecycle step "
                            "(never a header value, token, cookie, body or query); quiet keeps stderr to the report")
    relay.add_argument("--force-tty", action="store_true",
                       help="write the channel (binary records) to standard output even where it is a terminal")

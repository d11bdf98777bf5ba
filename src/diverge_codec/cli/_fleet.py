"""``relay --config FILE --out-dir DIR``: every server of an ``mcpServers`` config in one process, on one event loop.

The config is the JSON Claude Desktop, Cursor and VS Code write: ``{"mcpServers": {KEY: SERVER, ...}}`` (VS Code's
``"servers"`` too). A stdio server has ``command``, ``args``, ``env`` (over this process's environment) and
``cwd``; a remote one ``url``, ``headers`` and a ``type`` (``http`` or ``streamable-http``, ``sse``; none: the
relay's ``auto``). ``${NAME}`` in an ``env`` or ``headers`` value is taken from the environment, as ``--header``
has it. A member the relay does not know is refused by its name, and so is a key that is no safe file name: each
server's channel goes to ``DIR/KEY.bin``.

Each server is one ``Relay`` of the API with its own outbox and channel, so one that fails or floods delays none
of the others. The report is one JSON object with a section per server; stderr has a summary line per server.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._safe import UsageError

if TYPE_CHECKING:
    from ..relay import Command, RelayOptions, Remote

SAFE_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
"""A server's key as a file name: letters, digits, ``_``, ``.``, ``-``, not first a dot or dash, at most 100."""

STDIO_MEMBERS = frozenset({"command", "args", "env", "cwd", "type"})
REMOTE_MEMBERS = frozenset({"url", "headers", "type"})
TYPES = {"stdio": None, "http": "streamable-http", "streamable-http": "streamable-http", "streamableHttp": "streamable-http",
         "sse": "sse"}
"""A config's ``type`` to the relay's transport (None: a stdio server)."""


def load_config(path: str, only: Sequence[str] = ()) -> dict[str, Command | Remote]:
    """The servers of the config at ``path`` (only those named in ``only``, if any), checked: UsageError naming
    the key and member that cannot be used, never a value."""
    try:
        with open(path, "rb") as file:
            document = json.loads(file.read())
    except OSError:
        raise UsageError("--config: the file cannot be read") from None
    except ValueError:
        raise UsageError("--config: not JSON") from None
    if not isinstance(document, dict):
        raise UsageError("--config: not a JSON object")
    if ("mcpServers" in document) == ("servers" in document):
        raise UsageError("--config: needs an \"mcpServers\" object (or VS Code's \"servers\"), one of them")
    entries = document.get("mcpServers", document.get("servers"))
    if not isinstance(entries, dict) or not entries:
        raise UsageError("--config: its servers are no object with at least one server")
    for name in only:
        if name not in entries:
            raise UsageError(f"--server {_shown(name)}: no such server in --config")
    return {key: _server(key, entry) for key, entry in entries.items() if not only or key in only}


def _shown(key: str) -> str:
    return json.dumps(key[:100])


def _server(key: str, entry: Any) -> Command | Remote:
    from ..relay import Command, CredentialError, Remote, check_url

    where = f"--config: server {_shown(key)}"
    if not SAFE_KEY.fullmatch(key):
        raise UsageError(f"{where}: its key is no safe file name (letters, digits, '_', '.', '-'; at most 100)")
    if not isinstance(entry, dict):
        raise UsageError(f"{where}: not an object")
    kind: str | None = entry.get("type")
    if kind is not None and kind not in TYPES:
        raise UsageError(f"{where}: type must be one of {', '.join(TYPES)}")
    transport = TYPES.get(kind) if kind is not None else None
    remote = transport is not None or (kind is None and "url" in entry)
    unknown = sorted(set(entry) - (REMOTE_MEMBERS if remote else STDIO_MEMBERS))
    if unknown:
        raise UsageError(f"{where}: unknown member {_shown(unknown[0])}" + (" (a remote server)" if remote else ""))
    try:
        if remote:
            url = check_url(_string(entry.get("url"), "url"))
            headers = [(name, _expand(name, value, "headers")) for name, value in _strings(entry.get("headers"), "headers")]
            return Remote(url, headers, transport or "auto")
        command = [_string(entry.get("command"), "command"), *_list(entry.get("args"), "args")]
        env = {name: _expand(name, value, "env") for name, value in _strings(entry.get("env"), "env")}
        cwd = _string(entry["cwd"], "cwd") if "cwd" in entry else None
        return Command(command, {**os.environ, **env} if env else None, cwd)  # None: inherited, no copy to encode
    except (ValueError, CredentialError) as error:
        raise UsageError(f"{where}: {error}") from None


def _expand(name: str, value: str, member: str) -> str:
    """``${NAME}`` in a value taken from the environment, as ``--header`` has it; its refusal names the member."""
    from ..relay import CredentialError, expand_header

    try:
        return expand_header(name, value)
    except CredentialError as error:
        words = str(error).replace("--header ", f"{member} ", 1)
    raise ValueError(words)


def _string(value: Any, member: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{member} must be a string, not empty")
    return value


def _list(value: Any, member: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{member} must be a list of strings")
    return value


def _strings(value: Any, member: str) -> list[tuple[str, str]]:
    if value is None:
        return []
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise ValueError(f"{member} must be an object of strings")
    return list(value.items())


async def run_fleet(servers: Mapping[str, Command | Remote], out_dir: str, options: RelayOptions,
                    say: Any) -> tuple[dict[str, Any], int]:
    """Every server relayed at once, each onto ``out_dir/KEY.bin``: the report (a section per server) and the
    exit status (the worst of theirs). ``say`` gets one summary line per server as it ends."""
    import asyncio
    import signal

    from ..relay import Command, Relay, end_adopted, exit_status, open_writer
    from ._safe import create_private

    relays: dict[str, Relay[Any]] = {}  # each writes a channel: nothing iterated
    for key, server in servers.items():
        fd = create_private(os.path.join(out_dir, f"{key}.bin"))
        relays[key] = Relay(server, options, channel=await open_writer(fd))
    loop = asyncio.get_running_loop()

    def stop(reason: str) -> None:
        for relay in relays.values():
            if relay.running:
                relay.shutdown(reason)

    handled = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop, f"signal {signal.Signals(signum).name}")
            handled.append(signum)
        except NotImplementedError:
            pass

    async def one(key: str, relay: Relay[Any]) -> tuple[dict[str, Any], int]:
        section: dict[str, Any]
        try:
            async with relay:
                report = await relay.wait()
        except Exception as error:  # noqa: BLE001  # one server that cannot start fails alone
            section, status = {"error": f"{type(error).__name__}: {error}"[:200]}, 2
        else:
            section, status = report.as_dict(), exit_status(report)
        section["exit_status"] = status
        say(_summary(key, section))
        return section, status

    try:
        done = await asyncio.gather(*(one(key, relay) for key, relay in relays.items()))
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
        adopted = await end_adopted() if any(isinstance(server, Command) for server in servers.values()) else 0
    sections = dict(zip(relays, (section for section, _ in done)))
    status = max(status for _, status in done)
    return {"servers": sections, "leftovers": adopted, "exit_status": status}, status


def cmd_fleet(args: Any, options: RelayOptions) -> int:
    """``relay --config``: the servers checked (exit 2 before any starts), run, summed up; the report last on stderr
    (or in ``--report``)."""
    import asyncio
    import sys

    from .. import relay as api
    from ._safe import create_private

    servers = load_config(args.config, args.server)
    if not os.path.isdir(args.out_dir):
        raise UsageError("--out-dir: not a folder")
    report_file = os.fdopen(create_private(args.report), "w") if args.report else None
    if any(isinstance(server, api.Command) for server in servers.values()):
        api.become_subreaper()

    def say(line: str) -> None:
        print(f"diverge-codec: {line}", file=sys.stderr, flush=True)

    report, status = asyncio.run(run_fleet(servers, args.out_dir, options, say))
    line = json.dumps(report, separators=(",", ":"))
    if report_file is not None:
        with report_file:
            report_file.write(line + "\n")
    else:
        print(line, file=sys.stderr, flush=True)
    return status


def _summary(key: str, section: Mapping[str, Any]) -> str:
    """One line for a server: what it relayed and dropped, how it ended, its status."""
    if "error" in section:
        return f"{key}: could not run ({section['error']}), exit {section['exit_status']}"
    server = section.get("server", {})
    ended = server.get("shutdown") or server.get("ended_by") or "ended"
    return (f"{key}: {section['seen']} seen, {section['relayed']} relayed, {sum(section['dropped'].values())} dropped; "
            f"{ended}, exit {section['exit_status']}")

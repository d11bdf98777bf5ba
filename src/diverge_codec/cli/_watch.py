"""What ``relay`` tells the person running it, beside the channel: failures in words, answers on request, a status line.

The relay's JSON report is for programs; a person needs one line for each call that failed
(its name, the JSON-RPC error code and the server's message, or that the tool answered
``isError``, or that it timed out), one line with a hint when the server could not be
reached, and, while a relay with no end condition runs on a terminal, what it has done so
far and how to stop it. Argument values and result content are never printed, unless the
user asks for the answers (``--answers FILE|-``). The report stays last on stderr, or goes
to ``--report FILE``. Hooked into the relay through ``RelaySession.on_answer``.

``--log-level`` (``LOG_LEVELS``): ``info``, the default, also writes each line the relay logs to the
``diverge_codec.relay`` logger as it happens (a session started again, a server unreachable, a token refused:
``docs/relay.md``), whether or not stderr is a terminal: such lines are few, and the report stays last;
``debug`` adds each HTTP exchange and each stdio lifecycle step, with the time (UTC); ``quiet`` keeps stderr
to the report (no status line, no failure line, no hint, no log line).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from typing import IO, TYPE_CHECKING, Any

from ..relay import PROTOCOLS
from ._safe import UsageError, create_private, escape, json_line

if TYPE_CHECKING:
    import asyncio

EXIT_CALL_FAILED = 3
"""The relay ended as asked, but a call or request the user made failed (an error, ``isError``, or no answer)."""
STATUS_EVERY_S = 1.0
MESSAGE_CHARS = 200
"""The longest server error message quoted in a failure line; the rest is cut, saying so."""

LOG_LEVELS = {"quiet": None, "info": logging.INFO, "debug": logging.DEBUG}
"""``--log-level``'s choices: what the ``diverge_codec.relay`` logger writes on stderr (quiet: nothing but the report)."""
DEFAULT_LOG_LEVEL = "info"

JSONRPC_CODES = {-32700: "parse error", -32600: "invalid request", -32601: "method not found", -32602: "invalid params",
                 -32603: "internal error", -32002: "resource not found"}


def _open(path: str) -> IO[str]:
    """``-`` is stderr; anything else a new private file (it may hold what the server answered)."""
    if path == "-":
        return sys.stderr
    return open(create_private(path), "w", encoding="ascii", buffering=1, closefd=True)


def failure_line(label: str, answer: dict[str, Any] | None, timeout: float | None = None) -> str | None:
    """One line about a failed request, or None if it did not fail. Never an argument or a result's content."""
    name = escape(label) or "a request"
    if answer is None:
        within = f" within {timeout:g} s" if timeout is not None else ""
        return f"{name}: no answer{within}: timed out (cancelled; --request-timeout sets the wait)"
    error = answer.get("error")
    if error is not None:
        if not isinstance(error, dict):
            return f"{name} failed: the server answered with a malformed error"
        code = error.get("code")
        known = JSONRPC_CODES.get(code) if isinstance(code, int) and not isinstance(code, bool) else None
        code_text = f"{code}" if isinstance(code, int) and not isinstance(code, bool) else "(no code)"
        message = error.get("message")
        text = escape(message) if isinstance(message, str) else "(no message)"
        if len(text) > MESSAGE_CHARS:
            text = text[:MESSAGE_CHARS] + f"... ({len(text) - MESSAGE_CHARS} more)"
        return f"{name} failed: JSON-RPC error {code_text}{f' ({known})' if known else ''}: {text}"
    result = answer.get("result")
    if isinstance(result, dict) and result.get("resultType") == "input_required":
        return f"{name} failed: the server asked for input (input_required); the relay has none to give"
    if label.startswith("tools/call ") and isinstance(result, dict) and result.get("isError") is True:
        return f"{name} failed: the tool answered isError (its content is not shown: --answers FILE shows it)"
    return None


# Patterns, not compiled ones: ``re`` compiles each the first time a server is not reached and keeps it,
# so a relay's start-up compiles none (issue 44: start-up unchanged).
HINTS = (
    (r"\b40[13]\b", 0, "the server refused the request: check the authorization (--header 'Authorization: "
                       "Bearer ${MCP_TOKEN}', or --token-command 'CMD')"),
    (r"\b(?:40[45]|501)\b", 0, "nothing answers MCP at that path, over Streamable HTTP or the older HTTP+SSE: "
                               "check the URL's path (often /mcp, or /sse for the older transport)"),
    (r"WRONG_VERSION_NUMBER|wrong version number|record layer failure|http request", re.I,
     "TLS failed at its first bytes: the server may speak plain HTTP: try http:// instead of https://"),
    (r"\bthe proxy\b", re.I, "the proxy failed, not the server: check http_proxy, https_proxy and no_proxy "
                             "(and the credentials in them)"),
    (r"--cacert|use an https?:// URL|certificate is not for|certificate expired", re.I, None),  # says its fix
    (r"refused", re.I, "nothing is listening at that host and port: is the server running, on that port?"),
    (r"name resolution|name or service|nodename", re.I, "the host name could not be resolved: check the URL's host"),
    (r"CERTIFICATE|TLS|SSL", re.I, "TLS failed: check the certificate, or whether the server speaks https"),
    (r"\b5\d\d\b", 0, "the server failed to answer initialize: its log says why"),
    (r"timed out|timeout", re.I, "no answer in time: is the host reachable from here?"),
)


def unreachable_line(report: dict[str, Any]) -> str | None:
    """One line for a server that was never reached, or never completed the handshake: what happened and a hint."""
    server = report.get("server") or {}
    shutdown = str(server.get("shutdown") or "")
    if str(server.get("error") or "").startswith("--token-command"):  # the relay's own credential: said as it
        return None                                                       # happened (the log), never "could not reach"
    if server.get("transport") is not None and not server.get("started", False):  # a remote server
        why = str(server.get("error") or "no answer")
        statuses = " ".join(str(code) for code in (server.get("statuses") or {}))
        hint = next((text for pattern, flags, text in HINTS if re.search(pattern, f"{why} {statuses}", flags)), None)
        return f"could not reach the server ({escape(why)})" + (f": {hint}" if hint else "")
    if not server.get("started", True):
        why = escape(str(server.get("error") or "unknown"))
        return f"the command could not start ({why}): check its name, the PATH and its permissions"
    offered = server.get("versions_offered")
    if shutdown == "handshake failed" and isinstance(offered, list):
        named = ", ".join(escape(str(version)) for version in offered) or "none"
        speaks = ", ".join(PROTOCOLS[1:])
        return f"the server shares no MCP revision with the relay: it offered {named}; the relay speaks {speaks}"
    if report.get("unreachable") and server.get("transport") is not None:  # reached, and the handshake broke off
        return f"the server did not complete the MCP handshake ({escape(str(server.get('error') or 'no answer'))})"
    if report.get("unreachable"):
        code, signal = server.get("exit_status"), server.get("signal")
        how = f" (it exited with {code})" if code is not None else f" (ended by {escape(str(signal))})" if signal else ""
        return f"the server ended before answering initialize{how}: is the command an MCP server that speaks stdio?"
    if shutdown == "initialize timed out":
        return "the server did not answer initialize in time (--request-timeout): is it an MCP server?"
    if shutdown == "handshake failed":
        return ("the MCP handshake failed: the server refused initialize or answered a revision the relay does not "
                "speak (--protocol-version)")
    return None


class Watch:
    """One relay run's person-facing side: set up before the run (its files refused early), attached, finished."""

    def __init__(self, answers: str | None = None, report: str | None = None, request_timeout: float | None = None,
                 err: IO[str] | None = None, log_level: str = DEFAULT_LOG_LEVEL) -> None:
        self.err = err if err is not None else sys.stderr
        self.quiet = LOG_LEVELS[log_level] is None
        self._log_level = LOG_LEVELS[log_level]
        self._handler: logging.Handler | None = None
        self.request_timeout = request_timeout
        self.answers = _open(answers) if answers is not None else None
        self.report = _open(report) if report is not None else None
        self.failed = 0
        self._status: asyncio.Task[None] | None = None
        self._drawn = False

    def attach(self, relay: Any) -> None:
        """Hook the relay's answers (an ``api.Relay``); a status line on a terminal's stderr (call in the running loop)."""
        relay.on_answer = lambda answer: self.on_answer(*answer)
        if self._log_level is not None:
            self._handler = _LineHandler(self)
            logger = logging.getLogger("diverge_codec.relay")
            logger.addHandler(self._handler)
            logger.setLevel(self._log_level)
        if _is_terminal(self.err) and not self.quiet:
            import asyncio  # here: the relay's driver loads asyncio first, without ssl for a stdio server

            self._status = asyncio.get_running_loop().create_task(self._draw_every(relay))

    def detach(self) -> None:
        if self._handler is not None:
            logger = logging.getLogger("diverge_codec.relay")
            logger.removeHandler(self._handler)
            logger.setLevel(logging.NOTSET)
            self._handler = None
        if self._status is not None:
            self._status.cancel()
            self._status = None
        self._clear()

    def on_answer(self, label: str, answer: dict[str, Any] | None) -> None:
        if self.answers is not None:
            self._write(self.answers, json_line({"request": label, "answer": answer}))
        line = failure_line(label, answer, self.request_timeout)
        if line is not None:
            self.failed += 1
            self.say(line)

    def say(self, text: str) -> None:
        if not self.quiet:
            self._write(self.err, f"diverge-codec: {text}")

    def finish(self, report: dict[str, Any], status: int) -> int:
        """The hint, then the report (last on stderr, or its file): the exit status, 3 where a call failed."""
        line = unreachable_line(report)
        if line is not None:
            self.say(line)
        calls = report.get("calls") or {}
        if status == 0 and calls.get("failed", 0):
            status = EXIT_CALL_FAILED
        report["exit_status"] = status
        self._write(self.report if self.report is not None else self.err, json_line(report))
        for file in (self.answers, self.report):
            if file is not None and file is not sys.stderr:
                file.close()
        return status

    def _write(self, file: IO[str], line: str) -> None:
        if file is self.err:
            self._clear()
        try:
            file.write(line + "\n")
            file.flush()
        except (OSError, ValueError):
            pass

    async def _draw_every(self, relay: Any) -> None:
        import asyncio

        while True:
            self._draw(relay)
            await asyncio.sleep(STATUS_EVERY_S)

    def _draw(self, relay: Any) -> None:
        report, dropped = relay.report, relay.dropped
        try:
            self.err.write(f"\r\x1b[Krelaying: {report.seen} seen, {report.relayed} relayed, {dropped} dropped"
                           " (Ctrl-C stops it)")
            self.err.flush()
            self._drawn = True
        except (OSError, ValueError):
            pass

    def _clear(self) -> None:
        if self._drawn:
            self._drawn = False
            try:
                self.err.write("\r\x1b[K")
            except (OSError, ValueError):
                pass


class _LineHandler(logging.Handler):
    """The relay's log lines on the watch's stderr, the status line cleared first: ``diverge-codec: MESSAGE``
    (at debug, ``diverge-codec: HH:MM:SS.mmm LEVEL MESSAGE``, UTC). Control characters are escaped."""

    def __init__(self, watch: Watch) -> None:
        super().__init__()
        self.watch = watch

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = escape(record.getMessage())
        except Exception:  # noqa: BLE001 - a malformed call: its format string alone, never a traceback
            text = escape(str(record.msg))
        if self.watch._log_level == logging.DEBUG:
            stamp = time.strftime("%H:%M:%S", time.gmtime(record.created))
            text = f"{stamp}.{int(record.msecs):03d} {record.levelname.lower()} {text}"
        self.watch._write(self.watch.err, f"diverge-codec: {text}")


def _is_terminal(file: IO[str]) -> bool:
    try:
        return file.isatty()
    except (OSError, ValueError, AttributeError):
        return False


def refuse_terminal(out: str | None, force: bool) -> None:
    """The channel is binary records: not onto a terminal unless forced (exit 2 before anything starts)."""
    if force or out not in (None, "-"):
        return
    try:
        terminal = os.isatty(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return
    if terminal:
        raise UsageError("the channel is binary stream records, not for a terminal: write it with --out FILE, or pipe it "
                         "into | diverge-codec inspect --channel mcp-notifications - (--force-tty writes it here anyway)")

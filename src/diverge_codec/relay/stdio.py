"""The asyncio relay: run a stdio MCP server, relay its notifications onto a mcp-notifications channel.

::

    report = await relay(["npx", "my-mcp-server"], writer, RelayOptions(calls=[("echo", {"x": 1})]))

``writer`` is a ``channel.ChannelWriter``. The session (handshake, calls, which line is
what, the report) is ``session.RelaySession``, fed by ``channel.ChannelRelay``; this module
only moves bytes and runs the process.

- **Many servers, one loop.** Each server's output is read by its own pipe protocol, a
  chunk (asyncio's 256 KiB at most, or ``RelayOptions.read_bytes``) per turn of the event
  loop, framed and handed to its channel's writer in that callback; while a writer has
  not drained, its payloads wait in the channel's own outbox, bounded in bytes. A
  flooding server gets one chunk per turn like any other and drops what its own consumer
  cannot take: it never holds the others' notifications back. ``asyncio.gather`` many ``relay`` calls.
- **Never blocks the server, and bounded whatever it does.** The relay reads all the
  server writes; what the channel cannot take now is dropped by the outbox and counted
  (``backpressure``). While the server does not read its stdin (its buffer in the relay
  over ``SERVER_STDIN_BYTES``), its requests go unanswered and counted
  (``requests_unanswered``) instead of piling up. Memory per channel: the outbox
  (``outbox_bytes`` plus one larger payload), the writer's buffer, one partial line
  (``max_line`` at most), the server's stdin buffer (``SERVER_STDIN_BYTES`` plus the
  answers to one chunk, ``session.ANSWER_BYTES_A_READ`` at most).
- **Shutdown, as MCP's stdio transport describes it.** On ``ServerRelay.shutdown`` (a
  signal, ``duration``, ``until_answered``, the channel's reader gone, even while the
  server is quiet), or when the server's output ends or the server exits: close its
  stdin, wait ``grace`` seconds, SIGTERM, wait ``grace``, SIGKILL. The server runs in its
  own process group, and the group is signalled, so a wrapper (``npx``, a shell) takes
  its children with it. Once the server has exited, whatever still holds its output gets
  ``grace`` seconds, then the group and every process the server started are killed
  (``leftovers``: on Linux, found by a mark in their environment, so a daemon that left
  the group is ended too). A second ``shutdown`` skips the waiting. Every wait is bounded:
  the relay always ends.
- **Requests time out.** A request the server leaves unanswered for ``request_timeout``
  seconds is cancelled and counted failed (``session``), so ``until_answered`` ends.
- **POSIX only.** Process groups and signals are what the relay ends a server with; on
  Windows ``ServerRelay`` refuses to start (``RelayUnsupported``). The codec itself runs
  everywhere.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Sequence

from . import leftovers as _leftovers
from .channel import ChannelRelay, ChannelWriter, RelayOptions, _first, _widen_output
from .session import RelayReport

__all__ = ["RelayUnsupported", "ServerRelay", "relay"]

_log = logging.getLogger("diverge_codec.relay")  # DEBUG: each lifecycle step, naming the program, never an argument

OUTPUT_AFTER_KILL = 5.0
"""Seconds to wait for the server's output to end once its whole group is killed."""

SERVER_STDIN_BYTES = 256 * 1024
"""What the relay buffers for a server's stdin before it stops answering the server's requests."""


class RelayUnsupported(OSError):
    """The relay cannot run servers on this platform (Windows): it ends them with POSIX process groups."""


class _ServerPipes(asyncio.SubprocessProtocol):
    """The server's stdout, framed as it arrives; its end and its exit as futures."""

    def __init__(self, owner: ServerRelay) -> None:
        loop = asyncio.get_running_loop()
        self.owner = owner
        self.output_ended: asyncio.Future[None] = loop.create_future()
        self.exited: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        if fd == 1:
            self.owner._output(bytes(data))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.output_ended.done():
            self.output_ended.set_result(None)

    def pause_writing(self) -> None:  # the server's stdin is over SERVER_STDIN_BYTES: it is not reading
        self.owner.session.server_reading = False

    def resume_writing(self) -> None:
        self.owner.session.server_reading = True

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


class ServerRelay(ChannelRelay):
    """One stdio server relayed onto one channel. ``await run()`` once; ``shutdown()`` from anywhere in the loop.

    ``shutdown`` closes the server's stdin, waits ``grace``, then SIGTERM, ``grace``, SIGKILL.
    The era is found by the session (``server/discover`` first, ``RelayOptions.protocol``).
    """

    ERAS = True

    def __init__(self, command: Sequence[str], writer: ChannelWriter, options: RelayOptions = RelayOptions()) -> None:
        if not command:
            raise ValueError("the server command is empty")
        if options.read_bytes is not None and (type(options.read_bytes) is not int or options.read_bytes < 1):
            raise ValueError("read_bytes must be a positive int, or None")
        if sys.platform == "win32":
            raise RelayUnsupported("the relay runs MCP servers on POSIX systems only (Linux, macOS); the codec runs everywhere")
        super().__init__(writer, options)
        self.command: list[str] = list(command)
        self.token: str = os.urandom(8).hex()  # not secrets.token_hex: the secrets module costs start-up
        """The mark in the server's environment (``_leftovers.MARK``) by which what it starts is found at the end."""
        self._transport: asyncio.SubprocessTransport | None = None
        self._leftovers: set[int] = set()  # the server's processes found alive once it had exited
        self._group: _leftovers.Group | None = None  # the server's process group, held while its number is its own

    async def run(self) -> RelayReport:
        """Relay until the server's output ends and the server is gone: the report."""
        loop = asyncio.get_running_loop()
        env = dict(os.environ if self.options.env is None else self.options.env)
        env[_leftovers.MARK] = self.token
        try:
            transport, pipes = await loop.subprocess_exec(
                lambda: _ServerPipes(self), *self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=self.options.server_stderr, env=env, cwd=self.options.cwd, start_new_session=True)
        except OSError as error:  # no such command, not executable: nothing can be reached
            self.report.server = {"started": False, "error": error.strerror or type(error).__name__}
            self.session.end_of_output()  # the one Error frame
            await self._close_channel(asyncio.create_task(self._pump()))
            self.session.finish_report()
            return self.report
        self._transport = transport
        pid = transport.get_pid()
        _log.debug("server started: %s (pid %d, its own process group)", _program(self.command), pid)
        _leftovers.started(pid)
        group = self._group = _leftovers.Group(pid)  # now: one the child watcher reaped already is not trusted
        output = transport.get_pipe_transport(1)
        if output is not None:
            _widen_output(output, self.options.read_bytes)
        stdin = transport.get_pipe_transport(0)
        if isinstance(stdin, asyncio.WriteTransport):  # pause_writing past the limit: see _ServerProtocol
            stdin.set_write_buffer_limits(high=SERVER_STDIN_BYTES)
        self.report.server = {"started": True, "pid": pid}
        self._send(self.session.start())
        self._arm_expiry()
        pump = asyncio.create_task(self._pump())
        watch = self._watch_channel()
        timer = loop.call_later(self.options.duration, self.shutdown, "duration") if self.options.duration else None
        try:
            await _first(pipes.output_ended, pipes.exited, self._stop.wait())
            await self._end_process(transport, pipes)
            self.session.end_of_output()
            await self._close_channel(pump)
        except BaseException:  # cancelled or failed: what the server left is ended now, not at the loop's next scan
            self._leftovers.update(_leftovers.end_leftovers(group, self.token))
            group.close()
            raise
        finally:
            for handle in (timer, self._expiry):
                if handle is not None:
                    handle.cancel()
            for task in (pump, watch):
                if task is not None and not task.done():
                    task.cancel()
            _leftovers.stopped(pid)
            transport.close()
        try:
            leftovers = await _leftovers.ended(group, self.token)  # one scan with the servers ending at the same time
        finally:
            group.close()
        self._leftovers.update(leftovers)
        self.report.server["leftovers"] = len(self._leftovers)
        await _leftovers.reap(leftovers)
        _log.debug("server reaped (pid %d; %d of its processes were left and ended)", pid, len(self._leftovers))
        self.session.finish_report()
        return self.report

    def _output(self, data: bytes) -> None:
        self._received(self.session.receive(data))

    def _send(self, data: bytes) -> None:
        assert self._transport is not None
        stdin = self._transport.get_pipe_transport(0)
        if data and stdin is not None and not stdin.is_closing():
            stdin.write(data)  # type: ignore[attr-defined]

    async def _end_process(self, transport: asyncio.SubprocessTransport, pipes: _ServerPipes) -> None:
        """Close stdin, wait, SIGTERM, wait, SIGKILL: the steps MCP's stdio transport names."""
        grace = self.options.grace
        server = self.report.server
        if self._reason is None:  # the output ended or the server exited: one that is leaving gets its grace first
            await self._wait_exit(pipes, grace)
        if pipes.exited.done():
            server["ended_by"] = "itself"
        else:
            server["ended_by"] = "stdin closed"
            stdin = transport.get_pipe_transport(0)
            if stdin is not None:
                stdin.close()
            _log.debug("server's stdin closed (%s); waiting %g s for it to exit", self._reason or "its output ended", grace)
            for step, signum in (("SIGTERM", signal.SIGTERM), ("SIGKILL", signal.SIGKILL)):
                if await self._wait_exit(pipes, grace):
                    break
                server["ended_by"] = step
                _log.debug("%s sent to the server's process group (pid %d)", step, transport.get_pid())
                assert self._group is not None
                self._group.signal(signum)
            await pipes.exited
        _log.debug("server exited (pid %d, status %s)", transport.get_pid(), transport.get_returncode())
        # The leader is gone; one of its children may still hold the output open.
        if not await self._wait_exit(pipes, grace, pipes.output_ended):
            assert self._group is not None
            killed = await _leftovers.ended(self._group, self.token)  # its EOF follows
            self._leftovers.update(killed)
            await _first(pipes.output_ended, asyncio.sleep(min(grace, OUTPUT_AFTER_KILL)))
            await _leftovers.reap(killed)
        server["shutdown"] = self._reason
        code = transport.get_returncode()
        server["exit_status"] = code if code is None or code >= 0 else None
        server["signal"] = signal.Signals(-code).name if code is not None and code < 0 else None

    async def _wait_exit(self, pipes: _ServerPipes, grace: float, what: asyncio.Future[None] | None = None) -> bool:
        awaited = pipes.exited if what is None else what
        if not awaited.done() and not self._hurry.is_set():
            await _first(awaited, asyncio.sleep(grace), self._hurry.wait())
        return awaited.done()


async def relay(command: Sequence[str], writer: ChannelWriter, options: RelayOptions = RelayOptions()) -> RelayReport:
    """Relay one server's notifications onto ``writer`` until it ends: the report."""
    return await ServerRelay(command, writer, options).run()


def _program(command: Sequence[str]) -> str:
    """The program's file name alone (its arguments may hold a secret), cut to 64 characters."""
    name = os.path.basename(command[0]) if command else ""
    return name[:64] + ("..." if len(name) > 64 else "")


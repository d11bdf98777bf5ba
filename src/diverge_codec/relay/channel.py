"""What every transport's driver shares: the channel's writers, the options, one session's pump and clock.

``writer`` is where the channel goes, as records of ``diverge_codec.stream`` (the 4-byte
length envelope): an ``asyncio.StreamWriter`` (a socket), a ``PipeWriter`` (a pipe or a
terminal: see ``open_writer``) or a ``FileWriter``; anything with ``write``, ``drain``,
``close`` and ``wait_closed``. Closing it is the channel's finish. ``ChannelRelay`` feeds it
from one ``session.RelaySession``'s outbox; a transport driver (``stdio.ServerRelay``,
``streamable_http.HttpRelay``) subclasses it and only moves the server's bytes.
``exit_status(report)`` is the CLI's exit status for a report.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import stat
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from .. import mcp_notifications
from .session import (
    DEFAULT_GRACE, DEFAULT_MAX_LINE, DEFAULT_RECONNECT_WINDOW, DEFAULT_OUTBOX_BYTES, DEFAULT_REQUEST_TIMEOUT, DEFAULT_STREAM_TIMEOUT,
    PROTOCOL_VERSION, RelayReport, RelaySession, SUPPORTED_VERSIONS,
)

__all__ = [
    "ChannelRelay", "ChannelWriter", "FileWriter", "FrameSink", "PipeWriter", "RelayOptions", "exit_status", "open_writer",
]

_PREFIX = 4  # a record's length, before its payload (``stream``)

_log = logging.getLogger("diverge_codec.relay")

REQUESTED = ("duration", "until-answered", "requested", "channel closed")
"""Shutdown reasons that are a request (and ``signal NAME``): the relay did what it was asked, exit status 0."""


class ChannelWriter(Protocol):
    """Where a channel's records go: what ``asyncio.StreamWriter`` offers, and ``FileWriter``."""

    def write(self, data: bytes) -> None: ...
    async def drain(self) -> None: ...
    def close(self) -> None: ...
    async def wait_closed(self) -> None: ...


class FileWriter:
    """A ``ChannelWriter`` over a binary file (a regular file never makes the loop wait long)."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file = file

    def write(self, data: bytes) -> None:
        self.file.write(data)

    async def drain(self) -> None:
        self.file.flush()

    def close(self) -> None:
        self.file.close()

    async def wait_closed(self) -> None:
        return None


class PipeWriter:
    """A ``ChannelWriter`` over a pipe, socket or terminal: non-blocking writes through the event loop.

    It keeps its own buffer of the records not yet written, so that the relay's end never
    cuts one: ``trim`` forgets every record not yet begun, keeping the rest of the one being
    written, and ``abort`` says how many records never reached the reader. ``closed`` is done
    when the descriptor is closed: by ``close`` once the buffer is written, by ``abort``, or by
    the reader going away (watched for on pipes and sockets even while nothing is written).
    """

    HIGH_WATER = 64 * 1024
    """Buffered bytes past which ``drain`` waits (asyncio's pipe transport's default too)."""
    LOW_WATER = 16 * 1024

    def __init__(self, fd: int, *, watch_reader: bool) -> None:
        self.fd: int = fd
        self._loop = asyncio.get_running_loop()
        os.set_blocking(fd, False)
        self._blocks: collections.deque[bytes] = collections.deque()
        self._head = 0  # bytes of the first block already written
        self._buffered = 0
        self._drained = asyncio.Event()
        self._drained.set()
        self._closing = False
        self.closed: asyncio.Future[None] = self._loop.create_future()
        self.failure: BaseException | None = None
        self.cut: bool = False
        """The channel ended inside a record: the reader left mid-record, or one was abandoned half written."""
        self._watching = watch_reader
        if watch_reader:  # the write end of a pipe or socket turns readable (an error) when its reader leaves
            self._loop.add_reader(fd, self._reader_left)

    def write(self, data: bytes) -> None:
        if self.closed.done() or self._closing:
            raise self.failure or BrokenPipeError("the channel is closed")
        if not data:
            return  # nothing to write (not needed: an empty write or block would write and count nothing)
        if self._blocks:
            self._blocks.append(data)
            self._buffered += len(data)
        else:
            try:
                written = os.write(self.fd, data)
            except BlockingIOError:
                written = 0
            except OSError as error:  # the caller counts ``data`` lost
                self._fail(error)
                raise
            if written == len(data):
                return
            self._blocks.append(data)
            self._head, self._buffered = written, len(data) - written
            self._loop.add_writer(self.fd, self._writable)
        if self._buffered > self.HIGH_WATER:
            self._drained.clear()

    async def drain(self) -> None:
        await self._drained.wait()
        if self.failure is not None:
            raise self.failure

    def close(self) -> None:
        """Close once everything buffered is written (``closed`` tells when)."""
        self._closing = True
        if not self._blocks and not self.closed.done():
            self._close_fd()

    def trim(self) -> int:
        """Forget every record not yet begun: how many. What stays is the rest of the record being written."""
        if not self._blocks:
            return 0
        first = self._blocks[0]
        end = _record_end(first, self._head)
        forgotten = _count_records(first[end:]) + sum(map(_count_records, list(self._blocks)[1:]))
        self._blocks.clear()
        if end > self._head:
            self._blocks.append(first[:end])
        self._buffered = end - self._head if self._blocks else 0
        if not self._blocks:
            self._head = 0
            self._finish_writing()
        return forgotten

    def abort(self) -> int:
        """Drop what is buffered and close now: how many records never reached the reader whole."""
        lost = self._forget()
        if not self.closed.done():
            self._close_fd()
        return lost

    async def wait_closed(self) -> None:
        """Until the descriptor is closed: by ``close``, ``abort``, or its reader going away."""
        await asyncio.shield(self.closed)  # a watcher cancelled must not cancel the writer's own future

    def _writable(self) -> None:
        blocks = self._blocks
        while blocks:
            first = blocks[0]
            try:
                written = os.write(self.fd, memoryview(first)[self._head:])
            except BlockingIOError:
                return
            except OSError as error:
                self._fail(error)
                return
            self._head += written
            self._buffered -= written
            if self._buffered <= self.LOW_WATER:
                self._drained.set()
            if self._head < len(first):
                return
            blocks.popleft()
            self._head = 0
        self._finish_writing()

    def _finish_writing(self) -> None:
        """The buffer is empty: stop watching for room, wake ``drain``, close if asked."""
        self._loop.remove_writer(self.fd)
        self._drained.set()
        if self._closing and not self.closed.done():
            self._close_fd()

    def _reader_left(self) -> None:
        self._fail(BrokenPipeError("the channel's reader has gone"))

    def _fail(self, error: BaseException) -> None:
        """The reader is gone: nothing more can be written (the buffer's records are counted by ``abort``)."""
        if self.failure is None:
            self.failure = error
        self._loop.remove_writer(self.fd)
        self._drained.set()
        if not self.closed.done():
            self._close_fd()

    def _forget(self) -> int:
        """Drop the buffer: how many records did not reach the reader whole (those before ``_head`` did)."""
        lost = 0
        if self._blocks:
            first = self._blocks[0]
            end = _record_end(first, self._head)
            self.cut = self.cut or end > self._head  # the writes stopped inside a record
            lost = int(end > self._head) + _count_records(first[end:]) + sum(map(_count_records, list(self._blocks)[1:]))
        self._blocks.clear()
        self._head = self._buffered = 0
        return lost

    def _close_fd(self) -> None:
        if self._watching:
            self._loop.remove_reader(self.fd)
        self._loop.remove_writer(self.fd)
        try:
            os.close(self.fd)
        except OSError:
            pass
        self.closed.set_result(None)


def _record_end(records: bytes, at: int) -> int:
    """Where the record of a block of whole records that offset ``at`` is inside of ends (``at`` itself at a record's end)."""
    end = 0
    while end < at:
        end += _PREFIX + int.from_bytes(records[end:end + _PREFIX], "big")
    return end


class FrameSink:
    """Where a program's frames go instead of a channel (``api.Relay``): the outbox's payloads themselves, never
    records to split again.

    ``put`` takes what the outbox held, ``drain`` waits until the program took all of it: while it has
    not, new notifications wait in the (bounded) outbox and what does not fit is dropped and counted, as
    for a slow channel; the server's reader never waits on the program. ``close`` is the end: ``get``
    then returns what is left, then None.
    """

    def __init__(self) -> None:
        self._payloads: collections.deque[bytes] = collections.deque()
        self._taken = asyncio.Event()
        self._taken.set()
        self._arrived = asyncio.Event()
        self.closed: bool = False

    def put(self, payloads: list[bytes]) -> None:
        if self.closed:
            raise BrokenPipeError("the frame sink is closed")
        self._payloads.extend(payloads)
        if self._payloads:
            self._taken.clear()
            self._arrived.set()

    async def get(self) -> bytes | None:
        """The next payload, oldest first; None once the sink is closed and empty."""
        while not self._payloads:
            if self.closed:
                return None
            self._arrived.clear()
            await self._arrived.wait()
        payload = self._payloads.popleft()
        if not self._payloads:
            self._taken.set()
        return payload

    def write(self, data: bytes) -> None:
        raise TypeError("a FrameSink takes payloads (put), not channel records")

    async def drain(self) -> None:
        await self._taken.wait()

    def close(self) -> None:
        self.closed = True
        self._arrived.set()
        self._taken.set()

    async def wait_closed(self) -> None:
        return None


def _count_records(records: bytes) -> int:
    """How many records a block of whole records holds (only at the end: never on the hot path)."""
    count = at = 0
    while at < len(records):
        at += _PREFIX + int.from_bytes(records[at:at + _PREFIX], "big")
        count += 1
    return count


async def open_writer(fd: int) -> ChannelWriter:
    """A writer for a file descriptor the caller hands over (it is closed at the finish).

    A regular file is written as it comes; a pipe, socket or terminal through the event
    loop, so a slow reader makes the outbox drop instead of stalling every relay.
    """
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        return FileWriter(os.fdopen(fd, "wb"))
    if stat.S_ISFIFO(mode):
        _widen_pipe(fd)
    return PipeWriter(fd, watch_reader=stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode))


@dataclass(frozen=True)
class RelayOptions:
    """How to relay one server; every field has the CLI option of the same name."""

    calls: Sequence[tuple[str, Any]] = ()
    """Tool calls made after the handshake, in order: (name, arguments)."""
    requests: Sequence[tuple[str, Any]] = ()
    """Other requests made after the handshake, before the calls: (method, params)."""
    until_answered: bool = False
    """Shut the server down once every call is answered."""
    duration: float | None = None
    """Shut the server down after this many seconds."""
    grace: float = DEFAULT_GRACE
    """Seconds to wait after closing stdin, and again after SIGTERM; and for the output to end once the server exited."""
    request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT
    """Seconds a request may go unanswered before it is cancelled and counted failed; None: forever."""
    reconnect_window: float = DEFAULT_RECONNECT_WINDOW
    """HTTP: seconds a server that was reached may stay unreachable (tried again with backoff) before the relay ends."""
    stream_timeout: float | None = DEFAULT_STREAM_TIMEOUT
    """HTTP: seconds the server's GET stream may go without a byte before it is opened again from its last event id
    (a flow a NAT or proxy dropped without a word); None: never."""
    protocol_version: str = PROTOCOL_VERSION
    """The 2025 revision offered in ``initialize``."""
    protocol: str = "auto"
    """The era: ``auto`` probes with ``server/discover`` first, a revision forces one (``eras.PROTOCOLS``). A
    driver that speaks only the 2025 era (``http_sse``'s, ``--transport sse``) always does the handshake."""
    server_log_level: str | None = None
    """The server's log messages asked from this level up (``session.RelaySession.server_log_level``)."""
    max_line: int = DEFAULT_MAX_LINE
    outbox_bytes: int = DEFAULT_OUTBOX_BYTES
    read_bytes: int | None = None
    """stdio: what the relay reads of the server's output a turn of the event loop; None: asyncio's own (256 KiB).
    ``PIPE_BYTES`` (1 MiB, the pipe the relay asks for) takes a flooding server's pipeful in one read and one
    framer call. The CLI asks for it once glibc's allocator keeps freed blocks (``cli.relay``): with its defaults,
    the 1 MiB read and its records are fresh mappings every turn, faulted in page by page (issue 44)."""
    server_stderr: int | IO[Any] | None = None
    """The server's stderr: None inherits the relay's, ``subprocess.DEVNULL`` discards it."""
    env: dict[str, str] | None = None
    cwd: str | None = None
    frame: Callable[[bytes], bytes | None] = field(default=mcp_notifications.splice_notification)
    """One line to a channel payload: ``outbox.relay_frame``'s work, called without its wrapper; a benchmark may swap it."""


class ChannelRelay:
    """What every transport's driver shares: one ``RelaySession``, its channel and its clock.

    The channel's writer is fed from the session's outbox in the callback that read the
    server's bytes, and drained by a pump; its reader's departure is watched for; the
    session's request deadlines are kept by one timer. A transport (``ServerRelay`` for
    stdio, ``streamable_http.HttpRelay``) reads the server, hands what it read to ``_received``
    and sends what the session answers with (``_send``).
    """

    ERAS = False
    """Whether the driver speaks the 2026-07-28 era too (``RelayOptions.protocol``); else the 2025 handshake only."""

    def __init__(self, writer: ChannelWriter, options: RelayOptions) -> None:
        self.writer: ChannelWriter = writer
        self.options: RelayOptions = options
        self.session: RelaySession = RelaySession(
            options.calls, requests=options.requests, protocol_version=options.protocol_version,
            protocol=options.protocol if self.ERAS or options.protocol in SUPPORTED_VERSIONS else None,
            server_log_level=options.server_log_level,
            max_line=options.max_line,
            outbox_bytes=options.outbox_bytes, until_answered=options.until_answered, frame=options.frame,
            request_timeout=options.request_timeout, clock=time.monotonic)
        self.report: RelayReport = self.session.report
        self.session.on_era = _said_era
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._hurry = asyncio.Event()
        self._reason: str | None = None
        self._channel_open = True
        self._closing = False  # the relay itself is closing the channel
        self._busy = False  # the pump is waiting for the writer to drain
        self._expiry: asyncio.TimerHandle | None = None

    def shutdown(self, reason: str = "requested") -> None:
        """Stop relaying and end the server's side; called again, without the waits."""
        if self._stop.is_set():
            self._hurry.set()
            return
        self._reason = reason
        self._stop.set()

    async def run(self) -> RelayReport:
        """Relay until the end: the report (the transport's own)."""
        raise NotImplementedError

    def _send(self, data: bytes) -> None:
        """Send the session's messages (each ending with a newline) to the server."""
        raise NotImplementedError

    def _received(self, reply: bytes) -> None:
        """After the session read the server's bytes: send its reply, hand the outbox to the channel."""
        if reply:
            self._send(reply)
            if self._expiry is None:
                self._arm_expiry()
        if self.session.outbox and not self._busy and self._channel_open:
            self._write_now()
        if self.session.shutdown_reason is not None and not self._stop.is_set():
            self.shutdown(self.session.shutdown_reason)

    def _arm_expiry(self) -> None:
        """One timer, at the oldest unanswered request's deadline (later requests have later ones)."""
        deadline = self.session.next_deadline()
        if deadline is not None:
            delay = max(0.0, deadline - time.monotonic())
            self._expiry = asyncio.get_running_loop().call_later(delay, self._expire)

    def _expire(self) -> None:
        self._expiry = None
        self._send(self.session.expire())
        if self.session.shutdown_reason is not None and not self._stop.is_set():
            self.shutdown(self.session.shutdown_reason)
        self._arm_expiry()

    def _watch_channel(self) -> asyncio.Task[None] | None:
        """A pipe or socket whose reader goes away closes at once, even while nothing is written:
        the relay ends then, not at its next write (a quiet server may never write again)."""
        if not isinstance(self.writer, PipeWriter) and getattr(self.writer, "transport", None) is None:
            return None  # a file: its reader cannot go away

        async def watch() -> None:
            try:
                await self.writer.wait_closed()
            except (ConnectionError, OSError):
                pass
            if self._channel_open and not self._closing:
                self._channel_gone()
        return asyncio.create_task(watch())

    def _write_now(self) -> bool:
        """Hand every queued payload to the writer, in the read callback itself: no wait for a turn of
        the loop, so a channel's latency does not grow with the servers sharing it. The pump then
        awaits the writer's drain; while it does, payloads queue in the (bounded) outbox."""
        writer, outbox = self.writer, self.session.outbox
        try:
            if isinstance(writer, FrameSink):  # a program's frames: the payloads as the outbox holds them
                count = len(outbox)
                writer.put(outbox.take(count))
            else:
                records, count = outbox.take_records()
                writer.write(records)
        except (ConnectionError, OSError):
            self.session.lost(count)
            self._channel_gone()
            return False
        self.session.sent(count)
        self._busy = True
        self._ready.set()
        return True

    def _channel_gone(self) -> None:
        """The consumer went away: nobody to relay to. What the writer still held never reached it."""
        self._channel_open = False
        self.session.abandon()
        if isinstance(self.writer, PipeWriter):
            self.session.unsent(self.writer.abort())
        self.shutdown("channel closed")

    async def _pump(self) -> None:
        session = self.session
        while True:
            await self._ready.wait()
            self._ready.clear()
            while True:
                try:
                    await self.writer.drain()
                except (ConnectionError, OSError):
                    self._channel_gone()
                    return
                if not session.outbox:
                    break
                if not self._write_now():
                    return
            self._busy = False
            if session.ended:
                return

    async def _close_channel(self, pump: asyncio.Task[None]) -> None:
        """Let the pump hand over what is queued (``grace`` at most for a stuck consumer), then finish the
        channel on a record boundary: what the consumer never took is counted, never cut."""
        self._closing = True
        self._ready.set()
        if not pump.done() and not self._hurry.is_set():
            await _first(pump, asyncio.sleep(self.options.grace), self._hurry.wait())
        stuck = not pump.done()
        if stuck:
            pump.cancel()
        if self.session.outbox:  # what the channel never took: a stuck or a departed consumer
            self.session.abandon()
        writer = self.writer
        if isinstance(writer, PipeWriter):
            await self._finish_pipe(writer, stuck)
            return
        transport = getattr(writer, "transport", None)
        if stuck and transport is not None:
            getattr(writer, "abort", transport.abort)()
            return
        await self._finish_writer()

    async def _finish_pipe(self, writer: PipeWriter, stuck: bool) -> None:
        """Close once written; a consumer that does not take it in ``grace`` loses the records not yet begun
        (counted), and gets ``grace`` more for the rest of the one begun; only then is the channel cut."""
        writer.close()
        if stuck or not await self._within_grace(writer.closed):
            self.session.unsent(writer.trim())
            if not await self._within_grace(writer.closed):
                self.session.unsent(writer.abort())
        if writer.failure is not None:  # the reader left during the end: what the writer still held never reached it
            self.session.unsent(writer.abort())
        self.report.channel_cut = writer.cut

    async def _within_grace(self, done: asyncio.Future[None]) -> bool:
        if not done.done() and not self._hurry.is_set():
            await _first(asyncio.shield(done), asyncio.sleep(self.options.grace), self._hurry.wait())
        return done.done()

    async def _finish_writer(self) -> None:
        try:
            self.writer.close()
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass


def _said_era(words: str) -> None:
    """INFO, as it happens: which MCP revision the relay speaks with the server, and how it found it."""
    _log.info("MCP era: %s", words)


def exit_status(report: RelayReport) -> int:
    """The CLI's status for a report: 0 a clean end or a requested shutdown, 1 a failure, 2 no start."""
    server = report.server
    reason = server.get("shutdown") or ""
    if reason.startswith("signal "):  # stopped by the user, in the handshake too: what was asked
        return 0
    if not server.get("started", False):  # a command that cannot start is bad usage; a URL that cannot be reached is not
        return 1 if server.get("transport") is not None else 2
    if reason in REQUESTED:
        return 0
    if report.unreachable or reason == "handshake failed":
        return 1
    return 0 if server.get("exit_status") == 0 and server.get("ended_by") in ("itself", "stdin closed") else 1


async def _first(*awaitables: Any) -> None:
    """Wait until the first of them is done; cancel the rest (futures passed in are shielded by callers)."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            if not task.done() and isinstance(task, asyncio.Task):
                task.cancel()


PIPE_BYTES = 1 << 20
"""The size asked for the server's stdout pipe and a channel that is a pipe, from Linux's 64 KiB
(``/proc/sys/fs/pipe-max-size`` allows 1 MiB by default): a fast server's output is read up to
asyncio's 256 KiB per turn of the event loop instead of 64 KiB, and a channel takes a chunk's
records in one write (``benchmarks/relay_cost.py``: 0.65 -> 0.50 CPU seconds for 150 MB). With
``RelayOptions.read_bytes`` set to it, a turn reads the whole pipe (issue 44: the relay's marginal
cost a notification 0.185-0.216 -> 0.166-0.187 µs)."""

_F_SETPIPE_SZ = 1031  # Linux's fcntl command for a pipe's size


def _widen_pipe(fd: int) -> None:
    """Ask for a ``PIPE_BYTES`` pipe; where the platform or its limit says no, the pipe stays as it is."""
    if not sys.platform.startswith("linux"):
        return
    import fcntl

    try:
        fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass


def _widen_output(transport: asyncio.BaseTransport, read_bytes: int | None) -> None:
    """The server's stdout: a ``PIPE_BYTES`` pipe, read ``read_bytes`` a turn (``RelayOptions.read_bytes``;
    None: as asyncio reads). asyncio's pipe transport reads its ``max_size`` a turn (256 KiB); a loop whose
    transport has no such attribute (uvloop's) reads as it reads."""
    pipe = transport.get_extra_info("pipe")
    if pipe is not None:
        _widen_pipe(pipe.fileno())
    if read_bytes is not None and isinstance(getattr(transport, "max_size", None), int):
        setattr(transport, "max_size", read_bytes)  # asyncio's own attribute, read at each turn

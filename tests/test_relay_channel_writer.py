"""The channel's end in-process: a scripted server through ``ChannelRelay`` onto a ``PipeWriter``, read by a
scripted slow consumer on the test's own event loop (a pipe, no process, no socket: the quick subset).

What ``test_relay_channel_end.py`` checks with a relay and a consumer as processes, here on both cores with
exact counts: a consumer slow at the end gets every record the relay had begun, whole, and the finish (the
pipe's end) after them; the records never begun are counted unsent and dropped for backpressure, never
relayed; one that stops mid-record is reported cut; one that keeps up gets every notification. See
docs/relay.md, "What is guaranteed".
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import time

import pytest

from diverge_codec import _json, stream
from diverge_codec.errors import TruncatedStreamError
from diverge_codec.relay import session as session_module
from diverge_codec.relay.channel import ChannelRelay, FileWriter, PipeWriter, RelayOptions
from diverge_codec.relay.session import INITIALIZE_ID, PROTOCOL_VERSION
from diverge_codec.sequence import State

from test_relay_command import channel

F_SETPIPE_SZ = 1031  # Linux's fcntl: the pipe's buffer, here one page, so a consumer's pace shows at once
pytestmark = pytest.mark.skipif(not hasattr(fcntl, "F_SETPIPE_SZ") and not os.path.exists("/proc/sys/fs/pipe-max-size"),
                                reason="a pipe's buffer is set by F_SETPIPE_SZ (Linux)")


def _line(obj: object) -> bytes:
    return _json.dumps(obj) + b"\n"


def _log(number: int, size: int) -> bytes:
    return _line({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": f"{number:06d}" + "x" * size}})


ANSWER = _line({"jsonrpc": "2.0", "id": INITIALIZE_ID, "result": {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}}})


class ScriptedServer(ChannelRelay):
    """A server that is a script: it answers ``initialize`` (or not), writes ``lines`` a chunk a turn, then its output
    ends; the relay's end is the stdio driver's (``end_of_output``, ``_close_channel``, ``finish_report``)."""

    def __init__(self, writer: PipeWriter, options: RelayOptions, lines: list[bytes], answer: bool = True,
                 pace: float = 0, linger: float = 0) -> None:
        super().__init__(writer, options)
        self.lines, self.answer, self.pace, self.linger, self.to_server = lines, answer, pace, linger, bytearray()

    def _send(self, data: bytes) -> None:
        self.to_server += data

    async def run(self):
        self._send(self.session.start())
        pump = asyncio.create_task(self._pump())
        if self.answer:
            self._received(self.session.receive(ANSWER))
        for at in range(0, len(self.lines), 8):
            if self._stop.is_set():  # the channel's reader left: a driver stops reading the server
                break
            self._received(self.session.receive(b"".join(self.lines[at:at + 8])))
            await asyncio.sleep(self.pace)
        if self.linger:  # quiet, its output still open, until the relay stops
            await asyncio.wait_for(self._stop.wait(), self.linger)
        self.session.end_of_output()
        await self._close_channel(pump)
        self.session.finish_report()
        return self.report


class Consumer:
    """The pipe's read end on the test's loop: ``per_read`` bytes each ``every`` seconds, until ``stop_after`` bytes
    (then nothing more until ``resume``), the end of the pipe (``ended``), or ``leave_after`` bytes (it closes its end)."""

    def __init__(self, fd: int, per_read: int, every: float, stop_after: int | None = None,
                 leave_after: int | None = None) -> None:
        self.fd, self.per_read, self.every, self.stop_after, self.leave_after = fd, per_read, every, stop_after, leave_after
        self.received = bytearray()
        self.loop = asyncio.get_running_loop()
        self.ended: asyncio.Future[None] = self.loop.create_future()
        os.set_blocking(fd, False)
        self.loop.call_soon(self._read)

    def _read(self) -> None:
        if self.stop_after is not None and len(self.received) >= self.stop_after:
            return  # stopped: the writer fills the pipe and waits
        want = self.per_read if self.stop_after is None else min(self.per_read, self.stop_after - len(self.received))
        try:
            data = os.read(self.fd, want)
        except BlockingIOError:
            data = None
        self.received += data or b""
        if data == b"" or (self.leave_after is not None and len(self.received) >= self.leave_after):
            os.close(self.fd)
            self.ended.set_result(None)
            return
        self.loop.call_later(self.every, self._read)

    def resume(self) -> None:
        self.stop_after = None
        self.loop.call_soon(self._read)


def _relay(core, monkeypatch, lines: list[bytes], *, per_read: int, every: float, stop_after: int | None = None,
           leave_after: int | None = None, answer: bool = True, grace: float = 0.05, outbox_bytes: int = 1 << 20,
           pace: float = 0):
    """Run the scripted server onto a one-page pipe read by the consumer: the report and what the consumer got."""
    monkeypatch.setattr(session_module, "mcp_notifications", core)  # the session's framer: this core's

    async def scenario():
        read_end, write_end = os.pipe()
        fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
        consumer = Consumer(read_end, per_read, every, stop_after, leave_after)
        relay = ScriptedServer(PipeWriter(write_end, watch_reader=True),
                               RelayOptions(grace=grace, outbox_bytes=outbox_bytes, frame=core.splice_notification),
                               lines, answer, pace)
        report = await relay.run()
        if consumer.stop_after is not None:
            consumer.resume()  # what reaches it after the relay's end: the rest of the records whole, or the cut
        await asyncio.wait_for(consumer.ended, 30)
        return report, bytes(consumer.received), relay

    return asyncio.run(scenario())


def _numbers(notifications: list[dict]) -> list[int]:
    return [int(notification["params"]["data"][:6]) for notification in notifications]


def test_a_consumer_that_keeps_up_gets_every_notification_in_order_then_the_finish(mn, monkeypatch):
    lines = [_log(number, 40) for number in range(300)]
    report, received, relay = _relay(mn, monkeypatch, lines, per_read=1 << 16, every=0)
    notifications, error, state = channel(received)
    assert _numbers(notifications) == list(range(300)) and error is None and state is State.FINISHED
    assert (report.seen, report.relayed, report.unsent, report.channel_cut) == (300, 300, 0, False)
    assert dict(report.dropped) == {**report.dropped, "backpressure": 0}
    assert relay.to_server.count(b"\n") == 2  # initialize, then initialized


def test_a_slow_consumer_at_the_end_gets_whole_records_and_the_ones_never_begun_are_counted_unsent(mn, monkeypatch):
    lines = [_log(number, 200) for number in range(400)]
    report, received, _ = _relay(mn, monkeypatch, lines, per_read=700, every=0.004)
    notifications, error, state = channel(received)  # split_records raises on a cut record
    numbers = _numbers(notifications)
    assert error is None and state is State.FINISHED and report.channel_cut is False
    assert report.unsent > 0, "the consumer kept up: the test did not reach the end it is about"
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)  # in order, none twice
    assert report.relayed == len(notifications) and report.seen == 400
    assert report.seen == report.relayed + sum(report.dropped.values())
    assert report.dropped["backpressure"] >= report.unsent  # the unsent, and what the outbox dropped before


def test_a_consumer_stopped_mid_record_is_reported_cut_and_that_record_is_not_relayed(mn, monkeypatch):
    big = _log(0, 40_000)  # ten pages: begun, then the consumer stops inside it
    report, received, _ = _relay(mn, monkeypatch, [big, _log(1, 10)], per_read=1000, every=0.001, stop_after=6000)
    with pytest.raises(TruncatedStreamError):
        stream.split_records(received)
    assert len(received) < len(big) and report.channel_cut is True
    assert (report.seen, report.relayed, report.unsent) == (2, 0, 2)
    assert report.dropped["backpressure"] == 2


def test_records_the_outbox_could_not_hold_are_dropped_and_counted_while_the_rest_arrive_whole(mn, monkeypatch):
    lines = [_log(number, 1000) for number in range(200)]
    report, received, _ = _relay(mn, monkeypatch, lines, per_read=2048, every=0.002, outbox_bytes=8192, grace=5)
    notifications, error, state = channel(received)
    assert error is None and state is State.FINISHED and (report.unsent, report.channel_cut) == (0, False)
    assert report.dropped["backpressure"] > 0 and report.relayed == len(notifications) == 200 - report.dropped["backpressure"]
    assert _numbers(notifications)[0] == 0 and _numbers(notifications) == sorted(_numbers(notifications))


def test_a_server_that_never_answered_gets_the_one_error_frame_then_the_finish(mn, monkeypatch):
    report, received, _ = _relay(mn, monkeypatch, [], per_read=1 << 16, every=0, answer=False)
    notifications, error, state = channel(received)
    assert notifications == [] and error is not None and state is State.ENDED_WITH_ERROR
    assert len(stream.split_records(received)) == 1 and report.unreachable is True
    assert (report.seen, report.relayed, report.unsent) == (0, 0, 0)


def _pipe_writer(pipe_bytes: int = 4096) -> tuple[PipeWriter, int]:
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, F_SETPIPE_SZ, pipe_bytes)
    return PipeWriter(write_end, watch_reader=False), read_end


@pytest.mark.parametrize("end", ["abort", "trim"])
def test_a_write_the_pipe_took_whole_leaves_nothing_to_lose_or_trim(end):
    async def scenario():
        writer, read_end = _pipe_writer()
        record = stream.record(b"\x01" + b"x" * 100)
        writer.write(record)
        assert getattr(writer, end)() == 0 and writer.cut is False  # in the same turn: nothing was held back
        assert os.read(read_end, 4096) == record
        writer.abort()
        os.close(read_end)
    asyncio.run(scenario())


def test_drain_waits_once_more_than_64_kib_is_held_and_wakes_at_16_kib():
    async def scenario():
        writer, read_end = _pipe_writer()
        os.set_blocking(read_end, False)
        writer.write(b"p" * 4096)  # the pipe, full
        writer.write(b"a" * (64 * 1024 - 1))
        writer.write(b"b")  # exactly 64 KiB held (HIGH_WATER, asyncio's pipes' too): no wait
        await asyncio.wait_for(writer.drain(), 1)
        writer.write(b"c")  # one byte more
        drained = asyncio.ensure_future(writer.drain())
        await asyncio.sleep(0.01)
        assert not drained.done()
        held = 64 * 1024 + 1
        while held > 16 * 1024:  # the consumer takes a pipe's worth a turn; the writer refills the pipe
            assert not drained.done(), held
            held -= len(os.read(read_end, 4096))
            await asyncio.sleep(0.005)
        await asyncio.wait_for(drained, 1)  # 16 KiB held, or less
        writer.abort()
        os.close(read_end)
    asyncio.run(scenario())


def test_a_reader_gone_while_the_server_is_quiet_ends_the_relay_and_a_file_is_not_watched(tmp_path):
    async def scenario():
        read_end, write_end = os.pipe()
        relay = ScriptedServer(PipeWriter(write_end, watch_reader=True), RelayOptions(), [])
        watch = relay._watch_channel()
        assert watch is not None
        os.close(read_end)  # nothing written, nothing to write: noticed all the same
        await asyncio.wait_for(relay._stop.wait(), 5)
        assert relay._reason == "channel closed" and relay._channel_open is False
        await watch
        with open(tmp_path / "channel", "wb") as out:
            assert ScriptedServer(FileWriter(out), RelayOptions(), [])._watch_channel() is None
    asyncio.run(scenario())


def _whole(received: bytes) -> int:
    """How many whole records a consumer that left mid-stream got."""
    count = at = 0
    while at + 4 <= len(received) and at + 4 + int.from_bytes(received[at:at + 4], "big") <= len(received):
        at += 4 + int.from_bytes(received[at:at + 4], "big")
        count += 1
    return count


def test_a_consumer_that_leaves_mid_stream_ends_the_relay_and_every_notification_is_accounted_for(mn, monkeypatch):
    lines = [_log(number, 200) for number in range(2000)]
    report, received, relay = _relay(mn, monkeypatch, lines, per_read=1000, every=0.001, leave_after=20_000, pace=0.001)
    assert relay._reason == "channel closed" and report.seen < 2000  # it stopped reading the server
    assert report.seen == report.relayed + sum(report.dropped.values()) and report.dropped["backpressure"] > 0
    assert _whole(received) <= report.relayed <= _whole(received) + 4096 // 200 + 1  # the rest died in the pipe


@pytest.mark.parametrize("leave_after", [30_000, 104_000])  # while the pump hands over; once it has, while closing
def test_a_consumer_that_leaves_during_the_end_has_what_it_never_got_counted_unsent(mn, monkeypatch, leave_after):
    """On 43bf8bf one that left once everything was handed to the writer (112 KB here) had the writer's
    buffer counted relayed: 400 relayed, 373 received."""
    lines = [_log(number, 200) for number in range(400)]
    report, received, _ = _relay(mn, monkeypatch, lines, per_read=700, every=0.004, leave_after=leave_after, grace=2)
    assert report.seen == 400 and report.seen == report.relayed + sum(report.dropped.values())
    assert report.unsent > 0 and _whole(received) <= report.relayed <= _whole(received) + 4096 // 200 + 1


def test_the_one_oversized_payload_keeps_its_place_until_it_is_taken():
    """The outbox holds its bound plus one larger payload: taking what was queued before it does not free its place."""
    from diverge_codec.relay.outbox import Outbox

    outbox = Outbox(100)
    assert outbox.offer(b"s" * 10) and outbox.offer(b"L" * 150)  # the oversized one, beside the bound
    assert outbox.take(1) == [b"s" * 10]  # taken before it: it stays, and so does its place
    assert not outbox.offer(b"M" * 200) and outbox.dropped == 1
    assert outbox.take(1) == [b"L" * 150] and outbox.offer(b"M" * 200)  # taken: the place is free


def test_a_request_unanswered_is_cancelled_at_its_timeout_by_the_relay_s_timer():
    async def scenario():
        read_end, write_end = os.pipe()
        consumer = Consumer(read_end, 1 << 16, 0)
        relay = ScriptedServer(PipeWriter(write_end, watch_reader=True), RelayOptions(
            calls=[("slow", {})], until_answered=True, request_timeout=0.05, grace=0.05), [], linger=10)
        report = await asyncio.wait_for(relay.run(), 10)
        await consumer.ended
        return report, relay
    report, relay = asyncio.run(scenario())
    assert relay._reason == "until-answered" and (report.calls_sent, report.calls_failed) == (1, 1)
    assert b'"method":"notifications/cancelled"' in relay.to_server


def test_a_second_shutdown_skips_the_waits_of_a_stuck_end():
    """A consumer that takes nothing, a grace of a minute: the second shutdown ends the relay at once."""
    async def scenario():
        read_end, write_end = os.pipe()
        fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
        relay = ScriptedServer(PipeWriter(write_end, watch_reader=True), RelayOptions(grace=60),
                               [_log(number, 200) for number in range(100)], linger=60)
        running = asyncio.ensure_future(relay.run())
        await asyncio.sleep(0.05)
        relay.shutdown("requested")
        await asyncio.sleep(0.05)
        assert not running.done() and not relay._hurry.is_set()  # in the first grace
        relay.shutdown("requested")
        report = await asyncio.wait_for(running, 10)  # not 2 x 60 s
        os.close(read_end)
        return report, relay
    report, relay = asyncio.run(scenario())
    assert relay._reason == "requested" and report.channel_cut is False and report.unsent > 0


def test_nothing_is_written_once_the_channel_is_closing():
    async def scenario():
        writer, read_end = _pipe_writer()
        writer.write(b"p" * 8192)  # more than the pipe holds: the close waits for it
        writer.close()
        with pytest.raises(BrokenPipeError):
            writer.write(b"x")
        writer.abort()
        os.close(read_end)
    asyncio.run(scenario())


def test_the_options_are_frozen():
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        RelayOptions().grace = 1.0  # type: ignore[misc]


def test_first_cancels_the_tasks_it_made_and_never_a_future_it_was_given():
    from diverge_codec.relay.channel import _first

    async def scenario():
        given = asyncio.get_running_loop().create_future()
        slow = asyncio.ensure_future(asyncio.sleep(60))
        await _first(given, slow, asyncio.sleep(0))
        assert not given.cancelled() and not given.done() and slow.cancelled() is False
        await asyncio.sleep(0)
        assert slow.cancelled()
    asyncio.run(scenario())


def test_the_pump_ends_with_the_session_so_the_end_does_not_wait_out_the_grace(mn, monkeypatch):
    """With nothing left to write, the channel's pump returns once the session ended: closing the channel finds it
    done and never waits ``grace`` for a consumer that has everything (a pump that looped on would be taken for a
    stuck one, and the relay would end a whole grace late)."""
    lines = [_log(number, 40) for number in range(20)]
    started = time.monotonic()
    report, received, _ = _relay(mn, monkeypatch, lines, per_read=1 << 16, every=0, grace=10)
    assert time.monotonic() - started < 5  # it takes well under a second: half the grace bounds "it ends", not a speed
    assert (report.relayed, report.unsent, report.channel_cut) == (20, 0, False)
    assert channel(received)[2] is State.FINISHED

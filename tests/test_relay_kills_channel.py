"""Records reach a slow consumer while the server runs, not at its end (issue #45: a pump that stopped after its
first write past a full pipe passed every quick test: the records it then held back still came out, whole and
in order, when the server ended). The channel-writer tests' scripted server and consumer, in-process."""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import Callable

from diverge_codec.relay import session as session_module
from diverge_codec.relay.channel import PipeWriter, RelayOptions
from diverge_codec.sequence import State

from test_relay_channel_writer import F_SETPIPE_SZ, Consumer, ScriptedServer, _log, _numbers, pytestmark  # noqa: F401
from test_relay_command import channel

LINES = 400  # 400 KB: past the writer's 64 KiB mark, so its drain waits and records queue meanwhile


class SaysWhenTheLastCame(Consumer):
    """A consumer that calls ``then`` once the last notification has reached it, and reads on to the end."""

    then: Callable[[], None] = staticmethod(lambda: None)

    def _read(self) -> None:
        if b'"%06d' % (LINES - 1) in self.received:
            self.then()
            self.then = lambda: None
        super()._read()


def test_a_slow_consumer_gets_every_record_while_the_server_is_still_running(mn, monkeypatch):
    monkeypatch.setattr(session_module, "mcp_notifications", mn)

    async def scenario() -> bytes:
        read_end, write_end = os.pipe()
        fcntl.fcntl(write_end, F_SETPIPE_SZ, 4096)
        consumer = SaysWhenTheLastCame(read_end, per_read=2048, every=0.001)
        # 1 KB records 8 every 2 ms, twice what the consumer reads: the pump writes what queued after each drain,
        # more than once; the server then stays, its output open, until the relay is stopped: the last record read
        relay = ScriptedServer(PipeWriter(write_end, watch_reader=True),
                               RelayOptions(grace=0.05, frame=mn.splice_notification),
                               [_log(number, 1000) for number in range(LINES)], pace=0.002, linger=10)
        consumer.then = relay.shutdown
        await relay.run()  # a TimeoutError after 10 s: the last record never came while the server ran
        await asyncio.wait_for(consumer.ended, 10)
        return bytes(consumer.received)

    notifications, error, state = channel(asyncio.run(scenario()))
    assert _numbers(notifications) == list(range(LINES)) and error is None and state is State.FINISHED

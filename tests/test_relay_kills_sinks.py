"""What a program embedding the relay gets (issue #45: mutants that passed every quick test): a ``FrameSink`` that
holds nothing never makes the relay wait, and the relay reads event streams with the compiled parser wherever
the compiled core is built (the speed a user installed it for), its pure twin elsewhere."""

from __future__ import annotations

import asyncio

import pytest

from diverge_codec._implementation import IMPLEMENTATION
from diverge_codec.relay import eventstream
from diverge_codec.relay.channel import FrameSink


def test_a_frame_sink_drains_at_once_holding_nothing_and_once_the_program_took_everything():
    async def main() -> None:
        sink = FrameSink()
        await asyncio.wait_for(sink.drain(), 1)  # nothing given yet: nothing to wait for
        sink.put([b"a", b"b"])
        draining = asyncio.ensure_future(sink.drain())
        assert await sink.get() == b"a"
        await asyncio.sleep(0)
        assert not draining.done()  # "b" not taken yet
        assert await sink.get() == b"b"
        await asyncio.wait_for(draining, 1)
        sink.put([])
        await asyncio.wait_for(sink.drain(), 1)  # nothing new
        sink.close()
        assert await sink.get() is None
        with pytest.raises(BrokenPipeError, match="^the frame sink is closed$"):
            sink.put([b"c"])
    asyncio.run(main())


def test_the_event_stream_parser_is_the_compiled_one_where_the_core_is_built():
    twin = "diverge_codec._eventstream_py" if IMPLEMENTATION == "python" else "diverge_codec._eventstream_c"
    assert (eventstream.EventParser.__module__, eventstream.RecentIds.__module__) == (twin, twin)

"""What a program embedding the relay gets (issue #45: mutants that passed every quick test): a ``FrameSink`` that
holds nothing never makes the relay wait, and the relay reads event streams with the twin of the core the install
chose: the compiled parser where the compiled core is built (the speed a user installed it for), the pure one
elsewhere."""

from __future__ import annotations

import asyncio
import importlib

import pytest

from diverge_codec import _implementation
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


@pytest.mark.parametrize(("implementation", "twin"), [("python", "_eventstream_py"), ("cython", "_eventstream_c")])
def test_the_event_stream_parser_is_the_twin_of_the_core_the_install_chose(monkeypatch, implementation, twin):
    pytest.importorskip(f"diverge_codec.{twin}")
    monkeypatch.setattr(_implementation, "IMPLEMENTATION", implementation)
    try:
        reloaded = importlib.reload(eventstream)
        assert reloaded.EventParser.__module__ == reloaded.RecentIds.__module__ == f"diverge_codec.{twin}"
    finally:
        monkeypatch.undo()
        importlib.reload(eventstream)

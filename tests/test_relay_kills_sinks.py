"""What a program embedding the relay gets (issue #45: mutants that passed every quick test): a ``FrameSink`` that
holds nothing never makes the relay wait, and the relay reads event streams with the twin of the core the install
chose: the compiled parser where the compiled core is built (the speed a user installed it for), the pure one
elsewhere; a channel that is a pipe is widened to 1 MiB (a quarter of the turns for the same bytes)."""

from __future__ import annotations

import asyncio
import importlib
import os
import sys

import pytest

from diverge_codec import _implementation
from diverge_codec.relay import eventstream
from diverge_codec.relay.channel import FrameSink, open_writer

F_GETPIPE_SZ = 1032  # Linux's fcntl command


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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pipe's size is Linux's (F_SETPIPE_SZ)")
def test_a_channel_that_is_a_pipe_is_widened_to_a_mebibyte_where_the_kernel_allows_it():
    import fcntl

    with open("/proc/sys/fs/pipe-max-size") as limit:
        if int(limit.read()) < 1 << 20:
            pytest.skip("this kernel allows pipes under 1 MiB (/proc/sys/fs/pipe-max-size)")
    read_end, write_end = os.pipe()

    async def main() -> None:
        writer = await open_writer(write_end)
        assert fcntl.fcntl(write_end, F_GETPIPE_SZ) == 1 << 20  # Linux's default is 64 KiB
        writer.close()
        await writer.wait_closed()
    try:
        asyncio.run(main())
    finally:
        os.close(read_end)

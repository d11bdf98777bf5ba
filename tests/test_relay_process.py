"""The asyncio driver's channel writer: a write the channel cannot take raises, it is never dropped unseen."""

from __future__ import annotations

import asyncio
import os

import pytest

from diverge_codec.relay import open_writer


def test_a_write_to_a_pipe_whose_reader_has_gone_raises_at_once_and_after():
    """asyncio closes the transport on a failed write and drops it silently; the writer says so instead,
    so the relay counts that batch as dropped, not relayed, before the protocol hears of the loss."""
    async def scenario():
        read_end, write_end = os.pipe()
        writer = await open_writer(write_end)
        os.close(read_end)
        with pytest.raises(BrokenPipeError):
            writer.write(b"x" * 16)  # the failed write itself
        with pytest.raises(BrokenPipeError):
            writer.write(b"y")  # and one in the same turn of the loop, before connection_lost runs
        await asyncio.sleep(0)
        with pytest.raises(BrokenPipeError):
            writer.write(b"z")  # and after it
        writer.close()

    asyncio.run(scenario())


def test_a_write_to_an_open_pipe_arrives_whole():
    async def scenario():
        read_end, write_end = os.pipe()
        writer = await open_writer(write_end)
        writer.write(b"\x00\x00\x00\x01a")
        await writer.drain()
        writer.close()
        await writer.wait_closed()
        with os.fdopen(read_end, "rb") as reader:
            return reader.read()

    assert asyncio.run(scenario()) == b"\x00\x00\x00\x01a"

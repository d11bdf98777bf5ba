"""The stdio driver's pipe settings (``relay/channel.py``'s ``_widen_output``), without a process: the pipe asked
for ``PIPE_BYTES`` on Linux, asyncio's read size set only when ``RelayOptions.read_bytes`` asks, and a transport
that has no such size (uvloop's) left as it is. tests/test_relay_many.py watches the reads a real server's
output gets."""

from __future__ import annotations

import fcntl
import os
import sys

import pytest

from diverge_codec.relay.channel import PIPE_BYTES, _widen_output

F_GETPIPE_SZ = 1032


class _Pipe:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd


class _Transport:
    """asyncio's read-pipe transport as ``_widen_output`` sees it: its pipe, and its ``max_size`` (or none)."""

    def __init__(self, pipe: _Pipe | None, max_size: int | None = 256 * 1024) -> None:
        self.pipe = pipe
        if max_size is not None:
            self.max_size = max_size

    def get_extra_info(self, name: str) -> object:
        assert name == "pipe"
        return self.pipe


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe sizes are Linux's (F_SETPIPE_SZ)")
@pytest.mark.parametrize("read_bytes", [None, PIPE_BYTES, 4096])
def test_the_pipe_is_widened_and_the_read_size_set_only_when_asked(read_bytes):
    reading, writing = os.pipe()
    try:
        transport = _Transport(_Pipe(reading))
        _widen_output(transport, read_bytes)  # type: ignore[arg-type]
        limit = int(open("/proc/sys/fs/pipe-max-size").read())
        assert fcntl.fcntl(reading, F_GETPIPE_SZ) == min(PIPE_BYTES, limit) and PIPE_BYTES == 1 << 20
        assert transport.max_size == (256 * 1024 if read_bytes is None else read_bytes)
    finally:
        os.close(reading)
        os.close(writing)


def test_a_transport_without_a_pipe_or_a_read_size_is_left_as_it_is():
    no_size = _Transport(None, max_size=None)
    _widen_output(no_size, PIPE_BYTES)  # type: ignore[arg-type]
    assert not hasattr(no_size, "max_size")
    no_pipe = _Transport(None)
    _widen_output(no_pipe, PIPE_BYTES)  # type: ignore[arg-type]
    assert no_pipe.max_size == PIPE_BYTES

"""A response body's content coding removed in bounded pieces, sans-IO: ``Inflater(coding).feed(data)``.

What the relay asks for (``Accept-Encoding: gzip, deflate``) and what servers send under those names:

- ``gzip`` (and ``x-gzip``): one member or several one after another (RFC 1952 §2.2; what a server that
  compresses each flush on its own sends), each inflated in turn, as urllib3 and aiohttp do; bytes after
  the last member that are not another member are refused, never dropped unsaid;
- ``deflate``: the zlib stream RFC 9110 names, or the raw deflate many servers send instead, told by the
  first byte as aiohttp tells it (a zlib header's low four bits are 8, "deflate").

Each ``feed`` yields at most ``PIECE`` bytes at a time, however far the bytes inflate (a bomb costs the
reader's bounds, not memory); a body that does not inflate is ``BodyError``, naming no byte of it.
"""

from __future__ import annotations

import zlib
from collections.abc import Generator, Iterator
from typing import Any

__all__ = ["CODINGS", "PIECE", "BodyError", "Inflater"]

PIECE = 64 * 1024
"""The most a compressed body is inflated in one step."""
CODINGS = ("gzip", "x-gzip", "deflate")
"""The content codings inflated (``Accept-Encoding: gzip, deflate``); a body in any other is refused, unread."""
GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of every gzip member (RFC 1952)."""


class BodyError(ValueError):
    """A compressed body that does not inflate (its text names no byte of it)."""


class Inflater:
    """One body's inflation: ``feed`` each raw piece as it comes; pieces of at most ``PIECE`` come out."""

    def __init__(self, coding: str) -> None:
        if coding not in CODINGS:
            raise ValueError(f"not a coding the relay inflates: one of {', '.join(CODINGS)}")
        self.gzip: bool = coding != "deflate"
        self.members: int = 0
        """gzip members (or deflate streams) begun so far."""
        self._inflater: Any = None  # the member's decompressor, None between members
        self._head = b""  # a member's first byte, until the second tells what it is

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The inflated bytes of ``data`` (the next raw piece), ``PIECE`` at most at a time."""
        while data:
            if self._inflater is None:
                data, self._head = self._head + data, b""
                if len(data) < 2:  # a member's first two bytes tell it
                    self._head = data
                    return
                self._inflater = self._start(data)
            data = yield from self._inflate(data)

    def _inflate(self, data: bytes) -> Generator[bytes, None, bytes]:
        """Inflate ``data`` into the current member; what follows its end (the next member's bytes) is returned."""
        inflater = self._inflater
        while True:
            try:
                piece = inflater.decompress(data, PIECE)
            except zlib.error:
                raise BodyError("a compressed body that does not inflate") from None
            data = inflater.unconsumed_tail
            if piece:
                yield piece
            if inflater.eof:
                self._inflater = None
                return bytes(inflater.unused_data)
            if not data and len(piece) < PIECE:  # all taken in, nothing held back
                return b""

    def _start(self, data: bytes) -> Any:
        """The decompressor for what starts at ``data``: a gzip member, a zlib stream or raw deflate."""
        self.members += 1
        if self.gzip:
            if data[:2] != GZIP_MAGIC:
                raise BodyError("a compressed body that does not inflate (bytes after its gzip data)")
            return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        if self.members > 1:
            raise BodyError("a compressed body that does not inflate (bytes after its deflate data)")
        zlib_header = data[0] & 0x0F == 8 and int.from_bytes(data[:2], "big") % 31 == 0  # RFC 1950's check
        return zlib.decompressobj(wbits=zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)

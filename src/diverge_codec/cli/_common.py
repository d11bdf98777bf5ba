"""What every subcommand shares: the channels by name, the usage error, reading an input."""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
from collections.abc import Iterator

from .. import mcp_notifications, stream, tools_begin
from ._safe import UsageError, escape

CHANNELS = {"tools-begin": tools_begin, "mcp-notifications": mcp_notifications}
CHUNK = 64 * 1024
"""Bytes asked of the input per read: the constant part of streaming inspect's memory."""
MAX_RECORD_LIMIT = 0xFFFFFFFF


def _cannot(verb: str, name: str, error: OSError) -> UsageError:
    return UsageError(f"cannot {verb} {escape(name)}: {error.strerror or type(error).__name__}")


class Input:
    """A file, or standard input for ``-``, opened at once: a missing file or a directory is
    refused before the command writes anything, not after its header.

    Iterating gives the bytes chunks each read returns, one read at a time, at most
    ``CHUNK`` bytes: a pipe yields what has arrived, so an endless input is processed as
    it comes and memory does not grow with it.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._head = b""
        self._owned = name != "-"
        try:
            self._fd: int | None = (
                os.open(name, os.O_RDONLY | getattr(os, "O_BINARY", 0)) if self._owned  # Windows: no newline translation
                else sys.stdin.fileno()
            )
            mode = os.fstat(self._fd).st_mode
        except OSError as error:
            self.close()
            raise _cannot("read", name, error) from None
        if stat.S_ISDIR(mode):  # POSIX opens a directory read-only; only its read fails
            self.close()
            raise _cannot("read", name, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)))
        self.regular = stat.S_ISREG(mode)
        """A regular file: its first bytes can be read before anything is written without waiting on a writer."""

    def head(self) -> bytes:
        """The first read's bytes, read now and given again by the iteration (a regular file's: a pipe's could wait)."""
        if not self._head and self._fd is not None:
            self._head = self._read()
        return self._head

    def _read(self) -> bytes:
        assert self._fd is not None
        try:
            return os.read(self._fd, CHUNK)
        except OSError as error:
            raise _cannot("read", self.name, error) from None

    def __iter__(self) -> Iterator[bytes]:
        try:
            if self._head:
                yield self._head
            while self._fd is not None and (chunk := self._read()):
                yield chunk
        finally:
            self.close()

    def close(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None and self._owned:
            os.close(fd)

    def __del__(self) -> None:
        self.close()


def chunks(name: str) -> Iterator[bytes]:
    """The bytes chunks of a file, or of standard input for ``-``; the file is opened (or refused) now."""
    return iter(Input(name))


def record_limit(text: str) -> int:
    """argparse type for ``--max-record``: a whole number of bytes the envelope can carry."""
    try:
        value = int(text, 10)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_RECORD_LIMIT:
        raise argparse.ArgumentTypeError(f"--max-record takes a whole number of bytes from 0 to {MAX_RECORD_LIMIT}")
    return value


def max_record_help() -> str:
    return f"largest record accepted, in bytes (default {stream.DEFAULT_MAX_RECORD}, 16 MiB; at most {MAX_RECORD_LIMIT})"

"""What every subcommand shares: the channels by name, the usage error, reading an input."""

from __future__ import annotations

import argparse
import os
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


def chunks(name: str) -> Iterator[bytes]:
    """A file, or standard input for ``-``, as the bytes chunks each read returns.

    One read at a time, at most ``CHUNK`` bytes: a pipe yields what has arrived, so
    an endless input is processed as it comes and memory does not grow with it.
    """
    if name == "-":
        yield from _reads(sys.stdin.fileno(), name)
        return
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_BINARY", 0))  # Windows: no newline translation
    except OSError as error:
        raise _cannot("read", name, error) from None
    try:
        yield from _reads(fd, name)
    finally:
        os.close(fd)


def _reads(fd: int, name: str) -> Iterator[bytes]:
    while True:
        try:
            chunk = os.read(fd, CHUNK)
        except OSError as error:
            raise _cannot("read", name, error) from None
        if not chunk:
            return
        yield chunk


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

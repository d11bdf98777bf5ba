"""What the tool prints and writes made safe: text from a capture, and the files it creates.

A capture is the least trusted input the tool sees. Every string taken from one goes
through ``escape`` before it reaches a terminal or a log, and JSON output is written
with every non-ASCII and control character as a ``\\u`` escape. A capture may also
hold secret values (an Inactive frame's), so a file the tool writes one into is made
by ``create_private``: the user's alone.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

__all__ = ["UsageError", "create_private", "escape", "json_line"]


class UsageError(Exception):
    """Input the tool cannot read: reported as one line, exit 2 (here, in the leaf every command imports)."""


_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape(text: str) -> str:
    """``text`` with every character that is not visible shown as a Python-style escape.

    Visible means ``str.isprintable``: that excludes control characters (newlines,
    ESC and with it every CSI/OSC sequence, DEL, C1), format characters (bidi
    overrides and isolates U+202A-202E and U+2066-2069, zero-width joiners, soft
    hyphen), separators other than the ASCII space, surrogates, private-use and
    unassigned code points. A backslash is doubled, so an escape in the output
    always means the tool wrote it.
    """
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(char if char.isprintable() and char != "\\" else _escaped(char) for char in text)


_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))


def json_line(value: Any) -> str:
    """One JSON Lines record: ASCII only (DEL escaped too), so a terminal shows it as it is."""
    return _ENCODER.encode(value).replace("\x7f", "\\u007f")


_PRIVATE = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
            | getattr(os, "O_BINARY", 0))


def create_private(path: str) -> int:
    """A new file at ``path``, mode 0600 (less if the umask says so), open for writing: its fd.

    A pipe or terminal (a FIFO or character device, ``/dev/null``, ``/dev/stdout``, even
    through a symbolic link) is opened as it is: nothing stays at rest there. Anything
    else but a regular file is refused: a symbolic link to anything else is not followed
    (its target could be any file the user can write), nor is a directory or other
    special file written. A regular file is unlinked, then a new one made with
    ``O_CREAT | O_EXCL | O_NOFOLLOW``, so it takes neither the old one's mode nor its
    other hard links; a name that reappears in between is refused, not opened. Not
    atomic, by choice: the caller writes the path itself as it goes (a relay's capture
    can be read while it grows), where a temporary file renamed at the end would show
    nothing until then; and a run that fails removes its file. A refusal is a UsageError,
    one line naming the path and why, never anything from a file's contents.
    """

    try:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            pass
        else:
            if _is_stream(path):
                return os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
            if not stat.S_ISREG(mode):
                kind = ("a symbolic link, which is not followed" if stat.S_ISLNK(mode)
                        else "a directory" if stat.S_ISDIR(mode) else "not a regular file")
                raise UsageError(f"cannot write {escape(path)}: it is {kind}")
            os.unlink(path)
        return os.open(path, _PRIVATE, 0o600)
    except OSError as error:
        raise UsageError(f"cannot write {escape(path)}: {error.strerror or type(error).__name__}") from None


def _is_stream(path: str) -> bool:
    """A FIFO or character device at ``path``, a link followed."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)

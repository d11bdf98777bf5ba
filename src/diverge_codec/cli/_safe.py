"""Text from a capture made safe to print: nothing in it can move the cursor or forge a line.

A capture is the least trusted input the tool sees. Every string taken from one goes
through ``escape`` before it reaches a terminal or a log, and JSON output is written
with every non-ASCII and control character as a ``\\u`` escape.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["escape", "json_line"]


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

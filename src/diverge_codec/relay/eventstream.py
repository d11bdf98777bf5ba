"""Server-sent events as bytes, sans-IO: what MCP's Streamable HTTP transport sends its messages in.

An event's ``data`` is handed on as the server's bytes, not decoded text, so a message over
HTTP goes through ``relay_frame`` exactly as a stdio line does (invalid UTF-8 is refused
there, in the channel's words, not replaced here). The rules are the WHATWG HTML
standard's "event stream interpretation": lines end with CRLF, LF or CR (a lone CR ends
its line at once; an LF after it, even in the next chunk, is skipped); a line starting with
``:`` is a comment; a field without a colon has an empty value; one space after the colon
is removed; ``data`` lines are joined with LF; a blank line dispatches the event; ``id`` sets
the last event id (the resumption point) when its event ends, even an event with no data
(as MCP servers send to prime a stream), unless it holds NUL: an event the stream breaks off
inside does not move it, so a resumed stream replays it; an event with no data is not dispatched;
``event`` sets the type; ``retry`` counts only when all ASCII digits; a leading byte
order mark is skipped.

Work is linear in the bytes fed however they are cut, and memory is bounded: an event
whose data grows past ``max_data`` bytes is not kept, only counted (``too_large``); a line
longer than ``max_data`` + ``LINE_SLACK`` is never held, only read as it passes (a ``data``
line makes its event too large, an ``id`` line is ignored, an ``event`` line makes its event
one ``named`` cannot keep, a ``retry`` is read digit by digit); a ``retry`` of any length is
clamped to ``MAX_RETRY_MS`` without converting its digits; ``RecentIds`` keeps a 64-bit hash
per id, at most ``capacity`` of them. An event whose own ``id`` (a non-empty one, in its
block) is in ``seen`` is a replay: dropped and counted (``replayed``), of any type.

The compiled parser (``_eventstream_c``) serves where the compiled core is built, its pure
twin (``_eventstream_py``) elsewhere: the same behaviour, held to each other by a
differential test and a fuzzer (``fuzz/fuzz_eventstream.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._implementation import IMPLEMENTATION

if TYPE_CHECKING or IMPLEMENTATION == "python":
    from .._eventstream_py import (
        LINE_SLACK, MAX_DATA, MAX_RETRY_MS, NAMED_DATA_LIMIT, NAMED_LIMIT, EventParser, RecentIds,
    )
else:
    from .._eventstream_c import (
        LINE_SLACK, MAX_DATA, MAX_RETRY_MS, NAMED_DATA_LIMIT, NAMED_LIMIT, EventParser, RecentIds,
    )

__all__ = ["LINE_SLACK", "MAX_DATA", "MAX_RETRY_MS", "NAMED_DATA_LIMIT", "NAMED_LIMIT", "EventParser", "RecentIds"]

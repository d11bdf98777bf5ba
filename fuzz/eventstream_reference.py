"""What ``EventParser`` must give for a whole stream, the WHATWG rules written out plainly (a regex
line split, whole lines, exact ids): the reference for ``fuzz/eventstream_check.py`` and the tests."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

MAX_RETRY_MS, NAMED_LIMIT, NAMED_DATA_LIMIT, LINE_SLACK = 600_000, 16, 4096, 64
_LONG = object()  # an event type on a line too long to keep


@dataclass
class Outcome:
    """What a stream gave: message data in order, and the parser's attributes at its end."""

    messages: list[bytes] = field(default_factory=list)
    last_event_id: bytes | None = None
    retry_ms: int | None = None
    too_large: int = 0
    replayed: int = 0
    named: list[tuple[bytes, bytes]] = field(default_factory=list)
    named_dropped: int = 0
    seen: int = 0


def parse(stream: bytes, max_data: int, capacity: int | None) -> Outcome:
    """The outcome of ``stream`` fed whole and closed, with a RecentIds of ``capacity`` (None: no seen)."""
    out = Outcome()
    seen: deque[bytes] | None = None if capacity is None else deque(maxlen=capacity)
    if stream.startswith(b"\xef\xbb\xbf"):
        stream = stream[3:]
    data: list[bytes] = []
    kind: object = b""
    own: bytes | None = None
    for line in re.split(rb"\r\n|\r|\n", stream)[:-1]:  # the last piece has no line end: discarded
        if not line:
            if own is not None:
                out.last_event_id = own
            if data:
                _dispatch(out, seen, b"\n".join(data), kind, own or None, max_data)
            data, kind, own = [], b"", None
            continue
        if line.startswith(b":"):
            continue
        name, _, value = line.partition(b":")
        value = value[1:] if value.startswith(b" ") else value
        long = len(line) > max_data + LINE_SLACK
        if name == b"data":
            data.append(value)
        elif name == b"id" and not long and b"\0" not in value:
            own = value
        elif name == b"event":
            kind = _LONG if long else value
        elif name == b"retry" and value.isdigit():
            digits = value.lstrip(b"0")
            out.retry_ms = MAX_RETRY_MS if len(digits) > 6 else min(int(digits or b"0"), MAX_RETRY_MS)
    out.seen = 0 if seen is None else len(seen)
    return out


def _dispatch(out: Outcome, seen: deque[bytes] | None, data: bytes, kind: object, own: bytes | None,
              max_data: int) -> None:
    if own is not None and seen is not None:
        if own in seen:
            out.replayed += 1
            return
        seen.append(own)
    if kind is _LONG or kind not in (b"", b"message"):
        if kind is _LONG or len(data) > min(max_data, NAMED_DATA_LIMIT) or len(out.named) >= NAMED_LIMIT:
            out.named_dropped += 1
        else:
            out.named.append((kind, data))  # type: ignore[arg-type]
    elif len(data) > max_data:
        out.too_large += 1
    else:
        out.messages.append(data)

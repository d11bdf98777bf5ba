"""The mcp-notifications channel response codec in pure Python: the twin of ``_mcp_notifications_c.pyx``.

A payload is tag 0 and one notification's JSON, as the container's server sent it,
or tag 1 and the ErrorData that ends the stream.
"""

from __future__ import annotations

import operator
import re
import sys
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any, Union

from . import _json, errors
from ._model import (
    ErrorData,
    _immutable,
    _slot,
    _view,
    as_bytes,
    error_data_from_json,
    immutable_error,
    never_initialised,
    notification_from,
    notification_problem,
    repr_error,
    repr_notification,
    unset_attribute,
)
from ._model import McpNotificationsTag as Tag
from .errors import McpNotificationsBodyParseError as BodyParseError
from .errors import McpNotificationsEmptyFrameError as EmptyFrameError
from .errors import McpNotificationsErrorParseError as ErrorParseError
from .errors import McpNotificationsFrameError as FrameError
from .errors import McpNotificationsNotificationParseError as NotificationParseError
from .errors import McpNotificationsUnknownTagError as UnknownTagError
from ._model import Refused
from typing import ClassVar, NoReturn  # (annotations)
from ._model import DelAttr, SetAttr

__all__ = [
    "BodyParseError", "EmptyFrameError", "Error", "ErrorParseError", "Frame", "FrameError",
    "Notification", "NotificationParseError", "Tag", "UnknownTagError", "decode",
    "decode_many", "encode", "encode_into", "frame_notification", "frame_notifications",
    "JSONRPC_NOTIFICATION_PREFIX", "splice_notification", "ChunkFramer",
]

_CHANNEL = "mcp notifications"


class Notification:
    """One notification, every member as the server sent it (``_meta`` and ``jsonrpc`` too). Tag 0.

    ``notification`` is a read-only view; the members inside it (``params``) are the
    caller's, and encode checks the whole notification again.
    """

    __slots__ = ("_notification", "method")
    __match_args__ = ("notification",)
    tag = Tag.NOTIFICATION
    _notification: dict[str, Any]
    method: str

    def __init__(self, notification: dict[str, Any]) -> None:
        copied = notification_from(notification) if _slot(self, "method") is None else immutable_error(self)
        if type(copied) is not dict:
            notification = None  # type: ignore[assignment]  # a traceback's captured locals show no value
            raise copied  # type: ignore[misc]
        object.__setattr__(self, "_notification", copied)
        object.__setattr__(self, "method", copied["method"])

    __setattr__: ClassVar[SetAttr] = _immutable
    __delattr__: ClassVar[DelAttr] = _immutable

    @property
    def notification(self) -> Mapping[str, Any]:
        return _view(self, "_notification", "notification")

    @property
    def params(self) -> dict[str, Any] | None:
        """The params member, the same dict ``notification`` holds; None where it is absent or null."""
        held = _slot(self, "_notification")
        if held is None:
            raise unset_attribute(self, "params")
        return held.get("params")  # type: ignore[no-any-return]

    def __eq__(self, other: object) -> bool:
        if type(other) is not Notification:
            return NotImplemented
        return _slot(self, "_notification") == _slot(other, "_notification")  # type: ignore[no-any-return]

    __hash__: ClassVar[None] = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr_notification(_slot(self, "method"), _slot(self, "_notification"))

    def __reduce__(self) -> tuple[Any, ...]:
        return Notification, (self._notification,)


class Error:
    """The stream ended early, and this is why: rmcp's ErrorData. Tag 1."""

    __slots__ = ("error",)
    __match_args__ = ("error",)
    tag = Tag.ERROR
    error: ErrorData

    def __init__(self, error: ErrorData) -> None:
        if _slot(self, "error") is not None:
            raise immutable_error(self)
        if type(error) is not ErrorData:
            failure = TypeError(f"Error takes an ErrorData, not {type(error).__name__}")
            error = None  # type: ignore[assignment]  # a traceback's captured locals show no value
            raise failure
        object.__setattr__(self, "error", error)

    __setattr__: ClassVar[SetAttr] = _immutable
    __delattr__: ClassVar[DelAttr] = _immutable

    def __eq__(self, other: object) -> bool:
        if type(other) is not Error:
            return NotImplemented
        return _slot(self, "error") == _slot(other, "error")  # type: ignore[no-any-return]

    __hash__: ClassVar[None] = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr_error(_slot(self, "error"))

    def __reduce__(self) -> tuple[Any, ...]:
        return Error, (self.error,)


Frame = Union[Notification, Error]


class _UnsealedNotification:
    """Notification's layout without its guard: decode fills one, then makes it a Notification.

    Assigning ``__class__`` between classes of one layout is plain Python, and costs
    less than ``object.__new__`` and a descriptor call per member (measured: 100 ns
    against 165 ns, a seventh of a 180-byte decode).
    """

    __slots__ = ("_notification", "method")
    _notification: dict[str, Any]
    method: str


_new = object.__new__
_set_error = Error.error.__set__  # type: ignore[attr-defined,misc]
_loads, _DecodeFailure, _VIEW_FROM = _json.loads, _json.DecodeFailure, _json.VIEW_FROM  # chosen once, at import


def decode(payload: bytes | bytearray | memoryview, /) -> Frame:
    """Read one channel response payload. Raises a FrameError subclass, never quoting the payload."""
    data = payload if type(payload) is bytes else as_bytes(payload)
    if data is None:
        failure: Exception = errors.payload_type_error(_CHANNEL, payload)
        payload = None  # type: ignore[assignment]  # a traceback's captured locals show no value
        raise failure
    if not data:
        raise EmptyFrameError()
    tag = data[0]
    if tag > 1:
        payload = data = None  # type: ignore[assignment]  # a traceback's captured locals show no value
        raise UnknownTagError(tag)
    reason = None
    try:
        # A large body is read through a view of the payload, not a second copy.
        parsed = _loads(data[1:] if len(data) <= _VIEW_FROM else memoryview(data)[1:])
    except _DecodeFailure as problem:
        reason = _json.failure_reason(problem)
    else:
        if tag == 0:
            # notification_problem's rules, inlined for the hot path; it names what failed.
            if type(parsed) is dict and type(method := parsed.get("method")) is str and (
                (params := parsed.get("params")) is None
                or (type(params) is dict and ((meta := params.get("_meta")) is None or type(meta) is dict))
            ):
                unsealed = _UnsealedNotification()
                unsealed._notification = parsed
                unsealed.method = method
                unsealed.__class__ = Notification  # type: ignore[assignment]
                return unsealed  # type: ignore[return-value]
            reason = notification_problem(parsed) or errors.NOT_AN_OBJECT  # never None here; typed so
        else:
            try:
                frame = _new(Error)
                _set_error(frame, error_data_from_json(parsed))
                return frame
            except Refused as refused:
                reason = refused.reason
    payload = data = parsed = method = params = meta = None  # type: ignore[assignment]  # a traceback's captured locals show no value
    raise (NotificationParseError if tag == 0 else ErrorParseError)(reason)


def decode_many(payloads: Iterable[bytes | bytearray | memoryview], /) -> list[Frame]:
    """Decode each payload in order. A failure is raised with ``.index`` naming the payload."""
    frames = []
    index = 0
    try:
        for index, payload in enumerate(payloads):
            frames.append(decode(payload))
    except FrameError as failure:
        failure.index = index
        payloads = payload = frames = None  # type: ignore[assignment]  # a traceback's captured locals show no value
        raise
    return frames


def _body(frame: Frame) -> bytes:
    """The JSON of a frame: a notification's shape checked again (its params may have changed), then the one writing contract."""
    kind = type(frame)
    reason = None
    try:
        if kind is Notification:
            body: Any = frame._notification  # type: ignore[union-attr]
            # The members are read-only, the params are not: their checks again (notification_problem's).
            if not ((params := body.get("params")) is None
                    or (type(params) is dict and ((meta := params.get("_meta")) is None or type(meta) is dict))):
                reason = notification_problem(body)
        elif kind is Error:
            body = frame.error  # type: ignore[union-attr]
        else:
            raise TypeError(f"not an mcp notifications response frame: {kind.__name__}")
    except AttributeError:
        raise never_initialised(_CHANNEL, frame) from None
    if kind is Error:
        body = body.to_json()
    if reason is None:
        try:
            return _json.dumps(body)
        except _json.EncodeFailure as problem:
            reason = _json.failure_reason(problem)
    body = frame = params = meta = None  # type: ignore[assignment]  # a traceback's captured locals show no value
    raise errors.EncodeError(f"mcp notifications {kind.__name__} could not be encoded: {reason}")


def encode(frame: Frame, /) -> bytes:
    """The payload for a frame: its tag, then its JSON."""
    body = _body(frame)
    return (b"\x00" if type(frame) is Notification else b"\x01") + body


def encode_into(frame: Frame, buffer: bytearray) -> None:
    """Append a frame's payload (``encode(frame)``, exactly) to ``buffer``, a bytearray; on failure it is left as it was."""
    if type(buffer) is not bytearray:
        raise TypeError(f"encode_into appends to a bytearray, not {type(buffer).__name__}")
    buffer += encode(frame)  # one resize and copy: a tag appended alone would stay if the body's failed


def frame_notification(raw_json: bytes | bytearray | memoryview, /) -> bytes:
    """Tag 0 and a notification's JSON, not parsed: the relay's hot path."""
    if type(raw_json) is bytes:
        return b"\x00" + raw_json
    raw = as_bytes(raw_json)
    if raw is None:
        failure = errors.raw_json_type_error("frame_notification", raw_json)
        raw_json = None  # type: ignore[assignment]  # a traceback's captured locals show no value
        raise failure
    return b"\x00" + raw


def frame_notifications(raw_jsons: Iterable[bytes | bytearray | memoryview], /) -> list[bytes]:
    """frame_notification of each, in order."""
    return [frame_notification(raw) for raw in raw_jsons]


JSONRPC_NOTIFICATION_PREFIX = b'{"jsonrpc":"2.0","method":"'
"""How mcp 2.x begins a JSON-RPC notification (the TypeScript SDK and mcp 1.x put the envelope last)."""

_SPACE = b" \t\n\r"
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[][{},]', re.DOTALL)  # strings, brackets, commas
_ENVELOPE_KEY = b'"jsonrpc"'
_ENVELOPE_LAST = b',"jsonrpc":"2.0"}'
_ENVELOPE_FIRST = b'{"jsonrpc":"2.0",'


def splice_notification(message: bytes | bytearray | memoryview, /) -> bytes | None:
    """The channel payload for one JSON-RPC message: tag 0 and the notification, envelope removed.

    None for a message that is no notification (an object with an ``id``, JSON that is
    not an object, or a line of JSON whitespace alone); NotificationParseError, as ``decode`` words it, for one the
    channel refuses (not JSON as the parser reads it, a method that is no string, params
    or params._meta of the wrong kind). Every top-level ``jsonrpc`` member is removed
    wherever it stands, and every other byte of the document is kept (outer whitespace
    is not part of it).
    """
    line = message if type(message) is bytes else as_bytes(message)
    if line is None:
        raise errors.raw_json_type_error("splice_notification", message)
    if not line.strip(_SPACE):
        return None  # a blank line is no message
    reason = None
    try:
        parsed = _loads(line)
    except _DecodeFailure as problem:  # raised below, outside this block: no chained parser error
        reason = _json.failure_reason(problem)
    if reason is None:
        if type(parsed) is not dict or "id" in parsed:
            return None
        reason = notification_problem(parsed)
    if reason is not None:
        raise NotificationParseError(reason)
    document = line.strip(_SPACE)
    if "jsonrpc" not in parsed:
        return b"\x00" + document
    if document.count(_ENVELOPE_KEY) == 1 and b"\\u" not in document:  # one envelope member, spelled plainly
        # As the SDKs write it, last or first: the bytes around it settle that it is a member of the
        # object itself (a string cannot hold an unescaped quote), and the cut is the one below.
        if document.endswith(_ENVELOPE_LAST) and document[-len(_ENVELOPE_LAST) - 1] not in _SPACE:
            return b"\x00" + document[:-len(_ENVELOPE_LAST)] + b"}"
        if document.startswith(_ENVELOPE_FIRST) and document[len(_ENVELOPE_FIRST):len(_ENVELOPE_FIRST) + 1] == b'"':
            return b"\x00{" + document[len(_ENVELOPE_FIRST):]
    kept, at = [b"\x00"], 0
    for start, end in _envelope_cuts(document):
        kept.append(document[at:start])
        at = end
    kept.append(document[at:])
    return b"".join(kept)


def _envelope_cuts(document: bytes) -> list[tuple[int, int]]:
    """The byte ranges that remove every top-level ``jsonrpc`` member of a valid JSON object.

    A run of such members goes from its first key to the next kept member's key; a run
    at the end, from the end of the last kept value before it (its comma included); a
    run that is every member, from its first key to its last value's end.
    """
    members = []  # (key start, value end, is the envelope)
    depth, key_start, envelope, expect_key = 0, 0, False, False
    for token in _TOKENS.finditer(document):
        char = document[token.start()]
        if char == 0x22:  # '"'
            if depth == 1 and expect_key:
                key = token.group()
                key_start, expect_key = token.start(), False
                envelope = key == _ENVELOPE_KEY or (b"\\" in key and _loads(key) == "jsonrpc")
        elif char in b"[{":
            depth += 1
            expect_key = depth == 1
        elif depth == 1 and char in b",}":
            if char == 0x2C or not expect_key:  # a comma, or the brace closing a member (not '{}')
                members.append((key_start, _value_end(document, token.start()), envelope))
            expect_key = True
            depth -= char == 0x7D
        elif char in b"]}":
            depth -= 1
    cuts, run, before = [], None, None
    for index, (start, end, envelope) in enumerate(members):
        if envelope and run is None:
            run, before = start, members[index - 1][1] if index else None
        elif not envelope and run is not None:
            cuts.append((run, start))
            run = None
    if run is not None:
        cuts.append((run if before is None else before, members[-1][1]))
    return cuts


def _value_end(document: bytes, position: int) -> int:
    while document[position - 1] in _SPACE:
        position -= 1
    return position


# ChunkFramer: the relay's hot loop (the compiled twin: _mcp_notifications_chunks.pxi).

MAX_RECORD = 0xFFFFFFFF
"""The largest payload a record's 4-byte length can say."""

FRAMER_NOT_READY = "ChunkFramer is not initialised: its __init__ did not run to the end"
FRAMER_INIT_TWICE = "ChunkFramer.__init__ runs once: make a new framer instead of re-initialising one"
FRAMER_BUSY = ("ChunkFramer is in use: feed, feed_messages and close cannot run inside a call of the same "
               "framer (from a callback, a hook or another thread)")
FRAMER_NO_PICKLE = "ChunkFramer cannot be pickled or copied: it holds a partial line; make a new framer"

Framed = tuple[bytes, int, int, int, list[bytes]]
"""What a framer call returns: (records, count, payload_bytes, largest, others)."""

_EMPTY_FRAMED_TAIL = (0, 0, 0)


def framer_limits(max_line: int, record_limit: int) -> tuple[int, int]:
    """The two limits as ints, or the ValueError both cores raise."""
    max_line, record_limit = operator.index(max_line), operator.index(record_limit)
    if not 1 <= max_line <= sys.maxsize:
        raise ValueError(f"max_line must be from 1 to {sys.maxsize}")
    if not 1 <= record_limit <= MAX_RECORD:
        raise ValueError(f"record_limit must be from 1 to {MAX_RECORD}: what a record's 4-byte length can say")
    return max_line, record_limit


def framer_chunk(data: object, method: str) -> bytes:
    """The bytes of a chunk or message, as an immutable ``bytes`` (a copy unless it is one)."""
    if type(data) is bytes:
        return data
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"ChunkFramer.{method} takes bytes, bytearray or memoryview, not {type(data).__name__}")
    return bytes(memoryview(data))


def framer_parse(line: bytes) -> bytes | None | bool:
    """``splice_notification`` by the parser, False where it refuses: the compiled framer's way to
    the parser for what its scan leaves (no exception comes back through C)."""
    try:
        return splice_notification(line)
    except errors.DecodeError:
        return False


def framer_awaiting(awaiting: object) -> Container[object] | None:
    """The ``awaiting`` of a framer, checked: None, or a container (``in`` is all it is asked)."""
    if awaiting is not None and not isinstance(awaiting, Container):
        raise TypeError(f"awaiting must be a container of request ids (a dict or set) or None, not {type(awaiting).__name__}")
    return awaiting


def _with_id(line: bytes | bytearray | memoryview) -> dict[str, Any] | None:
    """The line parsed, if it is a JSON object with an ``id`` member (a request or a response)."""
    try:
        message = _json.loads(line)
    except ValueError:  # a caller's own splice may pass a line that is no JSON
        return None
    return message if type(message) is dict and "id" in message else None


def framer_wanted(line: bytes, awaiting: Container[object]) -> bool:
    """Whether a line that is no notification goes back to the framer's caller: a request (an object
    with an ``id`` and a ``method``), or a response whose ``id`` is an integer ``awaiting`` holds (the
    last ``id`` member, as the parser keeps it). Anything else is counted ``ignored``."""
    message = _with_id(line)
    if message is None:
        return False
    request_id = message["id"]
    return "method" in message or (type(request_id) is int and request_id in awaiting)


def request_head(line: bytes) -> tuple[object, object] | None:
    """``(id, method)`` of a JSON-RPC request (an object with both members: the last of each, read as
    the parser reads them); None for any other line. What the relay answers a server's request by."""
    if not isinstance(line, (bytes, bytearray, memoryview)):  # both JSON backends: one refusal
        raise TypeError(f"request_head takes bytes, bytearray or memoryview, not {type(line).__name__}")
    message = _with_id(line)
    if message is None or "method" not in message:
        return None
    return message["id"], message["method"]


def framer_messages(messages: Iterable[object]) -> list[bytes]:
    """The messages of a ``feed_messages`` call, each as ``bytes``, taken whole before any is read."""
    return [framer_chunk(message, "feed_messages") for message in list(messages)]


class ChunkFramer:
    """The relay's hot loop: a server's output in, the channel's records out, one call per chunk.

    ``feed`` splits a chunk into lines (a partial last line is carried to the next call),
    makes each notification a record (the 4-byte big-endian length, then
    ``splice_notification``'s payload) and returns ``(records, count, payload_bytes,
    largest, others)``: the records, how many, their payloads' total and largest size, and
    the lines that are no notification (answers, requests, other JSON), in order. Blank
    lines (JSON whitespace only) are dropped. A line over ``max_line`` (its newline not
    counted; never held whole) and a payload over ``record_limit`` add to ``too_large``, a
    notification the channel would refuse to ``invalid``: the counters only grow. With
    ``awaiting`` (the ids a client waits on: a dict or set it keeps changing), only requests
    and the responses whose integer ``id`` is in it come back; other lines that are no
    notification add to ``ignored`` instead, unparsed by the compiled core.
    ``feed_messages`` reads whole messages (an HTTP body, an event's data) as lines;
    ``close`` reads the last line when the output ended inside one. One framer reads one
    stream: a call from inside another (a callback, a hook, another thread) raises
    RuntimeError.
    """

    # What a framer whose __init__ has not run to the end reads as, as the compiled twin's fields do.
    _claimed = False
    _busy = False
    _parts: list[bytes] | None = None
    _held = 0
    _skipping = False
    _max_line = 0
    _record_limit = 0
    _invalid = 0
    _too_large = 0
    _ignored = 0
    _awaiting: Container[object] | None = None

    def __init__(self, max_line: int, record_limit: int, *, awaiting: Container[object] | None = None) -> None:
        if self._claimed:
            raise RuntimeError(FRAMER_INIT_TWICE)
        self._claimed = True
        self._max_line, self._record_limit = framer_limits(max_line, record_limit)
        self._awaiting = framer_awaiting(awaiting)
        self._splice: Callable[[bytes], bytes | None] = splice_notification  # the relay's session may swap in its own
        self._parts = []  # the last store: from here the framer is ready

    @property
    def max_line(self) -> int:
        """The longest line read, in bytes, its newline not counted."""
        return self._max_line

    @property
    def record_limit(self) -> int:
        """The largest payload written as a record."""
        return self._record_limit

    @property
    def invalid(self) -> int:
        """Notifications the channel would refuse (not JSON, a method that is no string, ...): not framed."""
        return self._invalid

    @property
    def too_large(self) -> int:
        """Lines over ``max_line`` and payloads over ``record_limit``: not framed."""
        return self._too_large

    @property
    def ignored(self) -> int:
        """Lines that are no notification, no request and no answer ``awaiting`` holds: not returned."""
        return self._ignored

    @property
    def awaiting(self) -> Container[object] | None:
        """The ids whose answers come back (None: every line that is no notification does)."""
        return self._awaiting

    @property
    def pending(self) -> int:
        """Bytes of a partial line held for the next call."""
        return self._held

    def __repr__(self) -> str:
        if self._parts is None:
            return "<ChunkFramer not initialised>"
        return (f"<ChunkFramer invalid={self._invalid} too_large={self._too_large} ignored={self._ignored}"
                f" pending={self._held}>")

    def __reduce__(self) -> Any:
        raise TypeError(FRAMER_NO_PICKLE)

    def _enter(self) -> None:
        if self._parts is None:
            raise RuntimeError(FRAMER_NOT_READY)
        if self._busy:
            raise RuntimeError(FRAMER_BUSY)
        self._busy = True

    def feed(self, data: bytes | bytearray | memoryview, /) -> Framed:
        """Read the next chunk of the server's output: the records of the lines it completes."""
        self._enter()
        try:
            return self._frame(self._split(framer_chunk(data, "feed")))
        finally:
            self._busy = False

    def feed_messages(self, messages: Iterable[bytes | bytearray | memoryview], /) -> Framed:
        """Read whole messages, each as one line (newlines inside it are JSON whitespace)."""
        self._enter()
        try:
            limit, kept = self._max_line, []
            for message in framer_messages(messages):
                if len(message) > limit:
                    self._too_large += 1
                elif message.strip(_SPACE):
                    kept.append(message)
            return self._frame(kept)
        finally:
            self._busy = False

    def close(self) -> Framed:
        """The output ended: the record of its last line if it had no newline (the framer starts afresh)."""
        self._enter()
        try:
            parts, skipping = self._parts, self._skipping
            self._parts, self._held, self._skipping = [], 0, False
            lines: list[bytes] = []
            if not skipping and parts:
                self._keep(lines, b"".join(parts))
            return self._frame(lines)
        finally:
            self._busy = False

    def _split(self, data: bytes) -> list[bytes]:
        newline = data.find(b"\n")
        if newline < 0:
            self._hold(data)
            return []
        lines: list[bytes] = []
        if self._skipping:
            self._skipping = False
        else:
            parts = self._parts
            self._keep(lines, b"".join((*parts, data[:newline])) if parts else data[:newline])
        self._parts, self._held = [], 0
        rest = data[newline + 1:].split(b"\n")
        self._hold(rest.pop())
        for line in rest:
            self._keep(lines, line)
        return lines

    def _hold(self, data: bytes) -> None:
        if self._skipping or not data:
            return
        self._held += len(data)
        if self._held > self._max_line:
            self._too_large += 1
            self._parts, self._held, self._skipping = [], 0, True
        else:
            self._parts.append(data)  # type: ignore[union-attr]  # _enter ruled out None

    def _keep(self, lines: list[bytes], line: bytes) -> None:
        if len(line) > self._max_line:
            self._too_large += 1
        elif line.strip(_SPACE):
            lines.append(line)

    def _frame(self, lines: list[bytes]) -> Framed:
        if not lines:
            return (b"", *_EMPTY_FRAMED_TAIL, [])
        splice, limit, awaiting = self._splice, self._record_limit, self._awaiting
        records: list[bytes] = []
        others: list[bytes] = []
        count = total = largest = 0
        for line in lines:
            try:
                payload = splice(line)
            except errors.DecodeError:
                self._invalid += 1
                continue
            if payload is None:
                if awaiting is None or framer_wanted(line, awaiting):
                    others.append(line)
                else:
                    self._ignored += 1
                continue
            size = len(payload)
            if size > limit:
                self._too_large += 1
                continue
            records += (size.to_bytes(4, "big"), payload)
            count += 1
            total += size
            if size > largest:
                largest = size
        return b"".join(records), count, total, largest, others


# decode_lazy: routing without parsing (the compiled twin: _mcp_notifications_lazy.pxi).

__all__ += ["LazyNotification", "decode_lazy"]

_PARAMS_KEY = b'"params"'


def _immutable(self: object, name: str, value: object = None) -> NoReturn:  # type: ignore[no-redef]
    raise AttributeError(f"{type(self).__name__} is immutable")


class LazyNotification:
    """A notification read for routing: its ``method``, and its params as the JSON bytes sent.

    ``params_json`` is None where the notification has no ``params`` member, and
    ``b"null"`` where it is null: the bytes as sent, never re-serialized. ``materialize()``
    is what ``decode`` gives. Made by ``decode_lazy`` only; immutable; its repr shows the
    method and the params' size, never a value. Its ``tag`` is a Notification's, so a
    sequence checker takes it as one.
    """

    __slots__ = ("method", "_payload", "_span")
    tag: ClassVar[Tag] = Tag.NOTIFICATION
    method: str
    _payload: bytes
    _span: tuple[int, int] | None

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("LazyNotification is made by decode_lazy")

    # its own: the frame classes' guard may change apart from it
    __setattr__: ClassVar[SetAttr] = _immutable
    __delattr__: ClassVar[DelAttr] = _immutable

    def __getattr__(self, name: str) -> Any:
        # Reached where a slot is unset (made by __new__ alone): the compiled core's message, which
        # CPython 3.14 would otherwise give as "'diverge_codec._mcp_notifications_py.LazyNotification' ...".
        raise unset_attribute(self, name)

    @property
    def params_json(self) -> bytes | None:
        try:
            span = self._span
        except AttributeError:  # made by __new__ alone: named as the compiled core names it, not by its slot
            raise unset_attribute(self, "params_json") from None
        return None if span is None else self._payload[span[0]:span[1]]

    def materialize(self) -> Notification:
        """The Notification that ``decode`` gives for this payload (the params parsed now)."""
        return decode(self._payload)  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        if type(other) is not LazyNotification:
            return NotImplemented
        return self._payload == other._payload

    __hash__: ClassVar[None] = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if not hasattr(self, "_payload"):  # made with __new__: a repr all the same
            return "LazyNotification(<not initialised>)"
        span = self._span
        params = "None" if span is None else f"<{span[1] - span[0]} bytes>"
        return f"LazyNotification(method={self.method!r}, params_json={params})"

    def __reduce__(self) -> tuple[Any, ...]:
        return decode_lazy, (self._payload,)


def decode_lazy(payload: bytes | bytearray | memoryview, /) -> LazyNotification | Error:
    """Read a payload for routing: a LazyNotification (method, raw params) for tag 0, else what ``decode`` gives.

    It accepts and refuses exactly what ``decode`` does, with the same errors: this
    twin parses the body with the JSON backend, in two pieces where it can (``_split``).
    """
    data = payload if type(payload) is bytes else as_bytes(payload)  # one copy, read throughout
    if data is not None and data[:1] == b"\x00":
        split = _split(data)
        if split is not None:
            return split
    frame = decode(payload if data is None else data)
    if type(frame) is not Notification:
        return frame  # type: ignore[return-value]
    # A params member, under whatever spelling, is in the dict: only then is there a span to find.
    return _lazy(frame.method, data, _params_span(data) if "params" in frame._notification else None)  # type: ignore[arg-type]


def _lazy(method: str, data: bytes, span: tuple[int, int] | None) -> LazyNotification:
    lazy = _new(LazyNotification)
    _set = object.__setattr__
    _set(lazy, "method", method)
    _set(lazy, "_payload", data)
    _set(lazy, "_span", span)
    return lazy


_WS = rb"[ \t\n\r]*"
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
_MEMBER = _WS + _STRING + _WS + b":" + _WS + rb"(?:" + _STRING + rb"|[-+.0-9eE]+|true|false|null)" + _WS
_HEAD = re.compile(_WS + rb"\{(?:" + _MEMBER + rb",)*" + _WS + rb'"params"' + _WS + b":" + _WS, re.DOTALL)
_TAIL = re.compile(rb"(?:" + _WS + b"," + _MEMBER + rb")*" + _WS + rb"\}" + _WS, re.DOTALL)


def _split(data: bytes) -> LazyNotification | None:
    """The usual notification, parsed as two documents whose costs add up to one parse; None: let decode do it.

    Where the members before ``params`` are plain values (``_HEAD``), the params object ends at
    the last-but-one closing brace and plain members follow it (``_TAIL``), the backend reads the
    params and the rest with ``null`` in its place. Both pieces cut at ASCII bytes outside
    strings, so the body is valid JSON exactly when both are, the params are one value and they
    nest one level less than the limit (the body's root is one more): read in brackets, so that
    the nesting counts as in the body, or through a view where too few brackets are there to
    reach it (a copy costs a fifth of a parse of one long string). With no params key after
    it, that object is the params. Anything else (a failed piece included) goes to decode,
    which words the refusal.
    """
    start, method = _params_start(data)
    if start < 0:
        return None
    last = data.rfind(b"}")
    end = data.rfind(b"}", start, last) + 1
    if data[start:start + 1] != b"{" or not end:
        return None
    tail = data[end:]
    if method is None or tail not in _USUAL_TAILS:  # else the rest is known bytes: valid, its method read
        if _TAIL.fullmatch(data, end) is None or b'"params"' in tail or b"\\" in tail:  # a params key after these, perhaps
            return None
        method = None
    view = memoryview(data)[start:end]
    try:
        params = None
        if _json.READS_VIEWS and data.find(b"[", start, start + _PROBE) < 0:
            params = _loads(view)  # its nesting checked after: where it is flat, no scan of the params at all
            if not _flat(params) and not _shallow(data, start, end):
                params = None
        if params is None:
            params = _loads(b"".join((b"[", view, b"]")))
            params = params[0] if len(params) == 1 else None
        if method is None:
            rest = _loads(data[1:start] + b"null" + tail)
            method = rest.get("method") if type(rest) is dict else None
    except _DecodeFailure:
        return None
    if type(params) is not dict or type(method) is not str:
        return None
    if (meta := params.get("_meta")) is not None and type(meta) is not dict:
        return None
    return _lazy(method, data, (start, end))


# How the SDKs begin and end a notification (mcp's envelope first, the TypeScript SDK's last, or none):
# read without the regex, and without a parse of the rest where the method is printable ASCII.
_USUAL_HEADS = (b'\x00{"jsonrpc":"2.0","method":"', b'\x00{"method":"')
_USUAL_TAILS = (b"}", b',"jsonrpc":"2.0"}')


def _params_start(data: bytes) -> tuple[int, str | None]:
    """Where the params value starts after _HEAD (-1: no match), and, for a usual head whose method
    is printable ASCII with no backslash, that method (else None): a few compares cost less than
    the regex."""
    for usual in _USUAL_HEADS:
        if data.startswith(usual):
            quote = data.find(b'"', len(usual))
            if data.startswith(b',"params":', quote + 1):
                text = data[len(usual):quote]
                if text.isascii() and (method := text.decode()).isprintable() and "\\" not in method:
                    return quote + 11, method
            break
    head = _HEAD.match(data, 1)
    return (-1, None) if head is None else (head.end(), None)


_PROBE = 512
"""Params with a '[' in their first bytes (lists of items, numbers, a tree) are read in brackets at
once: read through a view first, their nesting unchecked, they would be read twice."""


def _flat(params: object) -> bool:
    """Whether the params are an object of at most 32 members, none an object or a list: nested one
    deep, whatever brackets their strings hold (the common case, checked without a scan)."""
    if type(params) is not dict or len(params) > 32:
        return False
    for value in params.values():
        if type(value) is dict or type(value) is list:
            return False
    return True


def _shallow(data: bytes, start: int, end: int) -> bool:
    """Whether data[start:end] holds no '[' and at most 16 '{': found by memchr, it cannot nest to the limit."""
    if data.find(b"[", start, end) >= 0:
        return False
    for _ in range(16):
        start = data.find(b"{", start + 1, end)
        if start < 0:
            return True
    return False


def _params_span(payload: bytes) -> tuple[int, int] | None:
    """The byte span of the last top-level ``params`` value in a payload whose body decode accepts; None if absent."""
    span = None
    depth, expect_key, is_params, value_start = 0, False, False, 0
    for token in _TOKENS.finditer(payload, 1):
        char = payload[token.start()]
        if char == 0x22:  # '"'
            if depth == 1 and expect_key:
                key = token.group()
                is_params = key == _PARAMS_KEY or (b"\\" in key and _loads(key) == "params")
                value_start = token.end()
                while payload[value_start] in _SPACE:
                    value_start += 1
                value_start += 1  # the colon
                while payload[value_start] in _SPACE:
                    value_start += 1
                expect_key = False
        elif char in b"[{":
            depth += 1
            expect_key = depth == 1
        elif depth == 1 and char in b",}":
            if is_params and not expect_key:
                span = (value_start, _value_end(payload, token.start()))
            is_params, expect_key = False, True
            depth -= char == 0x7D
        elif char in b"]}":
            depth -= 1
    return span

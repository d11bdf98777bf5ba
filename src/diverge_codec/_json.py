"""JSON for both implementations: orjson where it is installed, else the standard library.

The stdlib path exists for interpreters orjson does not serve (PyPy). It is made to
accept and refuse exactly the documents orjson does: NaN and Infinity refused, numbers
that overflow a double refused, integers outside [-2**63, 2**64) read as floats, invalid
UTF-8, a BOM and lone surrogate escapes refused (an overwritten duplicate member's too),
nesting past 1024 refused. Its parse messages say the same thing in the stdlib's words.

Writing has one contract whatever the backend (``encode_problem``): exactly the types
decode gives back (dict with str keys, list, str, int in [-2**63, 2**64), finite float,
bool, None), at most 254 levels deep (orjson's limit), no lone surrogate. Anything else,
subclasses and the types orjson would write on its own (Enum, UUID, datetime, dataclass,
Fragment) included, is refused with the same message on both, before the backend runs.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from types import FrameType
from typing import Any, Callable

MAX_DEPTH = 1024
"""orjson's nesting limit: 1024 levels are read, 1025 are refused."""


class StdlibDecodeFailure(ValueError):
    """The stdlib path's parse failure: a fixed phrase and a position, never the document."""

    def __init__(self, reason: str, pos: int) -> None:
        super().__init__(f"{reason} (char {pos})")
        self.pos = pos


class StdlibEncodeFailure(TypeError):
    """A value refused for writing (encode_problem's phrase), on either backend: a TypeError as orjson's is."""


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def _refuse_constant(name: str) -> Any:
    raise StdlibDecodeFailure("unexpected character, expected a JSON value", 0)


def _read_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise StdlibDecodeFailure("number is infinity when parsed as double", 0)
    return value


def _read_int(text: str) -> int | float:
    value = int(text)
    if _INT_MIN <= value <= _INT_MAX:
        return value
    return _read_float(text)


_decoder = json.JSONDecoder(
    parse_constant=_refuse_constant, parse_float=_read_float, parse_int=_read_int
)


def _too_deep(text: str) -> int:
    """The position where nesting passes MAX_DEPTH, or -1; strings are skipped."""
    if depth_bound(text) <= MAX_DEPTH:
        return -1
    depth = 0
    stripped = _STRINGS.sub(lambda m: " " * len(m.group()), text)
    for match in _BRACKETS.finditer(stripped):
        depth += 1 if match.group() in "[{" else -1
        if depth > MAX_DEPTH:
            return match.start()
    return -1


_STDLIB_SAFE_DEPTH = 500


def depth_bound(text: str) -> int:
    """An upper bound on the nesting: every opening bracket, in strings or not."""
    return text.count("[") + text.count("{")


def _stack_depth() -> int:
    """Frames on this thread's stack (``len(inspect.stack(0))`` without importing inspect at start-up)."""
    frame: FrameType | None = sys._getframe()
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


def _allow_recursion_for(depth: int) -> None:
    """The stdlib scanner recurses once a level; let it reach orjson's limit (the limit only rises)."""
    needed = depth + 200 + _stack_depth()
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)


_SURROGATE_HINT = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPES = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


def _lone_surrogate(text: str) -> int:
    """The position of a lone surrogate escape in a parsed document's text, or -1.

    Read from the text, not the value: a duplicate member that overwrote one must not
    hide it (orjson refuses the document). Escapes are tokenized left to right, so an
    escaped backslash before ``u`` is no escape; outside strings a parsed document has none.
    """
    if _SURROGATE_HINT.search(text) is None:
        return -1
    pending = -1  # where a high surrogate escape ended, awaiting its low half right there
    for match in _ESCAPES.finditer(text):
        digits = match.group(1)
        code = int(digits, 16) if digits else -1
        if pending >= 0:
            if match.start() == pending and 0xDC00 <= code <= 0xDFFF:
                pending = -1
                continue
            return pending - 6
        if 0xD800 <= code <= 0xDBFF:
            pending = match.end()
        elif 0xDC00 <= code <= 0xDFFF:
            return match.start()
    return pending - 6 if pending >= 0 else -1


def stdlib_loads(data: bytes | bytearray | memoryview) -> Any:
    """Read one JSON document from UTF-8 bytes as orjson would, with the stdlib."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as error:
        position = error.start
    else:
        position = -1
    if position >= 0:
        raise StdlibDecodeFailure("str is not valid UTF-8", position)
    if not text:
        raise StdlibDecodeFailure("Input is a zero-length, empty document", 0)
    if text[0] == "\ufeff":
        raise StdlibDecodeFailure("UTF-8 byte order mark (BOM) is not supported", 0)
    deep = _too_deep(text)
    if deep >= 0:
        raise StdlibDecodeFailure("depth limit exceeded", deep)
    if depth_bound(text) > _STDLIB_SAFE_DEPTH:
        _allow_recursion_for(MAX_DEPTH)
    reason = ""
    try:
        value = _decoder.decode(text)
    except json.JSONDecodeError as error:
        reason, position = error.msg, error.pos
    except RecursionError:
        reason, position = "depth limit exceeded", 0
    if reason:
        raise StdlibDecodeFailure(reason, position)
    lone = _lone_surrogate(text)
    if lone >= 0:
        raise StdlibDecodeFailure("lone surrogate in string", lone)
    return value


ENCODE_MAX_DEPTH = 254
"""orjson's writing limit: 254 levels of arrays and objects are written, 255 refused."""

NOT_FINITE = "Float is NaN or Infinity, which JSON cannot carry"
TOO_DEEP = f"Recursion limit reached: nested deeper than {ENCODE_MAX_DEPTH} levels"
INT_RANGE = "Integer exceeds 64-bit range"
SURROGATE = "str is not valid UTF-8: surrogates not allowed"
KEY_NOT_STR = "Dict key must be str, not {kind}"
NOT_A_JSON_TYPE = "Type is not JSON serializable: {kind}"
"""Why a value is refused for writing, in orjson's words where it has them: fixed phrases and a type's name, never the value."""


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def encode_problem(value: Any) -> str | None:
    """Why ``value`` cannot be written as JSON that decode reads back equal, or None.

    Exact types only: decode gives back exact dicts, lists, str, int, float, bool and
    None, so a subclass, a tuple, an Enum member or anything orjson writes on its own
    would not come back equal. Depth first; in each object its keys, then its values.
    The compiled cores walk alike in C (``_values.pxd``) and ask this for the phrase.
    """
    kind = type(value)
    if kind is dict or kind is list:
        return _container_problem(value, 1)
    return _container_problem([value], 0)


def _container_problem(container: Any, depth: int) -> str | None:
    # One call per container, the leaves inline: the stdlib backend's every write, and every refusal's phrase.
    if depth > ENCODE_MAX_DEPTH:
        return TOO_DEEP
    if type(container) is dict:
        for key in container:
            if type(key) is not str:
                return KEY_NOT_STR.format(kind=type(key).__name__)
            if not key.isascii() and not _utf8(key):
                return SURROGATE
        items = container.values()
    else:
        items = container
    for item in items:
        kind = type(item)
        if kind is str:
            if not item.isascii() and not _utf8(item):
                return SURROGATE
        elif kind is int:
            if not _INT_MIN <= item <= _INT_MAX:
                return INT_RANGE
        elif kind is dict or kind is list:
            problem = _container_problem(item, depth + 1)
            if problem is not None:
                return problem
        elif kind is float:
            if item - item != 0.0:  # inf - inf and nan - nan are nan
                return NOT_FINITE
        elif item is not None and kind is not bool:
            return NOT_A_JSON_TYPE.format(kind=kind.__name__)
    return None


def stdlib_dumps(value: Any) -> bytes:
    """Write compact UTF-8 JSON, with the stdlib; what encode_problem refuses is refused."""
    problem = encode_problem(value)
    if problem is not None:
        raise StdlibEncodeFailure(problem)
    return _stdlib_write(value)


def _stdlib_write(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def types_fit(container: Any, depth: int = 1) -> bool:
    """The half of encode_problem orjson does not do itself: exact types, finite floats, the depth.

    orjson refuses what is left (a non-str key, an int past 64 bits, a lone surrogate), so
    on that backend this walk, cheaper than encode_problem's, is all a write needs first.
    """
    if depth > ENCODE_MAX_DEPTH:
        return False
    for item in container.values() if type(container) is dict else container:
        kind = type(item)
        if kind is str or kind is int or item is None or kind is bool:
            continue
        if kind is float:
            if item - item != 0.0:  # inf - inf and nan - nan are nan
                return False
        elif kind is not dict and kind is not list or not types_fit(item, depth + 1):
            return False
    return True


def _orjson_dumps(value: Any) -> bytes:
    """orjson.dumps behind the one contract (alone it would write NaN as null, an Enum as its value)."""
    kind = type(value)
    if types_fit(value) if kind is dict or kind is list else types_fit((value,), 0):
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            pass
    raise StdlibEncodeFailure(encode_problem(value) or "refused")


loads: Callable[[Any], Any]
dumps: Callable[[Any], bytes]
"""Writes what encode_problem accepts, else raises EncodeFailure with its phrase: either backend."""
raw_dumps: Callable[[Any], bytes]
"""The backend's own writer, for a caller that has walked the value first (``_values.pxd``)."""
BACKEND_REFUSES_THE_REST: bool
"""Whether raw_dumps itself refuses non-str keys, ints past 64 bits and lone surrogates (orjson
does), so that a walk before it need only check types_fit's half."""
DecodeFailure: type[Exception]
BACKEND: str

try:
    if os.environ.get("DIVERGE_CODEC_STDLIB_JSON", "") not in ("", "0"):
        raise ImportError("stdlib JSON forced")
    import orjson
except ImportError:
    loads, dumps, raw_dumps = stdlib_loads, stdlib_dumps, _stdlib_write
    DecodeFailure = StdlibDecodeFailure
    EncodeFailure: tuple[type[Exception], ...] = (StdlibEncodeFailure,)
    BACKEND, BACKEND_REFUSES_THE_REST = "json", False
else:
    loads, dumps, raw_dumps = orjson.loads, _orjson_dumps, orjson.dumps
    DecodeFailure = orjson.JSONDecodeError
    EncodeFailure = (StdlibEncodeFailure, orjson.JSONEncodeError)
    BACKEND, BACKEND_REFUSES_THE_REST = "orjson", True


def _reads_views() -> bool:
    """Whether loads takes a memoryview and a bytearray: orjson's free-threaded builds read only bytes and str."""
    try:
        loads(memoryview(b"0"))
        loads(bytearray(b"0"))
    except (DecodeFailure, TypeError):
        return False
    return True


READS_VIEWS = _reads_views()
VIEW_FROM = 16384 if READS_VIEWS else sys.maxsize
"""Bodies this long go to the pure cores' parser as a view into the payload, not a copy: a copy
is cheaper when small (a view costs two allocations), a view saves a second copy when large."""

VIEW_READ_AT_ONCE = BACKEND == "orjson" and READS_VIEWS
"""Whether loads reads a buffer's pointer and length in C before anything else, as orjson does:
then the compiled cores may lend one bytearray out as a window onto each body (``_payload.pxd``)."""


def failure_reason(error: BaseException) -> str:
    """The parser's own phrase and position: orjson's and ours quote no part of the document."""
    return str(error.args[0]) if error.args else type(error).__name__

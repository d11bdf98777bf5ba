"""JSON for both implementations: orjson where it is installed, else the standard library.

The stdlib path exists for interpreters orjson does not serve (PyPy). It is made to
accept and refuse exactly the documents orjson does: NaN and Infinity refused, numbers
that overflow a double refused, integers outside [-2**63, 2**64) read as floats, invalid
UTF-8, a BOM and lone surrogates refused, nesting past 1024 refused. Its messages say the
same thing in the stdlib's words, and may differ from orjson's.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import inspect
from typing import Any, Callable

MAX_DEPTH = 1024
"""orjson's nesting limit: 1024 levels are read, 1025 are refused."""


class StdlibDecodeFailure(ValueError):
    """The stdlib path's parse failure: a fixed phrase and a position, never the document."""

    def __init__(self, reason: str, pos: int) -> None:
        super().__init__(f"{reason} (char {pos})")
        self.pos = pos


class StdlibEncodeFailure(TypeError):
    """The stdlib path's encode failure, a TypeError as orjson's is."""


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


def _allow_recursion_for(depth: int) -> None:
    """The stdlib scanner recurses once a level; let it reach orjson's limit (the limit only rises)."""
    needed = depth + 200 + len(inspect.stack(0))
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)


def _has_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


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
    if _has_surrogate(value):
        raise StdlibDecodeFailure("lone surrogate in string", 0)
    return value


def _check_encodable(value: Any) -> None:
    """Refuse what orjson refuses and the stdlib would write: non-str keys, wide ints."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                raise StdlibEncodeFailure("Dict key must be str")
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            if not _INT_MIN <= item <= _INT_MAX:
                raise StdlibEncodeFailure("Integer exceeds 64-bit range")


def stdlib_dumps(value: Any) -> bytes:
    """Write compact UTF-8 JSON as orjson would, with the stdlib."""
    _check_encodable(value)
    reason = ""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return text.encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError) as error:
        reason = type(error).__name__
    raise StdlibEncodeFailure(f"value is not JSON serializable ({reason})")


loads: Callable[[Any], Any]
dumps: Callable[[Any], bytes]
DecodeFailure: type[Exception]
EncodeFailure: type[Exception]
BACKEND: str

try:
    if os.environ.get("DIVERGE_CODEC_STDLIB_JSON", "") not in ("", "0"):
        raise ImportError("stdlib JSON forced")
    import orjson
except ImportError:
    loads, dumps = stdlib_loads, stdlib_dumps
    DecodeFailure, EncodeFailure = StdlibDecodeFailure, StdlibEncodeFailure
    BACKEND = "json"
else:
    loads, dumps = orjson.loads, orjson.dumps
    DecodeFailure, EncodeFailure = orjson.JSONDecodeError, orjson.JSONEncodeError
    BACKEND = "orjson"


def _reads_views() -> bool:
    """Whether loads takes a memoryview: orjson's free-threaded builds read only bytes and str."""
    try:
        loads(memoryview(b"0"))
    except (DecodeFailure, TypeError):
        return False
    return True


READS_VIEWS = _reads_views()
VIEW_FROM = 16384 if READS_VIEWS else sys.maxsize
"""Bodies this long go to the pure cores' parser as a view into the payload, not a copy: a copy
is cheaper when small (a view costs two allocations), a view saves a second copy when large."""

VIEW_READ_AT_ONCE = BACKEND == "orjson" and READS_VIEWS
"""Whether loads reads a view's pointer and length in C before anything else, as orjson does:
then the compiled cores may share one view across calls (``_payload.pxd``)."""


def failure_reason(error: BaseException) -> str:
    """The parser's own phrase and position: orjson's and ours quote no part of the document."""
    return str(error.args[0]) if error.args else type(error).__name__

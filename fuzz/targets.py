"""The fuzz targets, without atheris: ``fuzz_codec.py`` drives them, and the tests replay the corpus through them.

``check(data)`` puts one input through every target and raises AssertionError where
the cores disagree; any other exception escaping it is a bug the fuzzer reports.
"""

from __future__ import annotations

from typing import Any

import orjson

from diverge_codec import _json, _mcp_notifications_c, _mcp_notifications_py, _stream_c, _stream_py, errors
from diverge_codec import _tools_begin_c, _tools_begin_py

CHANNELS = (
    (_tools_begin_c, _tools_begin_py, errors.ToolsBeginFrameError),
    (_mcp_notifications_c, _mcp_notifications_py, errors.McpNotificationsFrameError),
)
_CONTENTS = ("secrets", "values", "notification", "error")


def _outcome(core: Any, allowed: type[Exception], data: bytes) -> tuple[Any, ...]:
    """What decoding ``data`` gives, comparable across cores: a frame's facts, or the error's."""
    try:
        frame = core.decode(data)
    except allowed as error:
        return ("error", type(error), str(error), getattr(error, "tag", None))
    contents = tuple(_plain(getattr(frame, name)) for name in _CONTENTS if hasattr(frame, name))
    try:
        encoded: Any = core.encode(frame)
    except errors.EncodeError as error:
        encoded = (type(error), str(error))
    return ("frame", type(frame).__name__, int(frame.tag), contents, repr(frame), encoded)


def _plain(value: Any) -> Any:
    return value.to_json() if hasattr(value, "to_json") else value


def _split(core: Any, data: bytes) -> Any:
    try:
        return [bytes(p) for p in core.split_records(data)]
    except errors.StreamError as error:
        return (type(error), str(error))


def _splice(core: Any, data: bytes) -> Any:
    try:
        return core.splice_notification(data)
    except errors.McpNotificationsNotificationParseError as error:
        return (type(error), str(error))


def _json_outcome(loads: Any, data: bytes) -> Any:
    try:
        return ("value", loads(data))
    except ValueError:
        return ("refused",)


def check(data: bytes) -> None:
    for compiled, pure, allowed in CHANNELS:
        expected = _outcome(pure, allowed, data)
        got = _outcome(compiled, allowed, data)
        if got != expected:
            raise AssertionError(f"{compiled.__name__} and {pure.__name__} differ: {got!r} != {expected!r}")
        viewed = _outcome(compiled, allowed, memoryview(bytearray(data)))
        if viewed != expected:
            raise AssertionError(f"{compiled.__name__} reads a memoryview differently")
    if _splice(_mcp_notifications_c, data) != _splice(_mcp_notifications_py, data):
        raise AssertionError("splice_notification differs between the cores")
    if _split(_stream_c, data) != _split(_stream_py, data):
        raise AssertionError("split_records differs between the cores")
    body = data[1:]
    if _json_outcome(orjson.loads, body) != _json_outcome(_json.stdlib_loads, body):
        raise AssertionError("the stdlib JSON path and orjson differ")

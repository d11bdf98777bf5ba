"""The relay scanner's differential, without atheris: ``fuzz_scanner.py`` drives it, the tests replay its corpus.

``check(data)`` runs one server line through ``splice_notification`` of both cores
(bytes, bytearray and memoryview) and holds each to the reference: ``orjson.loads``,
the envelope popped, the channel's rules; and, a line with no newline, through both cores'
``ChunkFramer`` where it lies in a chunk, its newline after it (the compiled framer scans it
there, with the relay's line build), alone and with a line after it that would complete it, and
between two siblings (its digits or letters changed) that it may be read from. It raises AssertionError where they differ;
any other exception escaping it is a bug the fuzzer reports.
"""

from __future__ import annotations

import sys
from typing import Any

import orjson

from diverge_codec import _mcp_notifications_c, _mcp_notifications_py, errors
from diverge_codec._model import notification_problem

REFUSED = errors.McpNotificationsNotificationParseError
SCAN_INVALID = 2  # _jsonscan.h's DC_INVALID
_SPACE = b" \t\n\r"
sys.setrecursionlimit(max(sys.getrecursionlimit(), 4000))  # comparing values nested 1024 deep


def reference(data: bytes) -> tuple[Any, ...]:
    """What the relay must do with ``data``: ("none",), ("refused", message) or ("relay", notification)."""
    if not data.strip(_SPACE):
        return ("none",)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        # decode's words for the same body: the channel parses it and refuses it so.
        try:
            _mcp_notifications_py.decode(b"\x00" + data)
        except REFUSED as error:
            return ("refused", str(error))
        raise AssertionError("orjson refuses a body that decode accepts") from None
    if type(value) is not dict or "id" in value:
        return ("none",)
    value.pop("jsonrpc", None)
    problem = notification_problem(value)
    if problem is not None:
        return ("refused", str(REFUSED(problem)))
    return ("relay", value)


def _outcome(core: Any, data: Any) -> tuple[Any, ...]:
    try:
        payload = core.splice_notification(data)
    except REFUSED as error:
        return ("refused", str(error))
    return ("none",) if payload is None else ("payload", payload)


WINDOW_FROM = _mcp_notifications_c._SCAN_WINDOW_FROM  # a document this long: its arrays' strings share a window


def windowed(data: bytes) -> tuple[bytes, bytes]:
    """data spaced out past WINDOW_FROM, into the compiled scan's windowed build: once with the
    document first (an array's strings read through the window, in whole blocks) and once last
    (in the last 256 bytes, where strings are read sixteen bytes at a time); each shifted by
    len(data) % 64 against the blocks."""
    shift = b" " * (len(data) % 64)
    return shift + data + b" " * WINDOW_FROM, b" " * WINDOW_FROM + shift + data


_LIMIT = 1 << 20


def _framed(core: Any, chunk: bytes) -> tuple[Any, ...]:
    framer = core.ChunkFramer(_LIMIT, _LIMIT + 1)
    return framer.feed(chunk), framer.invalid, framer.too_large


def check(data: bytes) -> None:
    """Hold data, and data spaced out into the windowed scan when it is shorter, to the reference."""
    _check(data)
    if len(data) < WINDOW_FROM:
        for spaced in windowed(data):
            _check(spaced)


def _check(data: bytes) -> None:
    expected = reference(data)
    pure = _outcome(_mcp_notifications_py, data)
    for kind in (bytes, bytearray, memoryview):
        if _outcome(_mcp_notifications_c, kind(data)) != pure:
            raise AssertionError(f"the cores' splice_notification differ on {kind.__name__}")
    if expected[0] == "relay":
        if pure[0] != "payload":
            raise AssertionError(f"a notification was not relayed: {pure[0]}")
        payload = pure[1]
        if _mcp_notifications_py.decode(payload).notification != expected[1]:
            raise AssertionError("the payload decodes to other than the message without its envelope")
        if _mcp_notifications_c.decode(payload).notification != expected[1]:
            raise AssertionError("the compiled decode reads the payload otherwise")
        if len(payload) > len(data.strip(_SPACE)) + 1:
            raise AssertionError("the payload is longer than the message")
    elif pure != expected:
        raise AssertionError(f"the relay gives {pure[0]}, the reference {expected[0]}")
    if b"\n" not in data:
        for chunk in (data + b"\n", data + b'\n"}]\n'):
            if _framed(_mcp_notifications_c, chunk) != _framed(_mcp_notifications_py, chunk):
                raise AssertionError("the cores' ChunkFramer differ on a line where it lies in its chunk")
        for sibling in (data.translate(_DIGITS_UP), data.translate(_LETTERS_ON)):
            chunk = sibling + b"\n" + data + b"\n" + sibling + b"\n"
            if _framed(_mcp_notifications_c, chunk) != _framed(_mcp_notifications_py, chunk):
                raise AssertionError("the cores' ChunkFramer differ on a line read from a line before it")
    invalid = expected[0] == "refused" and not expected[1].endswith(_SHAPE_PROBLEMS)
    if (_mcp_notifications_c._scan_status(data) == SCAN_INVALID) != invalid:
        raise AssertionError("the compiled scanner's validity is not orjson's")


# A line's sibling: its digits or letters changed, most often inside its values, so that the compiled
# framer reads the one from the other (its shapes: _relayscan.c's dc_relay_delta), or in a key, so it does not.
_DIGITS_UP = bytes.maketrans(b"012345678", b"123456789")
_LETTERS_ON = bytes.maketrans(b"abcdeghijkmopqsvwxyz", b"bcdeghijkmopqsvwxyza")  # f, l, n, r, t, u kept: literals, escapes
_SHAPE_PROBLEMS = (errors.METHOD_NOT_A_STRING, errors.PARAMS_INVALID, errors.META_INVALID)

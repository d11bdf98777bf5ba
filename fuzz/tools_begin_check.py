"""The compiled Begun reader's differential, without atheris: ``fuzz_tools_begin.py`` drives it, the tests call it.

``check(body)`` decodes ``b"\\x00" + body`` with both cores (bytes, bytearray and
memoryview) and holds each to the reference, the JSON backend's ``loads`` (orjson; the
stdlib path where orjson is forced off, which reads as orjson does) and the model's
``declaration_from_json``: the same declaration in the same order, or the same
BegunParseError, word for word. The compiled reader's own verdict
(``_read_declaration``) must be the reference's declaration or None (it handed the
body on). A Begun read is encoded again by both cores: the same bytes, read back
equal. It raises AssertionError where they differ; any other exception escaping it is
a bug the fuzzer reports.
"""

from __future__ import annotations

from typing import Any

from diverge_codec import _json, _tools_begin_c, _tools_begin_py
from diverge_codec._json import failure_reason
from diverge_codec._model import Refused, declaration_from_json
from diverge_codec.errors import ToolsBeginBegunParseError, ToolsBeginFrameError


def reference(body: bytes) -> tuple[Any, ...]:
    """("begun", [(name, mode), ...]) or ("refused", message): what decode must give for tag 0 and body."""
    try:
        parsed = _json.loads(body)
    except _json.DecodeFailure as error:
        return ("refused", str(ToolsBeginBegunParseError(failure_reason(error))))
    try:
        declared = declaration_from_json(parsed)
    except Refused as refused:
        return ("refused", str(ToolsBeginBegunParseError(refused.reason)))
    return ("begun", list(declared.items()))


def _outcome(core: Any, payload: Any) -> tuple[Any, ...]:
    try:
        frame = core.decode(payload)
    except ToolsBeginFrameError as error:
        if type(error) is not ToolsBeginBegunParseError:
            raise AssertionError(f"{core.__name__} raised {type(error).__name__} for a Begun payload") from None
        return ("refused", str(error))
    if type(frame) is not core.Begun:
        raise AssertionError(f"{core.__name__} decoded a Begun payload as {type(frame).__name__}")
    return ("begun", list(frame.secrets.items()))


def check(body: bytes) -> None:
    expected = reference(body)
    payload = b"\x00" + body
    if _outcome(_tools_begin_py, payload) != expected:
        raise AssertionError("the pure core's Begun is not orjson + declaration_from_json")
    for kind in (bytes, bytearray, memoryview):
        if _outcome(_tools_begin_c, kind(payload)) != expected:
            raise AssertionError(f"the compiled core's Begun is not orjson + declaration_from_json ({kind.__name__})")
    read = _tools_begin_c._read_declaration(body)
    if read is not None and (expected[0] != "begun" or list(read.items()) != expected[1]):
        raise AssertionError("the compiled reader built a declaration the reference does not")
    if expected[0] == "begun":
        encoded = _tools_begin_c.encode(_tools_begin_c.decode(payload))
        if encoded != _tools_begin_py.encode(_tools_begin_py.decode(payload)):
            raise AssertionError("the cores encode the Begun differently")
        if list(_tools_begin_c.decode(encoded).secrets.items()) != expected[1]:
            raise AssertionError("the encoded Begun does not read back equal")

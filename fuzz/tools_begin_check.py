"""The compiled tools-begin readers' differential, without atheris: ``fuzz_tools_begin.py`` drives it, the tests call it.

``check(body)`` decodes ``b"\\x00" + body`` with both cores (bytes, bytearray and
memoryview) and holds each to the reference, the JSON backend's ``loads`` (orjson; the
stdlib path where orjson is forced off, which reads as orjson does) and the model's
``declaration_from_json``: the same declaration in the same order, or the same
BegunParseError, word for word. The compiled reader's own verdict
(``_read_declaration``) must be the reference's declaration or None (it handed the
body on). A Begun read is encoded again by both cores: the same bytes, read back
equal. It raises AssertionError where they differ; any other exception escaping it is
a bug the fuzzer reports.

``check`` then does the same for the body as Inactive values (``check_inactive``):
``b"\\x03" + body`` must decode, in both cores, to what the backend's ``loads`` reads,
value for value and type for type (``True`` is not ``1``, ``1`` is not ``1.0``), in the
same order, or be refused with the same InactiveParseError; the compiled reader's own
verdict (``_read_values``) must be that or None.
"""

from __future__ import annotations

from typing import Any

from diverge_codec import _json, _tools_begin_c, _tools_begin_py, errors
from diverge_codec._json import failure_reason
from diverge_codec._model import Refused, declaration_from_json
from diverge_codec.errors import ToolsBeginBegunParseError, ToolsBeginFrameError, ToolsBeginInactiveParseError


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


def _outcome(core: Any, payload: Any, variant: str = "Begun") -> tuple[Any, ...]:
    """What a core makes of a payload of the variant: (kind, what it read) or ("refused", message)."""
    refusal = ToolsBeginBegunParseError if variant == "Begun" else ToolsBeginInactiveParseError
    try:
        frame = core.decode(payload)
    except ToolsBeginFrameError as error:
        if type(error) is not refusal:
            raise AssertionError(f"{core.__name__} raised {type(error).__name__} for a {variant} payload") from None
        return ("refused", str(error))
    if type(frame) is not getattr(core, variant):
        raise AssertionError(f"{core.__name__} decoded a {variant} payload as {type(frame).__name__}")
    if variant == "Begun":
        return ("begun", list(frame.secrets.items()))
    return ("inactive", typed(dict(frame.values)))


def typed(value: Any) -> Any:
    """value with every type spelled out, containers in order: equal only where the reading is the same."""
    if type(value) is dict:
        return ("dict", [(typed(key), typed(item)) for key, item in value.items()])
    if type(value) is list:
        return ("list", [typed(item) for item in value])
    return (type(value).__name__, value)


def reference_inactive(body: bytes) -> tuple[Any, ...]:
    """("inactive", typed values) or ("refused", message): what decode must give for tag 3 and body."""
    try:
        parsed = _json.loads(body)
    except _json.DecodeFailure as error:
        return ("refused", str(ToolsBeginInactiveParseError(failure_reason(error))))
    if type(parsed) is not dict:
        return ("refused", str(ToolsBeginInactiveParseError(errors.NOT_AN_OBJECT)))
    return ("inactive", typed(parsed))


def check_inactive(body: bytes) -> None:
    expected = reference_inactive(body)
    payload = b"\x03" + body
    if _outcome(_tools_begin_py, payload, "Inactive") != expected:
        raise AssertionError("the pure core's Inactive is not the backend's reading")
    for kind in (bytes, bytearray, memoryview):
        if _outcome(_tools_begin_c, kind(payload), "Inactive") != expected:
            raise AssertionError(f"the compiled core's Inactive is not the backend's reading ({kind.__name__})")
    read = _tools_begin_c._read_values(body)
    if read is not None and ("inactive", typed(read)) != expected:
        raise AssertionError("the compiled values reader built what the backend does not")


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
    check_inactive(body)

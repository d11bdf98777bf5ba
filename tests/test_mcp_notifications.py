"""mcp-notifications frames: exact bytes for both variants, every refusal pinned, on both cores."""

from __future__ import annotations

import pickle

import pytest

from conftest import assert_message
from test_tools_begin import parser_says

from diverge_codec import EncodeError, ErrorData, mcp_notifications
from diverge_codec.errors import DecodeError

PROGRESS = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":0.5,"_meta":{"k":"v"}}}'


def test_notification_exact_bytes_keep_every_member(mn):
    frame = mn.decode(b"\x00" + PROGRESS)
    assert frame.method == "notifications/progress"
    assert frame.notification["jsonrpc"] == "2.0"
    assert frame.notification["params"]["_meta"] == {"k": "v"}
    assert mn.encode(frame) == b"\x00" + PROGRESS


def test_notification_built_by_hand(mn):
    frame = mn.Notification({"method": "notifications/tools/list_changed"})
    assert mn.encode(frame) == b'\x00{"method":"notifications/tools/list_changed"}'


def test_error_exact_bytes(mn):
    assert mn.encode(mn.Error(ErrorData(-32000, "unreachable"))) == b'\x01{"code":-32000,"message":"unreachable"}'
    assert mn.encode(mn.Error(ErrorData(1, "m", {"why": [1]}))) == b'\x01{"code":1,"message":"m","data":{"why":[1]}}'


def test_error_data_null_reads_as_absent(mn):
    frame = mn.decode(b'\x01{"code":5,"message":"m","data":null}')
    assert frame.error == ErrorData(5, "m")
    assert mn.encode(frame) == b'\x01{"code":5,"message":"m"}'


def test_encode_into(mn):
    out = bytearray()
    mn.encode_into(mn.Notification({"method": "a"}), out)
    mn.encode_into(mn.Error(ErrorData(0, "")), out)
    assert out == b'\x00{"method":"a"}\x01{"code":0,"message":""}'
    with pytest.raises(TypeError, match="bytearray"):
        mn.encode_into(mn.Notification({"method": "a"}), [])


@pytest.mark.parametrize(
    "body",
    [
        b'{"method":"notifications/anything/custom"}',
        b'{"method":"x","params":null}',
        b'{"method":"x","params":{}}',
        b'{"method":"x","params":{"_meta":null}}',
        b'{"method":"","params":{"_meta":{}},"extra":[1]}',
        b' {"method":"x"} \n',
    ],
)
def test_accepted_notifications(mn, body):
    frame = mn.decode(b"\x00" + body)
    assert type(frame) is mn.Notification
    assert frame.notification["method"] == frame.method


def test_frame_notification_does_not_parse(mn):
    assert mn.frame_notification(PROGRESS) == b"\x00" + PROGRESS
    assert mn.frame_notification(b"") == b"\x00"
    assert mn.frame_notification(bytearray(b"junk")) == b"\x00junk"
    assert mn.frame_notification(memoryview(b"abcd")[::2]) == b"\x00ac"
    with pytest.raises(TypeError, match="frame_notification takes bytes-like JSON"):
        mn.frame_notification("{}")
    with pytest.raises(TypeError, match="not int"):
        mn.frame_notification(5)


def test_frame_notifications(mn):
    assert mn.frame_notifications([b"{}", bytearray(b"[]")]) == [b"\x00{}", b"\x00[]"]
    assert mn.frame_notifications(iter([])) == []


def test_decode_many(mn):
    frames = mn.decode_many([b'\x00{"method":"a"}', b'\x01{"code":1,"message":"m"}'])
    assert [type(frame) for frame in frames] == [mn.Notification, mn.Error]
    assert mn.decode_many([]) == []


def test_decode_many_names_the_failing_payload(mn):
    with pytest.raises(mcp_notifications.EmptyFrameError) as caught:
        mn.decode_many([b'\x00{"method":"a"}', b'\x00{"method":"b"}', b""])
    assert caught.value.index == 2
    assert str(caught.value) == "mcp notifications response frame is empty"


def test_decode_round_trips_through_frame_notification(mn):
    assert mn.decode(mn.frame_notification(PROGRESS)) == mn.decode(b"\x00" + PROGRESS)


REFUSALS = [
    (b"", "EmptyFrameError", "mcp notifications response frame is empty"),
    (b"\x07", "UnknownTagError", "unknown mcp notifications response frame tag 7"),
    (b"\x02{}", "UnknownTagError", "unknown mcp notifications response frame tag 2"),
    (b"\x00", "NotificationParseError", "mcp notifications response frame did not parse: " + parser_says(b"")),
    (b"\x00[]", "NotificationParseError", "mcp notifications response frame did not parse: expected a JSON object"),
    (b"\x00{}", "NotificationParseError", "mcp notifications response frame did not parse: method must be a string"),
    (b'\x00{"method":null}', "NotificationParseError", "mcp notifications response frame did not parse: method must be a string"),
    (b'\x00{"method":"x","params":[]}', "NotificationParseError", "mcp notifications response frame did not parse: params must be an object or null"),
    (b'\x00{"method":"x","params":"p"}', "NotificationParseError", "mcp notifications response frame did not parse: params must be an object or null"),
    (b'\x00{"method":"x","params":{"_meta":1}}', "NotificationParseError", "mcp notifications response frame did not parse: params._meta must be an object"),
    (b'\x00{"method":"x"', "NotificationParseError", "mcp notifications response frame did not parse: " + parser_says(b'{"method":"x"')),
    (b"\x01[]", "ErrorParseError", "mcp notifications response frame did not parse: expected a JSON object"),
    (b'\x01{"message":"m"}', "ErrorParseError", "mcp notifications response frame did not parse: code must be an integer"),
    (b'\x01{"code":1.0,"message":"m"}', "ErrorParseError", "mcp notifications response frame did not parse: code must be an integer"),
    (b'\x01{"code":true,"message":"m"}', "ErrorParseError", "mcp notifications response frame did not parse: code must be an integer"),
    (b'\x01{"code":2147483648,"message":"m"}', "ErrorParseError", "mcp notifications response frame did not parse: code must fit in 32 signed bits"),
    (b'\x01{"code":-2147483649,"message":"m"}', "ErrorParseError", "mcp notifications response frame did not parse: code must fit in 32 signed bits"),
    (b'\x01{"code":1}', "ErrorParseError", "mcp notifications response frame did not parse: message must be a string"),
]


@pytest.mark.parametrize(("payload", "kind", "message"), REFUSALS)
def test_refusal(mn, payload, kind, message):
    with pytest.raises(getattr(mn, kind)) as caught:
        mn.decode(payload)
    error = caught.value
    assert type(error) is getattr(mcp_notifications, kind)
    assert_message(error, message)
    assert error.args == (str(error),)
    assert isinstance(error, mcp_notifications.FrameError) and isinstance(error, DecodeError)
    assert error.__cause__ is None and error.__context__ is None
    if kind.endswith("ParseError"):
        assert isinstance(error, mcp_notifications.BodyParseError)


def test_error_code_range_edges_accepted(mn):
    assert mn.decode(b'\x01{"code":2147483647,"message":"m"}').error.code == 2**31 - 1
    assert mn.decode(b'\x01{"code":-2147483648,"message":"m"}').error.code == -(2**31)


def test_unknown_tag_carries_the_tag(mn):
    with pytest.raises(mcp_notifications.UnknownTagError) as caught:
        mn.decode(b"\x05")
    assert caught.value.tag == 5


def test_frames_are_immutable_values(mn):
    frame = mn.Notification({"method": "a"})
    with pytest.raises(AttributeError):
        frame.method = "b"  # type: ignore[misc]
    assert frame == mn.Notification({"method": "a"})
    assert frame != mn.Notification({"method": "b"})
    assert mn.Error(ErrorData(1, "m")) == mn.Error(ErrorData(1, "m"))
    assert mn.Error(ErrorData(1, "m")) != frame
    with pytest.raises(TypeError):
        hash(frame)


def test_match(mn):
    def kind(frame):
        match frame:
            case mn.Notification(notification) if notification["method"] == "a":
                return "a"
            case mn.Error(error=ErrorData(code=code)):
                return code
        return None

    assert kind(mn.decode(b'\x00{"method":"a"}')) == "a"
    assert kind(mn.decode(b'\x01{"code":3,"message":"m"}')) == 3


def test_tags_and_pickle(mn):
    frames = [mn.Notification({"method": "a", "params": {"x": 1}}), mn.Error(ErrorData(2, "m", [1]))]
    assert [frame.tag for frame in frames] == [0, 1]
    for frame in frames:
        assert pickle.loads(pickle.dumps(frame)) == frame


def test_repr_shows_the_method_never_the_params(mn):
    frame = mn.Notification({"method": "notifications/message", "params": {"data": "SECRET"}})
    assert repr(frame) == "Notification(method='notifications/message', params=<1 members>)"
    assert repr(mn.Error(ErrorData(7, "SECRET", "SECRET"))) == (
        "Error(error=ErrorData(code=7, message=<6 chars>, data=<present>))"
    )


def test_constructors_validate(mn):
    with pytest.raises(TypeError, match="Notification: expected a JSON object"):
        mn.Notification([])
    with pytest.raises(ValueError, match="Notification: method must be a string"):
        mn.Notification({})
    with pytest.raises(ValueError, match="params must be an object or null"):
        mn.Notification({"method": "a", "params": 1})
    with pytest.raises(TypeError, match="ErrorData"):
        mn.Error({"code": 1})


def test_encode_refusals(mn):
    with pytest.raises(EncodeError, match="^mcp notifications Notification could not be encoded: "):
        mn.encode(mn.Notification({"method": "a", "params": {"x": object()}}))
    with pytest.raises(TypeError, match="not an mcp notifications response frame: str"):
        mn.encode("frame")

"""Errors behave like Python errors: every public one pickles and copies with its attributes; typed attributes exist.

Errors cross process pools and logging queues. Each is made by a real raising path,
on both cores where there are two, then pickled, copied and deep-copied.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from diverge_codec import errors
from diverge_codec.errors import DecodeError, EncodeError, LocalProtocolError, RemoteProtocolError
from diverge_codec.proxy import ToolContainerProxy
from diverge_codec.sequence import McpNotificationsChecker, State, ToolsBeginChecker

from conftest import IMPLEMENTATIONS, load


def caught(call) -> BaseException:
    try:
        call()
    except Exception as error:  # noqa: BLE001
        return error
    raise AssertionError("did not raise")


def decode_errors(core: str) -> list[BaseException]:
    tb, mn = load("tools_begin", core), load("mcp_notifications", core)
    found = [caught(lambda m=m, p=p: m.decode(p)) for m in (tb, mn) for p in (b"", b"\x09", b"\x00[", b"\x00[]", b"\x01{}")]
    found.append(caught(lambda: tb.decode(b"\x03[]")))
    many = caught(lambda: mn.decode_many([b'\x00{"method":"m"}', b"\x00{"]))
    many.add_note("while relaying channel 7")
    found.append(many)
    found.append(caught(lambda: tb.encode(tb.Inactive({"a": float("nan")}))))
    return found


def other_errors() -> list[BaseException]:
    checker = ToolsBeginChecker()
    found = [caught(lambda: checker.payload(b"\x02"))]
    finished = McpNotificationsChecker()
    finished.finish()
    assert finished.state is State.UNREADABLE
    found.append(caught(lambda: finished.frame(finished.codec.Error(__import__("diverge_codec").ErrorData(1, "m")))))
    found.append(caught(lambda: ToolContainerProxy().fed()))
    for core in IMPLEMENTATIONS:
        stream = load("stream", core)
        found.append(caught(lambda: stream.split_records(b"\xff\xff\xff\xff")))
        found.append(caught(lambda: stream.split_records(b"\x00\x00\x00\x05ab")))
    return found


def sdk_error() -> list[BaseException]:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    mcp_sdk = pytest.importorskip("diverge_codec.mcp_sdk")
    frame = load("mcp_notifications", "py").Notification({"method": "notifications/progress", "params": {"progress": "x"}})
    return [caught(lambda: mcp_sdk.server_notification(frame))]


def state(error: BaseException) -> tuple[object, ...]:
    return type(error), str(error), error.args, dict(vars(error)), getattr(error, "__notes__", None)


@pytest.mark.parametrize("core", IMPLEMENTATIONS)
def test_decode_and_encode_errors_pickle_and_copy_with_every_attribute(core):
    for error in decode_errors(core):
        for clone in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
            assert state(clone) == state(error)


def test_sequence_stream_and_sdk_errors_pickle_and_copy():
    found = other_errors() + sdk_error()
    kinds = {type(error) for error in found}
    assert {RemoteProtocolError, LocalProtocolError, errors.RecordTooLargeError, errors.TruncatedStreamError} <= kinds
    for error in found:
        for clone in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
            assert state(clone) == state(error), type(error).__name__
    remote = next(error for error in found if type(error) is RemoteProtocolError)
    clone = pickle.loads(pickle.dumps(remote))
    assert (clone.rule, clone.index, clone.variant, clone.channel) == (remote.rule, remote.index, remote.variant, remote.channel)


def test_the_batch_index_and_notes_survive_pickle():
    for core in IMPLEMENTATIONS:
        error = decode_errors(core)[-2]
        clone = pickle.loads(pickle.dumps(error))
        assert (clone.index, clone.__notes__) == (1, ["while relaying channel 7"])


@pytest.mark.parametrize("core", IMPLEMENTATIONS)
def test_typed_attributes_exist_on_every_decode_error(core):
    for error in decode_errors(core):
        if not isinstance(error, DecodeError):
            assert isinstance(error, EncodeError)
            continue
        assert error.tag is None or type(error.tag) is int
        assert error.reason is None or type(error.reason) is str
        assert error.index is None or type(error.index) is int
        assert (error.tag is not None) == isinstance(error, (errors.ToolsBeginUnknownTagError, errors.McpNotificationsUnknownTagError))
        assert (error.reason is not None) == ("did not parse" in str(error))


@pytest.mark.parametrize("core", IMPLEMENTATIONS)
def test_a_released_memoryview_is_refused_as_any_other_non_payload(core):
    tb, mn = load("tools_begin", core), load("mcp_notifications", core)
    view = memoryview(b"\x03{}")
    view.release()
    for codec, channel in ((tb, "tools begin"), (mn, "mcp notifications")):
        error = caught(lambda: codec.decode(view))
        assert (type(error), str(error)) == (TypeError, f"{channel} payload must be bytes, bytearray or memoryview, not memoryview (released)")
    assert str(caught(lambda: mn.frame_notification(view))).endswith("not memoryview (released)")
    assert str(caught(lambda: tb.frame_inactive(view))).endswith("not memoryview (released)")

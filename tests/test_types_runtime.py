"""The annotations tell the truth at runtime: what a type checker is told a value is, it is, on both cores.

Errors come from real raising paths (``test_errors_pickle``); each annotated attribute, read
through ``typing.get_type_hints``, exists and is an instance of its annotation. Frames that
checkers, the proxy and the SDK helpers hand out are members of the union they are typed with.
"""

from __future__ import annotations

import typing

import pytest

from diverge_codec import errors, proxy, samples, tools_begin
from diverge_codec.sequence import McpNotificationsChecker, Rule, ToolsBeginChecker

from conftest import IMPLEMENTATIONS, load
from test_errors_pickle import decode_errors, other_errors

_NAMES = {**vars(errors), "Rule": Rule}  # Rule is imported by errors.py only for type checkers


def _annotated(cls: type) -> dict[str, typing.Any]:
    hints = typing.get_type_hints(cls, globalns=_NAMES)
    return {name: hint for name, hint in hints.items() if typing.get_origin(hint) is not typing.ClassVar}


@pytest.mark.parametrize("core", IMPLEMENTATIONS)
def test_every_annotated_error_attribute_is_there_and_of_its_type(core: str) -> None:
    found = [error for error in decode_errors(core) + other_errors() if isinstance(error, (errors.DecodeError, errors.SequenceError, errors.StreamError))]
    checked = set()
    for error in found:
        for name, hint in _annotated(type(error)).items():
            assert isinstance(getattr(error, name), hint), (type(error).__name__, name, hint)
            checked.add(f"{type(error).__module__.rpartition('.')[2]}.{type(error).__qualname__}.{name}")
    assert {"errors.RemoteProtocolError.rule", "errors.RemoteProtocolError.index", "errors.RecordTooLargeError.length",
            "errors.TruncatedStreamError.missing", "errors.TruncatedStreamError.inside", "tools_begin.UnknownTagError.tag",
            "mcp_notifications.NotificationParseError.reason", "tools_begin.InactiveParseError.index"} <= checked


def test_a_violation_names_a_rule() -> None:
    checker = ToolsBeginChecker()
    with pytest.raises(errors.RemoteProtocolError) as caught:
        checker.payload(b"\x02")
    assert type(caught.value.rule) is Rule and caught.value.rule is Rule.BEGUN_FIRST


@pytest.mark.parametrize("core", IMPLEMENTATIONS)
def test_a_checker_returns_its_channels_frames(core: str) -> None:
    tb, mn, seq = load("tools_begin", core), load("mcp_notifications", core), load("sequence", core)
    tools = seq.ToolsBeginChecker(tb)
    notes = seq.McpNotificationsChecker(mn)
    tb_frames = [tools.payload(payload) for payload in samples.tools_begin_session()]
    mn_frames = [notes.payload(payload) for payload in samples.mcp_notifications_session()]
    assert all(isinstance(frame, (tb.Begun, tb.Error, tb.Active, tb.Inactive)) for frame in tb_frames)
    assert all(isinstance(frame, (mn.Notification, mn.Error)) for frame in mn_frames)
    assert len(tb_frames) == 5 and len(mn_frames) == len(samples.mcp_notifications_session())


def test_the_public_checkers_return_the_public_frame_unions() -> None:
    from diverge_codec import mcp_notifications

    frames = [ToolsBeginChecker().payload(payload) for payload in samples.tools_begin_session()[:1]]
    assert all(isinstance(frame, tools_begin.Frame) for frame in frames)
    notes = McpNotificationsChecker()
    assert all(isinstance(notes.payload(payload), mcp_notifications.Frame) for payload in samples.mcp_notifications_session())


def test_a_proxy_step_sends_tools_begin_frames() -> None:
    hint = typing.get_type_hints(proxy.Step, globalns=vars(proxy))["send"]
    assert typing.get_origin(hint) is list
    machine = proxy.ToolContainerProxy()
    sent = [*machine.begun({"session": "rotating"}).send, *machine.open_exchange("x", "mcp-call-tool").send,
            *machine.fed().send, *machine.answer_exchange("x").send, *machine.collected({"session": 1}).send]
    assert [type(frame).__name__ for frame in sent] == ["Begun", "Active", "Inactive"]
    assert all(isinstance(frame, typing.get_args(hint)[0]) for frame in sent)


def test_the_sdk_helpers_return_the_sdk_models_they_are_typed_with() -> None:
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    mcp_sdk = pytest.importorskip("diverge_codec.mcp_sdk")
    import mcp.types as sdk
    from mcp.shared.exceptions import MCPError

    from diverge_codec import ErrorData, mcp_notifications

    models = typing.get_args(sdk.ServerNotification) + (sdk.TaskStatusNotification, mcp_sdk.CustomNotification)
    for method in ("notifications/progress", "acme/custom"):
        frame = mcp_notifications.Notification({"method": method, "params": {"progressToken": 1, "progress": 2}})
        assert isinstance(mcp_sdk.server_notification(frame, allow_custom=True), models)
    error = ErrorData(-32000, "unreachable")
    assert type(mcp_sdk.sdk_error_data(error)) is sdk.ErrorData
    assert type(mcp_sdk.mcp_error(error)) is MCPError

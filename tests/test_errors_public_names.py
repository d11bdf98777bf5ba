"""Each public error class is shown under the name code catches it by: repr, tracebacks and the docs.

The channel modules' errors live in ``errors`` (a leaf both cores import) under internal
names; each is the same object as its public name and carries that name and place.
"""

from __future__ import annotations

import importlib
import pickle
import traceback

import pytest

from diverge_codec import errors

from conftest import IMPLEMENTATIONS, load

CHANNEL_ERRORS = {
    "tools_begin": ("FrameError", "EmptyFrameError", "UnknownTagError", "BegunParseError", "ErrorParseError",
                    "InactiveParseError"),
    "mcp_notifications": ("FrameError", "EmptyFrameError", "UnknownTagError", "BodyParseError",
                          "NotificationParseError", "ErrorParseError"),
}
INTERNAL_PREFIX = {"tools_begin": "ToolsBegin", "mcp_notifications": "McpNotifications"}
ERRORS_MODULE = ("DecodeError", "EncodeError", "SequenceError", "RemoteProtocolError", "LocalProtocolError",
                 "StreamError", "RecordTooLargeError", "TruncatedStreamError")


def public_classes():
    for channel, names in CHANNEL_ERRORS.items():
        for name in names:
            yield f"diverge_codec.{channel}", name
    for name in ERRORS_MODULE:
        yield "diverge_codec.errors", name


@pytest.mark.parametrize(("module", "name"), list(public_classes()))
def test_each_public_error_class_carries_its_public_name_and_place(module, name):
    cls = getattr(importlib.import_module(module), name)
    assert (cls.__name__, cls.__qualname__, cls.__module__) == (name, name, module)
    assert pickle.loads(pickle.dumps(cls)) is cls


@pytest.mark.parametrize("channel", list(CHANNEL_ERRORS))
def test_the_internal_names_are_the_same_objects(channel):
    module = importlib.import_module(f"diverge_codec.{channel}")
    for name in CHANNEL_ERRORS[channel]:
        assert getattr(errors, INTERNAL_PREFIX[channel] + name) is getattr(module, name)
    assert set(CHANNEL_ERRORS[channel]) <= set(module.__all__)


def test_every_exception_class_in_errors_is_covered():
    shown = {getattr(errors, name) for name in ERRORS_MODULE}
    shown |= {getattr(errors, INTERNAL_PREFIX[c] + n) for c, names in CHANNEL_ERRORS.items() for n in names}
    defined = {value for name, value in vars(errors).items()
               if isinstance(value, type) and issubclass(value, BaseException) and not name.startswith("_")}
    assert defined == shown


@pytest.mark.parametrize("core", IMPLEMENTATIONS)
def test_a_raised_error_shows_its_public_name(core):
    tb = load("tools_begin", core)
    with pytest.raises(errors.ToolsBeginEmptyFrameError) as caught:
        tb.decode(b"")
    assert repr(caught.value).startswith("EmptyFrameError(")
    shown = "".join(traceback.format_exception_only(caught.type, caught.value))
    assert shown.startswith("diverge_codec.tools_begin.EmptyFrameError: ")
    assert type(pickle.loads(pickle.dumps(caught.value))) is caught.type
    mn = load("mcp_notifications", core)
    with pytest.raises(errors.McpNotificationsNotificationParseError) as caught:
        mn.decode(b"\x00[")
    shown = "".join(traceback.format_exception_only(caught.type, caught.value))
    assert shown.startswith("diverge_codec.mcp_notifications.NotificationParseError: ")

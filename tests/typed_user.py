"""A typed user of the public API, checked by mypy --strict and pyright strict (tests/test_typing.py).

Never imported by the tests: only type-checked. Each ``reveal``-free line states a type the
user relies on; a checker that infers something else, or ``Any``, fails the test.
"""

from __future__ import annotations

from typing import Literal, assert_type

import diverge_codec
from diverge_codec import ErrorData, Mode, ProviderError, mcp_notifications, tools_begin
from diverge_codec.cli.doctor import report


def implementation() -> tuple[Literal["cython", "python"], str, str]:
    return diverge_codec.IMPLEMENTATION, diverge_codec.IMPLEMENTATION_REASON, diverge_codec.JSON_BACKEND


def secrets_of(payload: bytes) -> dict[str, Mode]:
    frame = tools_begin.decode(payload)
    match frame:
        case tools_begin.Begun(secrets=secrets):
            return dict(secrets)
        case tools_begin.Inactive(values=values):
            return {name: Mode.ROTATING for name in values}
        case tools_begin.Active():
            return {}
        case tools_begin.Error(error=error):
            assert_type(error, ProviderError)
            return {}


def encoded() -> list[bytes]:
    return [
        tools_begin.encode(tools_begin.Begun({"api_key": "fixed", "session": Mode.ROTATING})),
        tools_begin.encode(tools_begin.ACTIVE),
        tools_begin.encode(tools_begin.Error(ProviderError("refused", argument="region"))),
        mcp_notifications.encode(mcp_notifications.Error(ErrorData(-32000, "unreachable"))),
        mcp_notifications.frame_notification(b'{"method":"notifications/progress"}'),
    ]


def method_of(payload: bytes) -> str | None:
    frame = mcp_notifications.decode(payload)
    if isinstance(frame, mcp_notifications.Notification):
        return frame.method
    assert_type(frame.error, ErrorData)
    return None


def doctor_lines() -> list[tuple[str, str]]:
    return report()

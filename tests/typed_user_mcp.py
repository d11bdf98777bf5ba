"""A typed user of ``diverge_codec.mcp_sdk`` (the [mcp] extra): checked by mypy --strict and pyright strict.

Never imported by the tests: only type-checked (tests/test_typing.py), where the MCP SDK is installed.
"""

from __future__ import annotations

from typing import assert_type

import mcp.types
from mcp.shared.exceptions import MCPError

from diverge_codec import ErrorData, mcp_notifications, mcp_sdk


def progress(frame: mcp_notifications.Notification) -> float | None:
    model = mcp_sdk.server_notification(frame, allow_custom=True)
    if isinstance(model, mcp.types.ProgressNotification):
        return model.params.progress
    assert_type(mcp_sdk.from_server_notification(model), mcp_notifications.Notification)
    return None


def errors(error: ErrorData) -> tuple[mcp.types.ErrorData, ErrorData, MCPError]:
    sdk_error = mcp_sdk.sdk_error_data(error)
    assert_type(mcp_sdk.from_sdk_error_data(sdk_error), ErrorData)
    exc = mcp_sdk.mcp_error(error)
    assert_type(mcp_sdk.from_mcp_error(exc), ErrorData)
    return sdk_error, error, exc

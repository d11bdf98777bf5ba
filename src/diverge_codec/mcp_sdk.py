"""Between this codec's frames and the MCP Python SDK's models (``pip install 'diverge-codec[mcp]'``).

The codec keeps a notification as the server sent it; the SDK reads it into a typed
model. The two differ, and the tests pin how (see docs/mcp_sdk.md's table):

- the SDK's ``ServerNotification`` union knows a fixed set of methods; rmcp's reads
  any other as ``CustomNotification``, and the protocol says such a notification
  arrives as that rather than as a failure. ``server_notification`` likewise gives the
  SDK's generic ``Notification`` for an unknown method, or refuses it with ``strict=True``;
- the SDK drops ``jsonrpc``, ``params: null``, ``"data": null`` and members its models
  do not declare, and reads a progress of ``5`` as ``5.0``: what comes back from a
  model is what the SDK would send, not always what arrived;
- the SDK's ErrorData takes any integer, a float or a numeric string as ``code``; a
  frame's ErrorData is rmcp's, an i32, so ``error_data`` refuses what does not fit.

No SDK error is passed on: pydantic's messages quote the input, so a failure here
says which fields and why, never a value.
"""

from __future__ import annotations

import importlib.metadata
from typing import TYPE_CHECKING, Any, Union, cast


def _sdk_missing() -> str:
    """Why the import failed, by what is installed: the extra's advice would replace a user's mcp 1.x."""
    try:
        found = importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        return ("diverge_codec.mcp_sdk needs the MCP Python SDK (mcp 2.3 or newer, below 3), which is not "
                "installed: pip install 'diverge-codec[mcp]'")
    return f"diverge_codec.mcp_sdk needs mcp 2.3 or newer (below 3); mcp {found} is installed"


try:
    import mcp.types as sdk
    from mcp.shared.exceptions import MCPError
    from pydantic import ValidationError
except ImportError as _missing:  # pragma: no cover - tested in a subprocess (tests/test_mcp_sdk.py)
    raise ImportError(_sdk_missing()) from _missing

from . import mcp_notifications
from ._model import ErrorData

__all__ = [
    "CustomNotification", "NotificationModelError", "from_mcp_error", "from_sdk_error_data",
    "from_server_notification", "mcp_error", "sdk_error_data", "server_notification",
    "KNOWN_METHODS", "MODELED_METHODS",
]

CustomNotification = sdk.Notification[dict[str, Any] | None, str]
"""The SDK's generic notification, ``method`` and ``params`` as sent: what an unknown method reads as."""

_SERVER_NOTIFICATIONS: tuple[type[Any], ...] = sdk.ServerNotification.__args__

_OUTSIDE_THE_UNION: tuple[type[Any], ...] = tuple(
    model for model in (getattr(sdk, "TaskStatusNotification", None),) if model is not None)
"""Server notifications the SDK models but leaves out of its union (``notifications/tasks/status``, 2025-11-25)."""


if TYPE_CHECKING:
    from typing import TypeAlias

    SdkServerNotification: TypeAlias = Union[sdk.ServerNotification, sdk.TaskStatusNotification, CustomNotification]
    """What ``server_notification`` returns: one of the SDK's server notification models, or the generic one."""


def _method(model: type[Any]) -> str:
    method: str = model.model_fields["method"].default
    return method


KNOWN_METHODS: frozenset[str] = frozenset(map(_method, _SERVER_NOTIFICATIONS))
"""Every ``method`` the SDK's ``ServerNotification`` union has a model for."""

_MODEL_BY_METHOD: dict[str, Any] = {_method(model): model for model in _SERVER_NOTIFICATIONS + _OUTSIDE_THE_UNION}

MODELED_METHODS: frozenset[str] = frozenset(_MODEL_BY_METHOD)
"""Every ``method`` ``server_notification`` reads into a typed SDK model: the union's and tasks/status.
Any other is custom: the SDK's generic ``Notification``, unless ``strict``."""


class NotificationModelError(ValueError):
    """A notification frame the SDK's models do not accept; says why, never a value.

    ``reason`` is ``"unknown method"`` or ``"invalid params"``; ``problems`` lists, for
    the latter, pydantic's error types and the model fields they concern.
    """

    def __init__(self, reason: str, problems: tuple[str, ...] = ()) -> None:
        text = reason if not problems else f"{reason}: {'; '.join(problems)}"
        super().__init__(f"notification does not fit the MCP SDK's models: {text}")
        self.reason = reason
        self.problems = problems

    def __reduce__(self) -> tuple[Any, ...]:  # pickles and copies with its own arguments, not its text
        return type(self), (self.reason, self.problems), dict(vars(self)) or None


def _problems(error: ValidationError) -> tuple[str, ...]:
    # Only the error type and the path's field names: never pydantic's input echo.
    problems = []
    for item in error.errors(include_url=False, include_input=False, include_context=False):
        path = ".".join(str(part) for part in item["loc"] if isinstance(part, str) and part.isidentifier())
        problems.append(f"{path or '<root>'} {item['type']}")
    return tuple(dict.fromkeys(problems))


def server_notification(
    frame: mcp_notifications.Notification, *, strict: bool = False, allow_custom: bool | None = None,
) -> SdkServerNotification:
    """The SDK model for a decoded Notification frame (``mcp.types.ServerNotification``).

    Read as the SDK's stdio transport reads the wire: by alias (``progressToken``). A
    method outside ``MODELED_METHODS`` gives ``CustomNotification``, as rmcp's union
    does; ``strict=True`` refuses it instead. ``allow_custom`` is the earlier opt-in,
    kept so existing calls work: ``False`` is ``strict=True``; with ``strict=True`` it
    may not be ``True``.
    """
    if allow_custom is not None:
        if strict and allow_custom:
            raise ValueError("strict=True and allow_custom=True contradict each other")
        strict = not allow_custom
    model = _MODEL_BY_METHOD.get(frame.method)
    if model is None and strict:
        raise NotificationModelError("unknown method")
    notification = frame.notification
    if model is None:
        model, notification = CustomNotification, {"params": None, **notification}
    try:
        return cast("SdkServerNotification", model.model_validate(notification, by_name=False))
    except ValidationError as invalid:
        problems = _problems(invalid)
    # Raised outside the except block: pydantic's error, whose text quotes values, is then
    # not even the __context__ (``from None`` would only hide it from display); and with
    # the notification dropped, a traceback's captured locals show no value either.
    notification = None  # type: ignore[assignment]
    raise NotificationModelError("invalid params", problems)


def from_server_notification(model: sdk.ServerNotification | sdk.Notification[Any, Any]) -> mcp_notifications.Notification:
    """A Notification frame carrying what the SDK's server session sends for ``model``."""
    if not isinstance(model, sdk.Notification):  # every ServerNotification model is one
        raise TypeError(f"expected an MCP SDK notification model, not {type(model).__name__}")
    return mcp_notifications.Notification(model.model_dump(by_alias=True, mode="json", exclude_none=True))


def sdk_error_data(error: ErrorData) -> sdk.ErrorData:
    """The SDK's ``mcp.types.ErrorData`` for a frame's ErrorData (``data`` None stays unset)."""
    if error.data is None:
        return sdk.ErrorData(code=error.code, message=error.message)
    return sdk.ErrorData(code=error.code, message=error.message, data=error.data)


def from_sdk_error_data(error: sdk.ErrorData) -> ErrorData:
    """A frame's ErrorData for the SDK's: ValueError where the code is no i32, as rmcp's is."""
    if not isinstance(error, sdk.ErrorData):
        raise TypeError(f"expected mcp.types.ErrorData, not {type(error).__name__}")
    return ErrorData(error.code, error.message, error.data)


def mcp_error(error: ErrorData) -> MCPError:
    """The SDK's exception for an Error frame's ErrorData, to raise where the SDK expects it."""
    return MCPError.from_error_data(sdk_error_data(error))


def from_mcp_error(exc: MCPError) -> ErrorData:
    """The ErrorData an Error frame carries for an SDK ``MCPError``."""
    return from_sdk_error_data(exc.error)

"""MCP's two eras, as the relay's session speaks them: the facts and the small pure decisions (no I/O, no state).

The 2025 era (``LEGACY_VERSIONS``) opens with the ``initialize`` handshake; the 2026-07-28 era
(``MODERN_VERSIONS``) has none: every request carries ``_meta`` (``request_meta``), log messages are
asked for per request (``io.modelcontextprotocol/logLevel``), and change notifications come on a
``subscriptions/listen`` stream (``listen_params``). A dual-era client finds the era by probing with
``server/discover`` (MCP 2026-07-28, "stdio: Backward Compatibility"); ``read_discover`` reads the
probe's answer. docs/relay.md, "Eras", cites the revision's text.
"""

from __future__ import annotations

from typing import Any

MODERN_VERSIONS = ("2026-07-28",)
"""Revisions without a handshake the relay speaks, newest first."""

LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Revisions with the ``initialize`` handshake the relay speaks, newest first."""

PROTOCOLS = ("auto", *MODERN_VERSIONS, *LEGACY_VERSIONS)
"""What ``--protocol`` takes: ``auto`` finds the era (``server/discover`` first), a revision forces it."""

DISCOVER_TIMEOUT = 1.0
"""Seconds the ``server/discover`` probe waits before the relay takes the server for a 2025-era one and sends
``initialize`` (MCP: "does not respond within a reasonable timeout: the server is legacy"). A DiscoverResult that
comes later, while ``initialize`` is unanswered, still wins: a slow modern server is not lost to the wait."""

LISTEN_ACK_TIMEOUT = 1.0
"""Seconds the calls wait for the ``subscriptions/listen`` acknowledgement before they go out all the same."""

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""MCP's log levels (RFC 5424's), for ``--server-log-level``."""

MODERN_ERRORS = (-32020, -32021, -32022)
"""JSON-RPC errors only a modern server sends (HeaderMismatch, MissingRequiredClientCapability,
UnsupportedProtocolVersion): the revision's "recognized modern JSON-RPC error"."""

UNSUPPORTED_VERSION = -32022

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"

OFFERED_SHOWN = 16
"""At most this many of the versions a server offered are kept for the report (each cut to 32 characters)."""


def request_meta(version: str, client_info: dict[str, str], log_level: str | None = None) -> dict[str, Any]:
    """The ``_meta`` every modern request carries (the relay declares no client capability)."""
    meta: dict[str, Any] = {PROTOCOL_VERSION_KEY: version, CLIENT_CAPABILITIES_KEY: {}, CLIENT_INFO_KEY: client_info}
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    return meta


def listen_params(uris: list[str]) -> dict[str, Any]:
    """The ``subscriptions/listen`` filter: every list change, and updates of the resources named."""
    notifications: dict[str, Any] = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
    if uris:
        notifications["resourceSubscriptions"] = uris
    return {"notifications": notifications}


def offered_versions(answer: dict[str, Any]) -> list[str] | None:
    """The versions a server says it supports: a DiscoverResult's ``supportedVersions`` or an
    UnsupportedProtocolVersionError's ``data.supported``; None when the answer names none."""
    result, error = answer.get("result"), answer.get("error")
    if isinstance(result, dict):
        versions = result.get("supportedVersions")
    elif isinstance(error, dict) and error.get("code") == UNSUPPORTED_VERSION and isinstance(error.get("data"), dict):
        versions = error["data"].get("supported")
    else:
        return None
    if not isinstance(versions, list):
        return None
    return [version[:32] for version in versions if isinstance(version, str)][:OFFERED_SHOWN]


def is_modern_error(answer: dict[str, Any]) -> bool:
    """An error only a modern server sends (``MODERN_ERRORS``)."""
    error = answer.get("error")
    return isinstance(error, dict) and error.get("code") in MODERN_ERRORS


def read_discover(answer: dict[str, Any]) -> tuple[str, str | None, list[str] | None]:
    """What the ``server/discover`` answer says: (``modern``, the revision to use, the versions offered),
    (``legacy``, a 2025 revision the server named or None, ...) or (``none``, None, the versions offered).

    A DiscoverResult or a recognized modern error makes the server modern: the relay uses a modern
    revision both name, else a 2025 one the server named (a dual-era server may list one), else none
    is shared. Any other answer, error or not, makes it a 2025-era server (MCP: "Fall back to the
    ``initialize`` handshake"; never keyed to one error code)."""
    offered = offered_versions(answer)
    modern = isinstance(answer.get("result"), dict) and offered is not None or is_modern_error(answer)
    if not modern:
        return "legacy", None, None
    offered = offered or []
    for version in MODERN_VERSIONS:
        if version in offered:
            return "modern", version, offered
    for version in LEGACY_VERSIONS:
        if version in offered:
            return "legacy", version, offered
    return "none", None, offered


def is_input_required(answer: dict[str, Any]) -> bool:
    """A result that asks the client for input (MCP 2026-07-28's multi round-trip requests): the relay has none."""
    result = answer.get("result")
    return isinstance(result, dict) and result.get("resultType") == "input_required"

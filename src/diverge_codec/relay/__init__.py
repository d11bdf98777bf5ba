"""The relay: an MCP server's notifications onto a mcp-notifications channel.

The front door for a program is ``api.Relay``: ``async with Relay(Command([...]) or Remote(url), options)``,
then ``async for`` its frames, ``await relay.answer(label)``, ``relay.report`` (docs/embedding.md).

One sans-IO session, several transport drivers side by side over it:

- ``outbox``: ``relay_frame`` (a server message to a channel payload) and the ``Outbox``
  (bounded in bytes, drops and counts);
- ``session``: ``RelaySession``, the MCP client side of one session (handshake, calls, which
  message is what, the report), no I/O; ``eras`` beside it: the 2026-07-28 and 2025 eras' facts
  and the ``server/discover`` probe's reading;
- ``eventstream``: server-sent events as bytes (the HTTP transports' bodies), no I/O;
- ``channel``: what every driver shares (the channel's writers, ``RelayOptions``, the pump);
- ``stdio``: ``ServerRelay``, a server run as a child process;
- ``streamable_http``: ``HttpRelay``, a remote server over HTTP (the ``[http]`` extra), the entry that
  finds what it speaks: ``http_stateless`` (MCP 2026-07-28), ``streamable_http``'s ``StreamableHttp`` (the
  2025 era) or ``http_sse`` (the older HTTP+SSE), drivers over ``http_driver``, with ``http_requests``
  (one request made), ``http_common``, ``http_streams`` (bodies and streams read),
  ``http_reach`` (whether the server can be reached) and ``http_body`` (content codings), all on
  ``http_client`` (HTTP/1.1 by h11 on asyncio);
- ``leftovers``: what a stdio server leaves behind, found and ended;
- ``remote_auth`` and ``cookies``: a remote server's credentials (tokens, TLS) and the cookies it sets.

What an operator must know as it happens is logged to the ``diverge_codec.relay`` logger (INFO; DEBUG: each
HTTP exchange and each stdio lifecycle step, never a header value, token, cookie, body or query); the library
adds only a ``NullHandler`` (``relay --log-level`` puts a handler on stderr).

The public names below are importable from here; each module loads on first use, so a
codec user or a stdio relay never imports the HTTP client or ``ssl``, nor a plain http:// one ``ssl``'s CAs.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

logging.getLogger(__name__).addHandler(logging.NullHandler())  # the library logs; only an application says where

__all__ = [
    "Answer", "Command", "CommandToken", "CredentialError", "FrameSink", "NetworkPolicy", "Relay", "RelayEnded", "Remote",
    "TokenProvider", "become_subreaper", "check_url", "end_adopted", "expand_header", "load_client", "parse_header",
    "DEFAULT_GRACE", "DEFAULT_MAX_LINE", "DEFAULT_OUTBOX_BYTES", "DEFAULT_RECONNECT_WINDOW", "DEFAULT_REQUEST_TIMEOUT",
    "PROTOCOL_VERSION", "SUPPORTED_VERSIONS", "DEFAULT_STREAM_TIMEOUT", "DISCOVER_TIMEOUT", "LOG_LEVELS", "MODERN_VERSIONS",
    "PROTOCOLS",
    "ChannelRelay", "ChannelWriter", "EventParser", "FileWriter", "HttpRelay", "MAX_RECORD_BYTES", "Outbox", "PIPE_BYTES",
    "PipeWriter",
    "RelayOptions", "RelayReport", "RelaySession", "RelayUnsupported", "ServerRelay", "UNREACHABLE_CODE", "exit_status",
    "notification_json", "open_writer", "relay", "relay_frame", "unreachable_frame",
]

_HOMES = {
    "Answer": "api", "Command": "api", "Relay": "api", "RelayEnded": "api", "Remote": "api", "FrameSink": "channel",
    "NetworkPolicy": "network", "TokenProvider": "network",
    "CommandToken": "remote_auth", "CredentialError": "remote_auth", "expand_header": "remote_auth",
    "become_subreaper": "leftovers", "end_adopted": "leftovers",
    "check_url": "streamable_http", "load_client": "streamable_http", "parse_header": "streamable_http",
    "DEFAULT_GRACE": "session", "DEFAULT_MAX_LINE": "session", "DEFAULT_OUTBOX_BYTES": "session",
    "DEFAULT_RECONNECT_WINDOW": "session", "DEFAULT_REQUEST_TIMEOUT": "session", "PROTOCOL_VERSION": "session",
    "SUPPORTED_VERSIONS": "session", "DEFAULT_STREAM_TIMEOUT": "session",
    "DISCOVER_TIMEOUT": "eras", "LOG_LEVELS": "eras", "MODERN_VERSIONS": "eras", "PROTOCOLS": "eras",
    "MAX_RECORD_BYTES": "outbox", "UNREACHABLE_CODE": "outbox", "Outbox": "outbox", "notification_json": "outbox",
    "relay_frame": "outbox", "unreachable_frame": "outbox",
    "RelayReport": "session", "RelaySession": "session",
    "EventParser": "eventstream",
    "ChannelRelay": "channel", "ChannelWriter": "channel", "FileWriter": "channel", "PipeWriter": "channel",
    "RelayOptions": "channel", "exit_status": "channel", "open_writer": "channel", "PIPE_BYTES": "channel",
    "RelayUnsupported": "stdio", "ServerRelay": "stdio", "relay": "stdio",
    "HttpRelay": "streamable_http",
}

if TYPE_CHECKING:
    from .api import Answer, Command, Relay, RelayEnded, Remote
    from .channel import FrameSink
    from .leftovers import become_subreaper, end_adopted
    from .network import NetworkPolicy, TokenProvider
    from .remote_auth import CommandToken, CredentialError, expand_header
    from .eras import DISCOVER_TIMEOUT, LOG_LEVELS, MODERN_VERSIONS, PROTOCOLS
    from .session import (
        DEFAULT_STREAM_TIMEOUT, DEFAULT_GRACE, DEFAULT_MAX_LINE, DEFAULT_OUTBOX_BYTES, DEFAULT_RECONNECT_WINDOW, DEFAULT_REQUEST_TIMEOUT,
        PROTOCOL_VERSION, SUPPORTED_VERSIONS,
    )
    from .streamable_http import check_url, load_client, parse_header
    from .channel import PIPE_BYTES, ChannelRelay, ChannelWriter, FileWriter, PipeWriter, RelayOptions, exit_status, open_writer
    from .eventstream import EventParser
    from .outbox import MAX_RECORD_BYTES, UNREACHABLE_CODE, Outbox, notification_json, relay_frame, unreachable_frame
    from .session import RelayReport, RelaySession
    from .stdio import RelayUnsupported, ServerRelay, relay
    from .streamable_http import HttpRelay


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

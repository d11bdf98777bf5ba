"""What every HTTP driver of the relay shares that holds no state: the options checked (``check_url``,
``parse_header``), the bounds, and the words for a failed request (``why``), which quote neither the URL nor
a header's value (either may hold a credential).
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any
from urllib.parse import urlsplit

from .._json import loads

__all__ = ["TRANSPORTS", "Refused", "check_url", "load_client", "message_head", "origin", "parse_header", "rpc_error", "why"]

TRANSPORTS = ("auto", "streamable-http", "sse")
"""``auto``: Streamable HTTP, or the older HTTP+SSE where ``initialize``'s POST is answered 400, 404 or 405."""

ACCEPT = "application/json, text/event-stream"
ACCEPT_ENCODING = "gzip, deflate"
"""What the relay can inflate in bounded pieces; a body in any other coding is refused, unread."""
MAX_POSTS = 64
"""POSTs in flight at once; the rest wait their turn. Past it, answers to the server's own requests are
dropped and counted (``requests_unanswered``), as for a stdio server that does not read."""
SETTLE = 0.1
"""``--until-answered``: seconds without an event after which the server's own stream is taken to be quiet."""
QUICK_LOSSES = 3
"""Sessions in a row lost within ``QUICK_END`` of being made (a server that forgets each one at once): the relay ends."""
CONNECT_TIMEOUT = 10.0
DELETE_TIMEOUT = 2.0
MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
LEGACY_SIGNS = (400, 404, 405)
"""Statuses to ``initialize``'s POST that mean "try the older HTTP+SSE transport" (MCP's backwards compatibility)."""
METADATA_BYTES = 64 * 1024
"""The most read of a protected resource's metadata (RFC 9728)."""
METADATA_TIMEOUT = 5.0
"""Seconds the metadata may take, all told."""
METADATA_URL_CHARS = 2048
"""The longest ``resource_metadata`` URL followed; a longer one is not."""


class Refused(Exception):
    """A request the relay cannot go on with; its text names no value (the report's error)."""


def load_client() -> Any:
    """The ``http_client`` module, or an ImportError that says how to install what it needs (h11)."""
    try:
        from . import http_client
    except ImportError:
        raise ImportError("the relay's HTTP transport needs h11, which is not installed: "
                          "pip install 'diverge-codec[http]'") from None
    return http_client


def check_url(url: str) -> str:
    """``url`` if it is an http(s) URL with a host and a valid port; ValueError (never quoting it) if not."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("--url must be an http:// or https:// URL with a host")
    try:
        parts.port  # noqa: B018  (raises on a port outside 0-65535 or not a number)
    except ValueError:
        raise ValueError("--url has an invalid port") from None
    if not url.isascii() or any(char.isspace() or ord(char) < 0x21 for char in url):
        raise ValueError("--url must be ASCII without spaces or control characters (percent-encode the rest)")
    return url


def parse_header(text: str) -> tuple[str, str]:
    """``Name: value`` as (name, value); ValueError (naming no value) for anything else."""
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not name or not _is_token(name):
        raise ValueError("--header must be 'Name: value'")
    if not all(char == "\t" or 0x20 <= ord(char) <= 0x7E for char in value):
        raise ValueError(f"--header {name}: the value must be printable ASCII (HTTP cannot carry the rest as sent)")
    return name, value


def _is_token(name: str) -> bool:
    return all(0x21 <= ord(char) <= 0x7E and char not in '"(),/:;<=>?@[\\]{}' for char in name)


def is_session_id(value: str) -> bool:
    """MCP's rule: a session id is visible ASCII (0x21-0x7E) only."""
    return 0 < len(value) <= 1024 and all(0x21 <= ord(char) <= 0x7E for char in value)


def why(error: BaseException) -> str:
    """A one-line reason for a failed request that quotes neither the URL nor a header: the client's own words
    where they name the failed hop and its fix (TLS, a proxy), else the OS's error."""
    from .http_client import HttpError, ProxyError, TlsError

    if isinstance(error, (TlsError, ProxyError)) and str(error):
        return str(error)

    ssl = sys.modules.get("ssl")  # looked up, not imported: without it no TLS error can have happened
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if ssl is not None and isinstance(cause, ssl.SSLError):
            return f"TLS: {cause.reason or type(cause).__name__}"
        if isinstance(cause, socket.gaierror):
            return f"name resolution: {cause.strerror or 'failed'}"
        if isinstance(cause, OSError) and cause.errno:  # the errno's words: asyncio's own text names the address
            return os.strerror(cause.errno).lower()
        cause = cause.__cause__ or cause.__context__
    return str(error) if isinstance(error, HttpError) and str(error) else type(error).__name__


CERTIFICATE_REFUSALS = (
    (b"no required ssl certificate", "the server asks for a client certificate and none was sent (--cert, --key)"),
    (b"ssl certificate error", "the server refused the client certificate (--cert: one its CA signed, still valid?)"),
)
"""nginx's 400 pages when it asks for a client certificate (``ssl_verify_client``), in lower case: a TLS problem."""


def refuse_certificate(status: int, reason: bytes, what: str) -> None:
    """A 400 whose page says the client certificate was missing or refused (nginx's): ``Refused`` in those words."""
    if status == 400:
        page = reason.lower()
        for sign, words in CERTIFICATE_REFUSALS:
            if sign in page:
                raise Refused(f"HTTP 400 on {what}: {words}")


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    try:
        port = parts.port or default
    except ValueError:
        port = -1
    return parts.scheme, (parts.hostname or "").lower(), port


def message_head(message: bytes) -> tuple[object, str, dict[str, Any]]:
    """The id of one of the session's own requests (None for a notification or an answer to the server: those
    await nothing), its method for an error's words ("a response" for an answer), and the message parsed ({} for
    one that is no object), from one parse."""
    try:
        parsed = loads(message)
    except ValueError:
        return None, "a message", {}
    if not isinstance(parsed, dict):
        return None, "a message", {}
    method = parsed.get("method")
    if not isinstance(method, str):  # an answer to the server's request: its id is the server's, not ours
        return None, "a response", parsed
    return parsed.get("id"), method if method.isascii() and len(method) < 64 else "a request", parsed


def rpc_error(body: bytes) -> dict[str, Any] | None:
    """An error status's body that is a JSON-RPC error (the 2026-07-28 revision's errors come so), else None."""
    try:
        parsed = loads(body)
    except ValueError:
        return None
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        return parsed
    return None

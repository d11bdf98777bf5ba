"""Proxies for the relay's HTTP client, read as the platform reads them.

- ``proxy_for(url)``: the proxy the standard library's own functions choose (``urllib.request.getproxies`` and
  ``proxy_bypass``): on Linux and the BSDs the environment (``http_proxy``, ``https_proxy``, ``all_proxy``,
  ``no_proxy``, the lower-case name winning and an empty lower-case value turning a proxy off; with
  ``REQUEST_METHOD`` set, a CGI context, ``HTTP_PROXY`` is ignored: httpoxy, CVE-2016-1000110), on macOS and
  Windows the system's settings too. ``NO_PROXY`` entries with a port (``host:8080``) or an IPv6 literal
  (``::1``, ``[::1]``, ``[::1]:8000``) match. ``urllib.request`` costs about 20 ms to import: it is imported
  only where a proxy can be set (a ``*_proxy`` variable, or macOS and Windows).
- ``proxy_authorization(proxy)``: its user and password as ``Proxy-Authorization``.
- ``proxy_refusal(status, headers)``: whether an answer came from the proxy itself (407, or a 403 a proxy marks
  as its own: RFC 9209's ``Proxy-Status``, squid's ``X-Squid-Error``, tinyproxy's ``Server``).
"""

from __future__ import annotations

import base64
import os
import sys
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["proxy_authorization", "proxy_for", "proxy_refusal"]


def _may_have_proxies() -> bool:
    return sys.platform in ("darwin", "win32") or any(name[-6:].lower() == "_proxy" for name in os.environ)


def proxy_for(url: str) -> str | None:
    """The proxy ``url`` goes through, as an ``http://`` URL (a bare ``host:port`` made one), or None."""
    parts = urlsplit(url)
    if not _may_have_proxies() or not parts.hostname:
        return None
    import urllib.request

    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme.lower()) or proxies.get("all")
    if not proxy:
        return None
    host = parts.hostname
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:  # not a port: the client refuses the URL before it asks
        return None
    named = f"[{host}]" if ":" in host else host
    if any(urllib.request.proxy_bypass(candidate) for candidate in (f"{named}:{port}", host, named)):
        return None
    return proxy if "://" in proxy else "http://" + proxy


def proxy_authorization(proxy: str) -> list[tuple[str, str]]:
    parts = urlsplit(proxy)
    if parts.username is None:
        return []
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
    return [("Proxy-Authorization", "Basic " + base64.b64encode(pair).decode("ascii"))]


PROXY_SERVERS = (b"tinyproxy", b"squid")


def proxy_refusal(status: int, headers: Any) -> bool:
    """Whether a 403 or 407 is the proxy's own answer, not the server's (``headers``: raw lower-case pairs)."""
    if status == 407:
        return True
    if status != 403:
        return False
    for name, value in headers:
        if name in (b"proxy-status", b"x-squid-error") or (name == b"server" and value.lower().startswith(PROXY_SERVERS)):
            return True
    return False

"""A program's own credentials and network policy for a remote server (``api.Remote``).

- ``TokenProvider``: an async callable giving a bearer token (a ``Bearer`` prefix allowed); the relay awaits
  it before the first request and again when a request sent with the current token is answered 401, at the
  rate ``remote_auth.TokenSource`` keeps for ``--token-command`` (which is one such provider). Its failure
  is said by the exception's type alone: its text may hold a secret.
- ``NetworkPolicy``: the TLS trust (an ``ssl.SSLContext``, or a CA file), a client certificate, a proxy URL
  or none, and whether the environment is read at all. ``NetworkPolicy()`` is the CLI's: ``HTTPS_PROXY``,
  ``NO_PROXY`` and ``SSL_CERT_FILE``/``SSL_CERT_DIR`` as the system reads them. With ``environment=False``
  nothing is read from the environment: no proxy but ``proxy``, and without ``ssl_context`` or ``cafile``
  the CAs OpenSSL was built to trust (its compiled-in paths, not ``SSL_CERT_FILE``).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .frozen import Frozen, url_shown

__all__ = ["NetworkPolicy", "TokenProvider"]

TokenProvider = Callable[[], Awaitable[str]]
"""An async callable giving a bearer token (``api.Remote.token``)."""


@dataclass(init=False, repr=False, eq=False)  # frozen, ==, hash: Frozen's (no code generated at start-up)
class NetworkPolicy(Frozen):
    """How a remote relay reaches its server: trust, client certificate, proxy, and the environment's part."""

    ssl_context: Any = None
    """An ``ssl.SSLContext`` used as it is for https (ALPN ``http/1.1`` is the program's to offer); else made
    from ``cafile``, ``cert`` and ``key``."""
    cafile: str | None = None
    """A PEM bundle of the CAs to trust instead of the system's."""
    cert: str | None = None
    """A PEM client certificate to present (mTLS), its key in it or in ``key``."""
    key: str | None = None
    proxy: str | None = None
    """An ``http://`` proxy every request goes through (CONNECT for https); None: the environment's, if read."""
    environment: bool = True
    """Whether ``*_PROXY``, ``NO_PROXY``, ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` are read."""

    def __init__(self, ssl_context: Any = None, cafile: str | None = None, cert: str | None = None,
                 key: str | None = None, proxy: str | None = None, environment: bool = True) -> None:
        if ssl_context is not None and (cafile or cert or key):
            raise ValueError("NetworkPolicy: an ssl_context, or cafile/cert/key to make one, not both")
        if proxy is not None:
            parts = urlsplit(proxy)
            if parts.scheme.lower() != "http" or not parts.hostname:
                raise ValueError("NetworkPolicy: proxy must be an http:// URL with a host")
        vars(self).update(ssl_context=ssl_context, cafile=cafile, cert=cert, key=key, proxy=proxy,
                          environment=environment)

    def __repr__(self) -> str:
        """The files' paths, the proxy without its user, password or query."""
        return (f"NetworkPolicy(ssl_context={self.ssl_context!r}, cafile={self.cafile!r}, cert={self.cert!r}, "
                f"key={self.key!r}, proxy={url_shown(self.proxy)!r}, environment={self.environment!r})")

    def proxy_for(self, url: str) -> str | None:
        """The proxy ``url`` goes through, or None."""
        if self.proxy is not None:
            return self.proxy
        if not self.environment:
            return None
        from .http_proxy import proxy_for

        return proxy_for(url)

    def tls(self) -> Any:
        """The ``ssl.SSLContext`` for https, or None: the client's default (``http_tls.default_tls``), made when
        first needed (only where the environment may be read)."""
        if self.ssl_context is not None:
            return self.ssl_context
        from .remote_auth import tls_context

        if self.environment:
            return tls_context(self.cafile, self.cert, self.key) if self.cafile or self.cert or self.key else None
        context = tls_context(self.cafile, None, None) if self.cafile else _built_in_trust()
        if self.cert is not None:
            from .remote_auth import load_client_certificate

            load_client_certificate(context, self.cert, self.key)
        return context


def _built_in_trust() -> Any:
    """The CAs at the paths OpenSSL was built with, read without ``SSL_CERT_FILE``/``SSL_CERT_DIR``."""
    import ssl

    from .http_tls import offer_http11

    paths = ssl.get_default_verify_paths()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    cafile = paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None
    capath = paths.openssl_capath if os.path.isdir(paths.openssl_capath) else None
    if cafile or capath:
        context.load_verify_locations(cafile=cafile, capath=capath)
    return offer_http11(context)

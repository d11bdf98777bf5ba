"""One request of the relay's HTTP drivers, made: redirects followed within the origin, a token from
``--token-command`` on every request (a new one on a 401, as ``remote_auth.TokenSource`` allows), a 401 or 403
said once a token and counted, a refusal put in words from the server's ``WWW-Authenticate`` and RFC 9728
metadata (``remote_auth``), each exchange a DEBUG line (never a header value, a body or a query).

A mixin of ``http_driver.HttpDriver``, which holds the client, the options and the report.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urljoin, urlsplit

from .._json import loads
from .http_common import (MAX_REDIRECTS, METADATA_BYTES, METADATA_TIMEOUT, METADATA_URL_CHARS, REDIRECTS, Refused,
                          origin, why)
from .http_reach import log, path_of, unreachable_status
from .remote_auth import CredentialError, describe_challenge, log as _auth_log, parse_challenge

__all__ = ["Requests"]


class Requests:
    """Requests made (``_open``), tokens sent, refusals said; ``tokens`` is the host's ``TokenSource`` or None."""

    @contextlib.asynccontextmanager
    async def _open(self: Any, method: str, what: str, headers: dict[str, str], content: bytes | None = None, *,
                    url: str | None = None, retry_safe: bool = False) -> AsyncIterator[Any]:
        """One request's response (to ``url``, by default the server's), redirects followed within the origin
        (307/308 keep the method, body and headers); a redirect elsewhere, or one that changes the method, is
        refused (``Refused``). A redirect answering a POST moves the server's URL for later requests; one
        answering the GET stream moves that GET alone. With a token source, a 401 makes it fetch a new token
        once and try again. ``retry_safe``: the client may send it again on a fresh connection when a reused one
        failed before any byte of the answer (GET, DELETE, a POSTed answer or notification). Each exchange is
        a DEBUG line: method, path, status, time."""
        moves_url, url = url is None, url or self.url
        retried = False
        for _ in range(MAX_REDIRECTS + 2):
            if self.tokens is not None:
                if self.tokens.header is None:  # the first request: run --token-command
                    await self._token(0)
                sent_version = self.tokens.version
                headers = {**headers, "Authorization": self.tokens.header or ""}
            async with self._exchange(method, url, headers, content, retry_safe) as response:
                self._statuses[response.status_code] += 1
                if (response.status_code == 401 and self.tokens is not None and not retried  # expired: a new one, once
                        and self.tokens.may_refresh(sent_version)):
                    retried = True
                    await self._read_reason(response, count=False)
                    await self._token(sent_version)
                    continue
                if response.status_code not in REDIRECTS:
                    self._answered_auth(response.status_code, what, sent_version if self.tokens is not None else 0)
                    yield response
                    return
                target = urljoin(url, response.headers.get("location", ""))
                if response.status_code not in (307, 308):
                    raise Refused(f"HTTP {response.status_code} on {what}: a redirect that changes the request")
                if origin(target) != self._origin:
                    raise Refused(f"HTTP {response.status_code} on {what}: redirect to another origin")
                url = target
                if moves_url and method == "POST":
                    self.url = target
        raise Refused(f"HTTP 3xx on {what}: more than {MAX_REDIRECTS} redirects")

    @contextlib.asynccontextmanager
    async def _exchange(self: Any, method: str, url: str, headers: dict[str, str], content: bytes | None,
                        retry_safe: bool) -> AsyncIterator[Any]:
        """One request and its response, said at DEBUG (never a header value, a body or a query); any answer
        but a gateway's 502-504 (or 429 with ``Retry-After``) says the server is reached."""
        started = time.monotonic()
        try:
            async with self._client.stream(method, url, headers=headers, content=content, retry_safe=retry_safe) as response:
                status = int(response.status_code)
                log.debug("%s %s: HTTP %d (%.0f ms)", method, path_of(url), status, (time.monotonic() - started) * 1000)
                if not unreachable_status(status, response.headers):
                    self._answered_status(status)
                yield response
        except self._http.HttpError as error:
            log.debug("%s %s: %s (%.0f ms)", method, path_of(url), why(error), (time.monotonic() - started) * 1000)
            raise

    async def _token(self: Any, seen_version: int) -> None:
        """A token from ``--token-command`` (a new one unless another request got one since ``seen_version``)."""
        assert self.tokens is not None
        try:
            await self.tokens.refresh(seen_version)
        except CredentialError as error:
            raise Refused(str(error)) from None

    _refusal_said: int | None = None  # the token version the last refusal was logged for

    @property
    def _token_sent(self: Any) -> bool:
        return self.tokens is not None or any(name.lower() == "authorization" for name, _ in self.headers)

    def _answered_auth(self: Any, status: int, what: str, sent_version: int) -> None:
        """A request answered for good (after a new token, where one could be had). 401 or 403: counted ``refused``
        in the report (its call fails, never answered), and said once for each token; else the token served."""
        if status not in (401, 403):
            if self.tokens is not None:
                self.tokens.accepted(sent_version)
            return
        server = self.report.server
        server["refused"] = server.get("refused", 0) + 1
        version = self.tokens.version if self.tokens is not None else 0
        if self._refusal_said != version:
            self._refusal_said = version
            words = describe_challenge(status, None, None, token_sent=self._token_sent)[0]
            _auth_log.info("HTTP %d on %s: %s", status, what, words)

    async def _refused_status(self: Any, response: Any, status: int, what: str) -> None:
        """Raise the refusal of a request answered ``status``, in words: for 401/403 what authorization the
        server asks for (its ``WWW-Authenticate`` and, where it publishes one, its RFC 9728 metadata)."""
        if status not in (401, 403):
            raise Refused(f"HTTP {status} on {what}")
        challenge = response.headers.get("www-authenticate")
        metadata = await self._resource_metadata(parse_challenge(challenge)[1].get("resource_metadata") if challenge else None)
        words, found = describe_challenge(status, challenge, metadata, token_sent=self._token_sent, url=self.url)
        self.report.server["authorization"] = found
        raise Refused(f"HTTP {status} on {what}: {words}")

    async def _resource_metadata(self: Any, url: object) -> dict[str, Any] | None:
        """The protected resource's metadata (RFC 9728), fetched with no header of the relay's (another origin
        may serve it); None where there is none or it cannot be read within bounds."""
        if not isinstance(url, str) or len(url) > METADATA_URL_CHARS or urlsplit(url).scheme not in ("http", "https"):
            return None
        try:
            body = await asyncio.wait_for(self._metadata_body(url), METADATA_TIMEOUT)
            parsed = loads(body) if body is not None else None
        except (self._http.HttpError, ValueError, Refused, asyncio.TimeoutError):
            return None
        return parsed if isinstance(parsed, dict) else None

    async def _metadata_body(self: Any, url: str) -> bytes | None:
        verify = self._client.verify if self._client is not None else self.verify  # the CAs loaded already, if any
        async with self._http.HttpClient(verify=verify, connect_timeout=METADATA_TIMEOUT,
                                         write_timeout=METADATA_TIMEOUT, proxy=self.network.proxy_for) as bare:
            async with bare.stream("GET", url, {"Accept": "application/json"}) as response:
                if response.status_code != 200:
                    return None
                body = b""
                async for piece in self._pieces(response):
                    body += piece
                    if len(body) > METADATA_BYTES:
                        return None
                return body


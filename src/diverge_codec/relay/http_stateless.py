"""The stateless Streamable HTTP binding of MCP 2026-07-28: no handshake, no ``Mcp-Session-Id``, no GET stream.

Every message is its own POST and carries the routing headers the revision asks for, matching its body:
``MCP-Protocol-Version`` (the revision in its ``_meta``), ``Mcp-Method`` and, for ``tools/call`` and
``prompts/get`` (``params.name``) and ``resources/read`` (``params.uri``), ``Mcp-Name``; a value HTTP cannot
carry as it is (not printable ASCII, or with spaces at an end) goes as ``=?base64?...?=`` of its UTF-8. The
answer is one JSON body or an event stream on which the request's progress and log messages come first.

- The first POST is ``server/discover``. A 2xx answer, or a 400 whose body is a JSON-RPC error, is read by the
  session (``eras.read_discover``: a modern error such as -32022 means a modern server, or no shared
  revision, named with the versions it offered); any other status means no modern server: the session falls
  back to ``initialize`` and the relay goes on as the next driver (the 2025 era's Streamable HTTP).
- ``subscriptions/listen`` is a POST whose event stream lasts as long as the relay: where it breaks off or
  ends (the server restarted), it is opened again as a new request after a backoff (``listen_reopened``);
  the revision has no resumption, so nothing is replayed and nothing is relayed twice.
- A call whose response stream breaks off before its answer is **not** sent again (the revision allows a
  new request; the relay's rule is that a tool may have run): it fails, counted ``calls_broken``, one line.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

from .._json import dumps
from .channel import _first
from .eras import PROTOCOL_VERSION_KEY
from .http_common import message_head, refuse_certificate, rpc_error, why
from .http_driver import HttpDriver
from .http_reach import log
from .http_streams import BACKOFF_CAP, RETRY_FLOOR
from .session import Phase

__all__ = ["NAMED_BY", "StatelessHttp", "header_value", "routing_headers"]

NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The methods whose ``Mcp-Name`` header mirrors a field of their params."""


def header_value(text: str) -> str:
    """``text`` as an HTTP field value: as it is where it is printable ASCII without spaces at its ends, else
    ``=?base64?...?=`` of its UTF-8 (MCP 2026-07-28's encoding for the headers it mirrors)."""
    if text.isascii() and text.isprintable() and text == text.strip():
        return text
    return f"=?base64?{base64.b64encode(text.encode('utf-8', 'surrogatepass')).decode('ascii')}?="


def routing_headers(message: dict[str, Any]) -> dict[str, str]:
    """The headers a modern POST of ``message`` carries, from its body (none for a message that is no request)."""
    method = message.get("method")
    if not isinstance(method, str):
        return {}
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    headers = {"Mcp-Method": header_value(method)}
    meta = params.get("_meta")
    version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    if isinstance(version, str):
        headers["MCP-Protocol-Version"] = header_value(version)
    name = params.get(NAMED_BY.get(method, ""))
    if isinstance(name, str):
        headers["Mcp-Name"] = header_value(name)
    return headers


class StatelessHttp(HttpDriver):
    """The 2026-07-28 binding: each request a POST of its own, the listen stream kept open."""

    TRANSPORT = "streamable-http"
    _calls_broken = 0
    _listen_delay = 0.0

    async def _begin(self, message: bytes) -> None:
        """POST ``server/discover``; its answer, or the error its 400 carries, tells the era."""
        request_id, what, parsed = message_head(message)
        generation = self._generation
        headers = {**self._request_headers(), **routing_headers(parsed), "Content-Type": "application/json"}
        try:
            async with self._open("POST", what, headers, message) as response:
                status = response.status_code
                if status < 300:
                    self.report.server["started"] = True
                    await self._read_answer(response, request_id, generation, what)
                    self._received(self.session.not_modern(f"HTTP {status} without a DiscoverResult"))
                    return
                reason = await self._read_reason(response, count=False)
                refuse_certificate(status, reason, what)
                if status in (401, 403):
                    await self._refused_status(response, status, what)
                answer = rpc_error(reason) if status == 400 else None
                if answer is not None:
                    self.report.server["started"] = True
                    self._received(self.session.receive_messages([dumps({**answer, "id": request_id})]))
                else:
                    self._received(self.session.not_modern(f"HTTP {status}"))
        except self._http.HttpError as error:
            self._fail(why(error), "unreachable")

    def _send(self, data: bytes) -> None:
        """The session's messages POSTed; ``initialize`` (the probe found no modern server) goes to the next driver."""
        if self.session.phase is Phase.INITIALIZING:
            self._spawn(self._next_driver(data))
            return
        super()._send(data)

    def _own_stream_open(self) -> bool:
        return self.session.listen_id is not None and self.report.listen == "acknowledged"

    def _post_headers(self, message: dict[str, Any]) -> dict[str, str]:
        return routing_headers(message)

    async def _read_posted(self, response: Any, request_id: object, generation: int, what: str) -> None:
        """The answer read (an event stream to its end: nothing is resumed in this era); a request still
        unanswered after its stream is the listen stream to open again, or a call that broke off."""
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if kind != "text/event-stream":
            await self._read_answer(response, request_id, generation, what)
            return
        await self._read_events(response, self._parser())
        if self._stop.is_set() or not isinstance(request_id, int) or request_id not in self.session.pending:
            return
        if request_id == self.session.listen_id:
            self._spawn(self._relisten())
            return
        self._calls_broken += 1
        self.report.server["calls_broken"] = self._calls_broken
        log.info("%s: its response stream broke off before the answer; not sent again (the tool may have run)",
                 self.session.label(request_id) or what)
        self._give_up(request_id, "its response stream broke off before the answer (not sent again)")

    def _request_failed(self, request_id: object, what: str, why: str, generation: int, *, unreachable: bool,
                        wait: float | None = None) -> None:
        """As the base's; but the listen stream is never given up while the server may come back."""
        if request_id is not None and request_id == self.session.listen_id and not self._stop.is_set():
            if not unreachable or self._unreachable_now(why, wait):
                self._spawn(self._relisten())
            return
        super()._request_failed(request_id, what, why, generation, unreachable=unreachable, wait=wait)

    async def _relisten(self) -> None:
        """Open the listen stream again after a growing wait."""
        self._listen_delay = min(max(self._listen_delay * 2, RETRY_FLOOR * 5), BACKOFF_CAP)
        await _first(asyncio.sleep(self._backoff_delay(self._listen_delay)), self._stop.wait())
        if not self._stop.is_set():
            log.info("the listen stream broke off: opened again as a new request (nothing is replayed)")
            super()._send(self.session.relisten())


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
- The calls wait for their tools' schemas: ``tools/list`` is read first (``param_headers.ToolsListing``: pages until
  every tool to be called is found, bounded), then each call carries the ``Mcp-Param-{Name}`` headers its tool's
  ``x-mcp-header`` marks ask for (``param_headers``), or is not sent where the revision gives it none (counted
  ``params_refused``, one line). No call, no ``tools/list``. A listing that fails or is cut leaves the calls to
  tools it did not list without such headers (the server judges), said at INFO.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .._json import dumps, loads
from .channel import _first
from .eras import PROTOCOL_VERSION_KEY, request_meta
from .eventstream import EventParser
from .http_common import Refused, message_head, refuse_certificate, rpc_error, why
from .http_driver import HttpDriver
from .http_reach import log
from .http_streams import BACKOFF_CAP, RETRY_FLOOR
from .param_headers import LIST_TIMEOUT, Refusal, ToolsListing, declarations, header_value, param_headers
from .session import CLIENT_INFO, Phase

__all__ = ["NAMED_BY", "StatelessHttp", "header_value", "routing_headers"]

NAMED_BY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""The methods whose ``Mcp-Name`` header mirrors a field of their params."""


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


def _call_of(line: bytes) -> tuple[str | None, Any]:
    """A ``tools/call`` message's tool name (None unless a string) and arguments."""
    params = message_head(line)[2].get("params")
    params = params if isinstance(params, dict) else {}
    name = params.get("name")
    return (name if isinstance(name, str) else None), params.get("arguments")


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
        """The session's messages POSTed, the calls once their tools' schemas are read; ``initialize`` (the probe
        found no modern server) goes to the next driver."""
        if self.session.phase is Phase.INITIALIZING:
            self._spawn(self._next_driver(data))
            return
        lines = data.splitlines()
        calls = [line for line in lines if b'"tools/call"' in line and message_head(line)[1] == "tools/call"]
        if calls:
            self._spawn(self._send_calls(calls))
            data = b"\n".join(line for line in lines if line not in calls)
        super()._send(data)  # nothing, where every line was a call

    def _own_stream_open(self) -> bool:
        return self.session.listen_id is not None and self.report.listen == "acknowledged"

    def _post_headers(self, message: dict[str, Any]) -> dict[str, str]:
        request_id = message.get("id")
        mirrored = self._mirrored.pop(request_id, None) if isinstance(request_id, int) and self._mirrored else None
        return {**routing_headers(message), **(mirrored or {})}

    # --- x-mcp-header: the calls' Mcp-Param headers, from tools/list ---------------------------------

    _mirrored: dict[int, dict[str, str]] | None = None
    """A call's ``Mcp-Param-{Name}`` headers, by its id, until it is POSTed (made by ``_send_calls``)."""

    async def _send_calls(self, calls: list[bytes]) -> None:
        """The calls POSTed once their tools' schemas are read, each with the headers its tool's schema marks; a
        call the revision gives no headers for is failed unsent, one line."""
        ids = [message_head(line)[0] for line in calls]
        names = [_call_of(line) for line in calls]
        listing = await self._list_tools({name for name, _ in names if name is not None})
        server = self.report.server
        if self._mirrored is None:
            self._mirrored = {}
        ready = []
        for line, request_id, (name, arguments) in zip(calls, ids, names):
            if not isinstance(request_id, int) or request_id not in self.session.pending:
                continue  # timed out while the schemas were read
            try:
                headers = param_headers(declarations(listing.schemas[name]), arguments) if name in listing.schemas else {}
            except Refusal as refusal:
                server["params_refused"] = server.get("params_refused", 0) + 1
                log.info("%s not sent: %s", self.session.label(request_id) or "tools/call", refusal)
                self._give_up(request_id, f"not sent: {refusal}")
                continue
            if headers:
                server["params_mirrored"] = server.get("params_mirrored", 0) + 1
                self._mirrored[request_id] = headers
            ready.append(line)
        if ready:
            super()._send(b"\n".join(ready))

    async def _list_tools(self, wanted: set[str]) -> ToolsListing:
        """``tools/list`` read, page by page, until every tool in ``wanted`` is found (within ``LIST_TIMEOUT``, half
        the calls' ``request_timeout`` at most, and the listing's bounds); the report's ``tools_list`` says how it went."""
        assert self.report.protocol_version is not None
        listing = ToolsListing(wanted, request_meta(self.report.protocol_version, CLIENT_INFO))
        limit = self.options.request_timeout
        timeout = LIST_TIMEOUT if limit is None else min(LIST_TIMEOUT, limit / 2)
        try:
            async with asyncio.timeout(timeout):
                while (message := listing.request()) is not None:
                    await self._list_page(listing, message)
        except TimeoutError:
            listing.fail(f"no answer within {timeout:g} s")
        except self._http.HttpError as error:
            listing.fail(why(error))
        except Refused as refused:
            listing.fail(str(refused))
        self.report.server["tools_list"] = listing.outcome
        log.debug("tools/list for the calls' x-mcp-header: %s, %d page(s), %d bytes; %d of %d tools found",
                  listing.outcome, listing.pages, listing.bytes, len(listing.schemas), len(wanted))
        if listing.outcome != "read":
            log.info("tools/list %s: a call to a tool it did not list goes without Mcp-Param headers (x-mcp-header)",
                     listing.outcome)
        return listing

    async def _list_page(self, listing: ToolsListing, message: bytes) -> None:
        """One page asked for and read: its answer to ``listing``, any notification on its stream to the channel."""
        headers = {**self._request_headers(), **routing_headers(loads(message)), "Content-Type": "application/json"}
        async with self._open("POST", "tools/list", headers, message) as response:
            kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
            if kind not in ("application/json", "text/event-stream"):
                await self._read_reason(response, count=False)
                listing.fail(f"HTTP {response.status_code}")
                return
            parser = EventParser(self.session.framer.max_line) if kind == "text/event-stream" else None
            body = bytearray()
            async for piece in self._pieces(response):
                if not listing.count(len(piece)):
                    return
                if parser is None:
                    body += piece
                else:
                    self._listed(listing, parser.feed(piece), parser)
            self._listed(listing, [bytes(body)] if parser is None else parser.close(), parser)
            listing.unanswered(f"HTTP {response.status_code}" if response.status_code >= 300 else "no answer")

    def _listed(self, listing: ToolsListing, datas: list[bytes], parser: EventParser | None) -> None:
        """A ``tools/list`` answer's messages: the page's answer read, the rest relayed as any stream's."""
        too_large = 0
        if parser is not None:
            too_large, parser.too_large = parser.too_large, 0
        others = []
        for data in datas:
            if not data.strip():
                continue
            try:
                message = loads(data)
            except ValueError:
                message = None
            if isinstance(message, dict) and message.get("id") == listing.request_id and "method" not in message:
                listing.read(message)
            else:
                others.append(data)
        if others or too_large:
            self._received(self.session.receive_messages(others, too_large))

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
        await _first(self._sleep(self._backoff_delay(self._listen_delay)), self._stop.wait())
        if not self._stop.is_set():
            log.info("the listen stream broke off: opened again as a new request (nothing is replayed)")
            super()._send(self.session.relisten())


"""``MAX_POSTS`` at its edge (issue #45: ``<=`` as ``<`` passed every quick test): while 64 of the relay's POSTs
wait, the server's ``ping`` is still answered; with a 65th waiting, the server is taken as not reading and the
``ping`` is counted unanswered (as for a stdio server that reads nothing). A scripted server under the client:
no process, no socket."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from test_http_driver import INIT, SSE, _answer, _events, relay  # noqa: E402

from diverge_codec.relay.http_client import Response  # noqa: E402

PING = json.dumps({"jsonrpc": "2.0", "id": "ping-1", "method": "ping"}).encode()


class HoldingCalls:
    """Holds every call until 64 are in flight (the relay sends no more at once), then pings on the GET stream
    and answers the calls a moment later."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.full, self.release = asyncio.Event(), asyncio.Event()
        self.answers: list[Any] = []

    async def handle(self, request: Any) -> Any:
        body = json.loads(request.content) if request.content else None
        if request.method == "DELETE":
            return Response(200)
        if request.method == "GET":
            return Response(200, headers=SSE, content=self._ping_when_full())
        if body.get("method") == "initialize":
            return Response(200, headers={**SSE, "mcp-session-id": "s-1"}, content=_events(_answer(body["id"], INIT)))
        if "method" not in body:
            self.answers.append(body)
        if "id" not in body or "method" not in body:
            return Response(202)
        self.in_flight += 1
        if self.in_flight == 64:
            self.full.set()
        await self.release.wait()
        return Response(200, headers=SSE, content=_events(_answer(body["id"])))

    async def _ping_when_full(self) -> Any:
        await self.full.wait()
        yield b"data: " + PING + b"\n\n"
        await asyncio.sleep(0.05)  # the ping read and answered (or not) before any call ends
        self.release.set()
        await asyncio.Event().wait()  # the stream stays open until the relay ends


@pytest.mark.parametrize(("calls", "answered"), [(64, True), (65, False)])
def test_the_server_s_ping_is_answered_while_64_posts_wait_and_not_while_65_do(calls, answered):
    server = HoldingCalls()
    report, _ = relay(server.handle, calls=[("go", {})] * calls, until_answered=True)
    assert report["calls"]["answered"] == calls
    assert (report["requests_answered"], report["requests_unanswered"]) == ((1, 0) if answered else (0, 1))
    assert server.answers == ([{"jsonrpc": "2.0", "id": "ping-1", "result": {}}] if answered else [])

"""``MAX_POSTS`` at its edge (issue #45: ``<=`` as ``<`` passed every quick test): while 64 of the relay's POSTs
wait, the server's ``ping`` is answered; with a 65th waiting, the server is taken as not reading and the ``ping``
is counted unanswered (as for a stdio server that reads nothing); once a POST ends and 64 wait again, the next
``ping`` is answered. A scripted server under the client, on virtual time: no process, no socket."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
import test_http_driver  # noqa: E402
import virtual_time  # noqa: E402
from test_http_driver import INIT, SSE, _answer, _events, relay  # noqa: E402

from scripted_http import Response  # noqa: E402


def _ping(number: int) -> bytes:
    return b"data: " + json.dumps({"jsonrpc": "2.0", "id": f"ping-{number}", "method": "ping"}).encode() + b"\n\n"


class HoldingCalls:
    """Holds every call until 64 are in flight (the relay sends no more at once); then, on the GET stream, a ping;
    a second later the first call answered; a second later another ping; a second later every call answered."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.full, self.first_call, self.release = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self.answers: list[Any] = []

    async def handle(self, request: Any) -> Any:
        body = json.loads(request.content) if request.content else None
        if request.method == "DELETE":
            return Response(200)
        if request.method == "GET":
            return Response(200, headers=SSE, content=self._pings())
        if body.get("method") == "initialize":
            return Response(200, headers={**SSE, "mcp-session-id": "s-1"}, content=_events(_answer(body["id"], INIT)))
        if "method" not in body:
            self.answers.append(body["id"])
        if "id" not in body or "method" not in body:
            return Response(202)
        self.in_flight += 1
        if self.in_flight == 64:
            self.full.set()
        await (self.first_call if self.in_flight == 1 else self.release).wait()
        return Response(200, headers=SSE, content=_events(_answer(body["id"])))

    async def _pings(self) -> Any:
        await self.full.wait()
        yield _ping(1)
        await asyncio.sleep(1)  # the ping read and answered (or not) before any call ends
        self.first_call.set()
        await asyncio.sleep(1)
        yield _ping(2)
        await asyncio.sleep(1)
        self.release.set()
        await asyncio.Event().wait()  # the stream stays open until the relay ends


@pytest.mark.parametrize(("calls", "counted", "answers"), [(64, (2, 0), ["ping-1", "ping-2"]), (65, (1, 1), ["ping-2"])])
def test_a_ping_is_answered_while_64_posts_wait_and_not_while_65_do(calls, counted, answers, monkeypatch):
    monkeypatch.setattr(test_http_driver, "asyncio", SimpleNamespace(run=lambda main: virtual_time.run(lambda: main),
                                                                     wait_for=asyncio.wait_for))
    server = HoldingCalls()
    report, _ = relay(server.handle, calls=[("go", {})] * calls, until_answered=True)
    assert report["calls"]["answered"] == calls
    assert (report["requests_answered"], report["requests_unanswered"]) == counted
    assert server.answers == answers

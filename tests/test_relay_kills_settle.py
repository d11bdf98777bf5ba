"""``--until-answered`` with the server's stream open reads on until it is quiet (issue #45: a settle loop that
never ran passed every quick test): a notification the server sends on its GET stream just after the last
answer (on another connection) is still relayed, then the relay ends."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from test_http_driver import SSE, Server, _log, relay  # noqa: E402

from scripted_http import Response  # noqa: E402


class LateOnTheStream(Server):
    """The call answered on its POST; 50 ms later a log notification on the GET stream, which then stays open."""

    def __init__(self) -> None:
        super().__init__()
        self.answered: asyncio.Event | None = None

    def handle(self, request: Any) -> Any:
        self.answered = self.answered or asyncio.Event()
        if request.method == "GET":
            return Response(200, headers=SSE, content=self._late())
        body = json.loads(request.content) if request.content else {}
        if body.get("method") == "tools/call":
            self.answered.set()
        return super().handle(request)

    async def _late(self) -> Any:
        assert self.answered is not None
        await self.answered.wait()
        await asyncio.sleep(0.05)
        yield b"data: " + _log("late") + b"\n\n"
        await asyncio.Event().wait()


def test_a_notification_just_after_the_last_answer_is_relayed_before_the_end():
    report, notes = relay(LateOnTheStream(), calls=[("go", {})], until_answered=True)
    assert report["calls"]["answered"] == 1 and report["server"]["ended_by"] == "session deleted"
    assert [note["params"]["data"] for note in notes] == ["tools/call", "late"]

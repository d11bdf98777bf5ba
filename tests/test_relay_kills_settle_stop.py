"""A relay that the program stops while ``--until-answered`` is settling still gives a slow consumer its grace
(issue #45: ``_settle`` shutting down again after such a stop hurried the end, and no test timed a stop into the
settle's window). On virtual time: the stop lands 50 ms into the settle's 100 ms, the DELETE is answered after
200 ms, so the settle wakes during the end; the channel's consumer takes 1 s a record."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from test_http_driver import SSE, URL, Server, _answer, _Kept, _log  # noqa: E402

import virtual_time  # noqa: E402
from diverge_codec import stream  # noqa: E402
from diverge_codec.relay.channel import FileWriter, RelayOptions  # noqa: E402
from diverge_codec.relay.streamable_http import HttpRelay  # noqa: E402
from diverge_codec.sequence import McpNotificationsChecker  # noqa: E402
from scripted_http import Response, serving  # noqa: E402

NOTES = 3


class SlowConsumer(FileWriter):
    """A channel whose reader takes a second to take each record."""

    async def drain(self) -> None:
        await asyncio.sleep(1.0)


class StopWhileSettling(Server):
    """The GET stream open and quiet; the call answered after ``NOTES`` log notifications, the program's stop
    50 ms after the call came; the DELETE answered 200 ms after it came."""

    def __init__(self) -> None:
        super().__init__()
        self.stop: Any = None

    async def handle(self, request: Any) -> Any:
        if request.method == "GET":
            self.record(request)
            return Response(200, headers=SSE, content=self._quiet())
        if request.method == "DELETE":
            await asyncio.sleep(0.2)
            return super().handle(request)
        body = json.loads(request.content) if request.content else {}
        if body.get("method") == "tools/call":
            self.record(request)
            asyncio.get_running_loop().call_later(0.05, self.stop)
            return Response(200, headers=SSE, content=self._notes_then_answer(body["id"]))
        return super().handle(request)

    async def _notes_then_answer(self, request_id: int) -> Any:
        """Each notification 10 ms after the last: the first is written, the others wait in the outbox."""
        for index in range(NOTES):
            yield b"data: " + _log(f"note {index}") + b"\n\n"
            await asyncio.sleep(0.01)
        yield b"data: " + _answer(request_id) + b"\n\n"

    async def _quiet(self) -> Any:
        yield b": open\n\n"
        await asyncio.Event().wait()


def test_a_stop_while_settling_leaves_a_slow_consumer_its_grace_every_notification_relayed():
    server = StopWhileSettling()
    out = _Kept()

    async def embed() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        driver = HttpRelay(URL, SlowConsumer(out), RelayOptions(
            grace=10.0, request_timeout=5.0, reconnect_window=3.0, protocol="2025-11-25", until_answered=True,
            calls=[("go", {})]), clock=loop.time)
        server.stop = driver.shutdown
        return (await driver.run()).as_dict()

    with serving(server.handle):
        report = virtual_time.run(embed)
    checker = McpNotificationsChecker()
    notes = [checker.payload(bytes(p)).notification for p in stream.split_records(out.getvalue())]
    assert [note["params"]["data"] for note in notes] == [f"note {index}" for index in range(NOTES)]
    assert report["relayed"] == NOTES and report["server"]["shutdown"] == "requested"

"""When ``HttpRelay.run()`` returns, no task the relay made is still pending (issue #45: the end's cancelled tasks
not awaited passed every test, since each ended in the turns ``run`` still took after; an embedding program that
closes its loop at once would see "Task was destroyed but it is pending"). Here the GET stream's connection takes
many turns to give up its read when cancelled, as a transport that closes in steps does."""

from __future__ import annotations

import asyncio
import io
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from test_relay_kills_settle import LateOnTheStream  # noqa: E402
from test_http_driver import URL  # noqa: E402

from diverge_codec.relay.channel import FileWriter, RelayOptions  # noqa: E402
from diverge_codec.relay.streamable_http import HttpRelay  # noqa: E402
from scripted_http import HandlerBackend, HandlerStream, serving  # noqa: E402

TURNS = 50
"""The turns of the loop a cancelled read takes to end: more than ``run`` takes after it cancels its tasks."""


class SlowToLetGo(HandlerStream):
    """A connection whose read, cancelled, ends only after ``TURNS`` turns of the loop."""

    async def read(self) -> bytes:
        try:
            return await super().read()
        except asyncio.CancelledError:
            for _ in range(TURNS):
                await asyncio.sleep(0)
            raise


class SlowBackend(HandlerBackend):
    async def __call__(self, host: str, port: int) -> Any:
        stream = SlowToLetGo(self.handle, host, port)
        self.opened.append(stream)
        return stream


def test_no_task_of_the_relay_is_pending_when_run_returns_though_a_read_is_slow_to_end_on_cancel():
    server = LateOnTheStream()

    async def embed() -> tuple[dict[str, Any], list[asyncio.Task[Any]]]:
        driver = HttpRelay(URL, FileWriter(io.BytesIO()), RelayOptions(
            grace=2.0, request_timeout=5.0, reconnect_window=3.0, protocol="2025-11-25", until_answered=True,
            calls=[("go", {})]))
        report = (await asyncio.wait_for(driver.run(), 30)).as_dict()
        await asyncio.sleep(0)  # one turn: what was cancelled last (the end's own waits) has ended
        return report, [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]

    with serving(SlowBackend(server.handle)):
        report, pending = asyncio.run(embed())
    assert report["server"]["ended_by"] == "session deleted" and report["calls"]["answered"] == 1
    assert report["server"]["get_stream"] != "none (405)"  # the GET stream was open at the end: its read cancelled
    assert pending == []

"""The older HTTP+SSE transport's end of the reconnect window, on virtual time (issue #45: ``_backoff`` answering
"go on" after it gave up passed every quick test): each try's moment, the last at the window's end; once the
relay says it gives up, the server gets no request more, and the report names the status it was last seen with;
a refusal of the stream (no gateway's status) is no outage: the relay ends at once."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from test_http_driver import URL, _Kept  # noqa: E402
from test_http_driver_field import LegacyServer  # noqa: E402
from virtual_time import START, Waits, run  # noqa: E402

from diverge_codec.relay.channel import FileWriter, RelayOptions  # noqa: E402
from scripted_http import Response, serving  # noqa: E402
from diverge_codec.relay.streamable_http import HttpRelay  # noqa: E402


def legacy_on_virtual_time(handle: Any) -> dict[str, Any]:
    """The older transport's relay (a call to make, a 30 s window) against ``handle`` on virtual time: its report."""
    async def main() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        options = RelayOptions(grace=0.5, request_timeout=5.0, reconnect_window=30.0, duration=200.0, calls=[("go", {})])
        driver = HttpRelay(URL, FileWriter(_Kept()), options, transport="sse", clock=loop.time, sleep=Waits())
        with serving(handle):  # the scripted server, under the client
            return (await asyncio.wait_for(driver.run(), 1000)).as_dict()
    return run(main)


class GivingUpWatched(logging.Handler):
    """Notes the moment the relay says it gives up."""

    def __init__(self) -> None:
        super().__init__()
        self.gave_up = False

    def emit(self, record: logging.LogRecord) -> None:
        self.gave_up |= record.getMessage().startswith("the relay gives up")


def test_the_older_transport_sends_nothing_once_it_gave_up_at_the_window_s_end():
    server, watched, after = LegacyServer(after_first=[502] * 100), GivingUpWatched(), []
    seen = server.handle

    def handle(request: Any) -> Any:
        after.append((request.method, watched.gave_up, round(asyncio.get_running_loop().time() - START, 3)))
        return seen(request)

    log = logging.getLogger("diverge_codec.relay")
    log.addHandler(watched)
    level = log.level
    log.setLevel(logging.INFO)  # setLevel, not the attribute: it clears the logger's cache of what is enabled
    try:
        report = legacy_on_virtual_time(handle)
    finally:
        log.removeHandler(watched)
        log.setLevel(level)
    assert watched.gave_up and not [request for request in after if request[1]]
    gets = [moment for method, _, moment in after if method == "GET"]
    # the session at 0, lost as its stream ends; then the wait from 0.5 s doubling to the 8 s cap, the last try at
    # the window's end (30 s after the loss), as the Streamable HTTP transport's (test_relay_http_timing.py)
    assert [moment for method, _, moment in after if method == "GET"] == [0.0, 0.5, 1.5, 3.5, 7.5, 15.5, 23.5, 30.0]
    assert report["server"]["error"] == "HTTP 502 on the SSE stream" and report["server"]["ended_by"] == "connection lost"


@pytest.mark.parametrize("first", [True, False])
def test_a_refusal_of_the_sse_stream_is_no_outage_the_relay_ends_at_once_naming_it(first):
    """A 403 (not a gateway's status) on the stream's GET, the first or after a session: no try after it."""
    server, gets = LegacyServer(after_first=[403] * 100), []

    def handle(request: Any) -> Any:
        if request.method == "GET":
            gets.append(round(asyncio.get_running_loop().time() - START, 3))
            if first:
                return Response(403, content=b"no")
        return server.handle(request)

    report = legacy_on_virtual_time(handle)
    assert gets == ([0.0] if first else [0.0, 0.5])
    assert report["server"]["error"] == "HTTP 403 on the SSE stream: the credentials do not allow this"
    assert report["unreachable"] is True

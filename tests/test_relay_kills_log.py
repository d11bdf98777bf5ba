"""The operator's INFO lines for an outage, on virtual time (issue #45: dropping "the server answers again" passed
every quick test): its start with the window, its end with the seconds it lasted, a later outage said afresh."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from test_http_driver import SSE, Server, _events, _log  # noqa: E402
from test_relay_http_timing import now, timed_relay  # noqa: E402

from scripted_http import Response  # noqa: E402

MOMENT = r"\S+"  # clock_text: the wall clock's time, not the virtual clock's (pinned on its own, last)


def test_an_outage_is_said_when_it_begins_and_when_it_ends_with_how_long_it_lasted(caplog):
    caplog.set_level(logging.INFO, logger="diverge_codec.relay")
    server, gets = Server(), []

    def handle(request: Any) -> Any:
        if request.method != "GET":
            return server.handle(request)
        gets.append(now())
        if len(gets) == 2:  # the stream opened again after its first ended (the POSTs all answered by then)
            return Response(503, headers={"retry-after": "5"})
        if len(gets) <= 3:  # there, then back for one event; then away for good
            return Response(200, headers=SSE, content=_events(_log("here")))
        return Response(502)

    timed_relay(handle, reconnect_window=6.0)
    said = [record.getMessage() for record in caplog.records if "reached" in record.getMessage()]
    assert len(said) == 3, said
    assert re.fullmatch(rf"the server cannot be reached \(HTTP 503 on the event stream\) since {MOMENT}; trying again"
                        rf" until {MOMENT} \(--reconnect-window 6 s\)", said[0])
    assert said[1] == "the server answers again (HTTP 200), 5.0 s after it could first not be reached"
    assert re.fullmatch(rf"the server cannot be reached \(HTTP 502 on the event stream\) since {MOMENT}; trying again"
                        rf" until {MOMENT} \(--reconnect-window 6 s\)", said[2])


@pytest.mark.parametrize("ahead", [0.0, 3600.0, -90.0])
def test_a_moment_is_said_as_the_wall_clock_reads_it(ahead):
    """clock_text: a moment on the monotonic clock as UTC's time of day then (now is now, an hour on an hour on)."""
    from diverge_codec.relay.http_reach import clock_text

    before = time.time()
    said = clock_text(time.monotonic() + ahead)
    after = time.time()
    assert said in {time.strftime("%H:%M:%SZ", time.gmtime(moment + ahead)) for moment in (before, after)}, said

"""The relay's first request (issue #45: a mutant that passed every quick test): a server whose first
``initialize`` is answered 5xx is not waited for: one request, no backoff (nothing says it was ever there)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from test_relay_http_timing import now, timed_relay  # noqa: E402
from virtual_time import START  # noqa: E402

from scripted_http import Response  # noqa: E402


@pytest.mark.parametrize("status", [500, 502])
def test_a_first_initialize_answered_5xx_ends_the_relay_at_once_naming_the_status(status):
    requests: list[tuple[str, float]] = []

    def handle(request: Any) -> Any:
        requests.append((request.method, round(now() - START, 3)))
        return Response(status, headers={"content-type": "text/html"}, content=b"<p>bad gateway")

    report, waits = timed_relay(handle)
    assert requests == [("POST", 0.0)] and waits.asked == []
    assert report["server"]["error"] == f"HTTP {status} on initialize" and report["unreachable"] is True


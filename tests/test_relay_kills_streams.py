"""A body in an encoding the relay did not ask for ends it naming the encoding, cut to 20 letters or "unknown"
(issue #45: the name's and-or without its second operand said True, and passed every quick test); the
notifications' 202, with a few words of body, accepted meanwhile."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from test_http_driver import SSE, Server, _events, relay  # noqa: E402

from scripted_http import Response  # noqa: E402


class Encoded(Server):
    """Calls answered in ``encoding`` (as they should be without one); notifications accepted 202 with a few words."""

    def __init__(self, encoding: str = "") -> None:
        super().__init__()
        self.encoding = encoding

    def handle(self, request: Any) -> Any:
        body = json.loads(request.content) if request.content else {}
        if body.get("method") == "tools/call" and self.encoding:
            self.record(request)
            return Response(200, headers={**SSE, "content-encoding": self.encoding}, content=_events(b"{}"))
        if request.method == "POST" and "id" not in body:
            self.record(request)
            return Response(202, headers={"content-type": "text/plain"}, content=_events(b"accepted"))
        return super().handle(request)


@pytest.mark.parametrize(("encoding", "named"), [("br", "br"), ("x" * 30, "x" * 20), ("b r", "unknown")])
def test_an_encoding_not_asked_for_ends_the_relay_naming_it_and_a_notification_s_202_body_is_not_counted(encoding, named):
    server = Encoded(encoding)
    report, _ = relay(server, calls=[("go", {})], until_answered=True)
    assert report["server"]["error"] == f"a body in an encoding the relay did not ask for ({named})"
    assert report["server"]["ended_by"] == "refused" and report["server"]["bodies_unread"] == 0
    assert "notifications/initialized" in server.methods()


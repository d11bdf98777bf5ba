"""The modern era's failed requests and an http URL's trust (issue #45: mutants that passed every quick test): a
call answered by a gateway's 502 fails alone, at once, counted (only the listen stream is opened again); a CA
bundle given for https is not even read for an http:// URL."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from test_http_driver import URL, Server, _Kept, relay  # noqa: E402
from test_http_stateless import Modern  # noqa: E402

from diverge_codec.relay.channel import FileWriter, RelayOptions  # noqa: E402
from scripted_http import Response, serving  # noqa: E402
from diverge_codec.relay.network import NetworkPolicy  # noqa: E402
from diverge_codec.relay.streamable_http import HttpRelay  # noqa: E402


class GatewayForCalls(Modern):
    """A modern server behind a gateway that answers the call ``away`` 502 (its server not reached)."""

    def handle(self, request: Any) -> Any:
        if request.method == "POST" and b'"away"' in request.content:
            self.record(request)
            return Response(502, headers={"content-type": "text/html"}, content=b"<p>bad gateway")
        return super().handle(request)


def test_a_modern_call_answered_502_fails_alone_at_once_and_the_others_are_answered():
    report, _ = relay(GatewayForCalls(), protocol="auto", calls=[("away", {}), ("here", {})], until_answered=True)
    assert report["calls"] == {"sent": 2, "answered": 1, "failed": 1, "timed_out": 0}
    assert report["server"]["posts_failed"] == 1 and report["server"]["listen_reopened"] == 0


def test_a_ca_bundle_given_for_https_is_not_read_for_an_http_url(tmp_path):
    server = Server()
    options = RelayOptions(grace=0.5, request_timeout=5.0, protocol="2025-11-25", calls=[("go", {})], until_answered=True)
    driver = HttpRelay(URL, FileWriter(_Kept()), options, network=NetworkPolicy(cafile=str(tmp_path / "no-such-ca.pem")))

    async def main() -> dict[str, Any]:
        with serving(server.handle):  # the scripted server, under the client
            return (await asyncio.wait_for(driver.run(), 30)).as_dict()
    report = asyncio.run(main())
    assert report["calls"]["answered"] == 1 and report["server"].get("error") is None

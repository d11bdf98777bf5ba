"""Quick tests that pin rules the CI mutation step found unasserted: a failed call starting the outage where no
stream of the server's is open, the ``tools/list`` listing's words, a cookie date's bound, a certificate's name."""

from __future__ import annotations

import datetime
import json
import logging
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from scripted_http import Response  # noqa: E402
from test_http_driver import SSE, Server, _answer, _events, _streamed, pure, relay  # noqa: E402,F401
from test_http_stateless import ROUTED, Modern  # noqa: E402

from diverge_codec.relay.cookies import cookie_date  # noqa: E402
from diverge_codec.relay.http_tls import certificate_facts  # noqa: E402


class AwayForCalls(Server):
    """The 2025 era without a stream of its own (GET 405): ``tools/call`` answered 502, the rest as ``Server``."""

    def handle(self, request: Any) -> Any:
        body = json.loads(request.content) if request.content else {}
        if body.get("method") == "tools/call":
            self.record(request)
            return Response(502, headers={"content-type": "text/html"}, content=b"<p>bad gateway")
        return super().handle(request)


def test_a_call_answered_502_with_no_stream_open_begins_the_outage_and_fails_alone(pure, caplog):
    with caplog.at_level(logging.INFO, logger="diverge_codec.relay"):
        report, _ = relay(AwayForCalls(), pure=pure, calls=[("go", {})], until_answered=True)
    assert report["calls"] == {"sent": 1, "answered": 0, "failed": 1, "timed_out": 0}
    assert report["server"]["posts_failed"] == 1
    said = [record.getMessage() for record in caplog.records]
    assert any(line.startswith("the server cannot be reached (HTTP 502 on tools/call) since ") for line in said), said


def _listing_relay(server: Modern, caplog: pytest.LogCaptureFixture, pure: bool) -> dict[str, Any]:
    with caplog.at_level(logging.INFO, logger="diverge_codec.relay"):
        report, _ = relay(server, pure=pure, protocol="auto", until_answered=True,
                          calls=[("execute_sql", {"region": "eu", "query": "q"})])
    return report


def test_a_tools_list_read_whole_is_not_said_at_info(pure, caplog):
    report = _listing_relay(Modern(tools=[ROUTED]), caplog, pure)
    assert report["server"]["tools_list"] == "read" and report["calls"]["answered"] == 1
    assert not [r.getMessage() for r in caplog.records if r.getMessage().startswith("tools/list")]


class ListedAs300(Modern):
    """A modern server whose ``tools/list`` is answered 300 with a JSON body that holds no answer."""

    def handle(self, request: Any) -> Any:
        body = json.loads(request.content) if request.content else {}
        if body.get("method") != "tools/list":
            return super().handle(request)
        self.record(request)
        return Response(300, headers={"content-type": "application/json"}, content=_streamed(b"{}"))


def test_a_tools_list_answered_300_without_its_answer_fails_naming_the_status(pure, caplog):
    report = _listing_relay(ListedAs300(tools=[ROUTED]), caplog, pure)
    assert report["server"]["tools_list"] == "failed (HTTP 300)"
    assert "tools/list failed (HTTP 300): a call to a tool it did not list goes without Mcp-Param headers" in caplog.text


def test_a_cookie_date_is_read_from_its_first_256_characters_only():
    head = "Jan 2030 00:00:00 "
    text = head + " " * (255 - len(head)) + "15"  # the day's digits at characters 256 and 257
    assert cookie_date(text) == datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc).timestamp()
    assert cookie_date(head + "15") == datetime.datetime(2030, 1, 15, tzinfo=datetime.timezone.utc).timestamp()


def _self_signed_der(common_name: str) -> bytes:
    """A certificate with no subjectAltName, its subject's common name common_name, as DER."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Org"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(7).not_valid_before(start).not_valid_after(start + datetime.timedelta(days=30))
                   .sign(key, hashes.SHA256()))
    return certificate.public_bytes(serialization.Encoding.DER)


def test_a_certificate_without_alternative_names_is_named_by_its_common_name():
    facts = certificate_facts(_self_signed_der("only-cn.test"))
    assert facts is not None and facts[0] == ["only-cn.test"]


def test_a_length_in_a_form_der_does_not_allow_is_no_certificate():
    der = _self_signed_der("only-cn.test")
    assert der[0] == 0x30 and der[1] & 0x80  # a SEQUENCE whose length takes the long form
    content = der[2 + (der[1] & 0x7F):]
    assert certificate_facts(b"\x30" + bytes([0x80 | 2]) + len(content).to_bytes(2, "big") + content) is not None
    assert certificate_facts(b"\x30\x80" + content) is None  # BER's indefinite length: no length bytes
    assert certificate_facts(b"\x30\x85" + len(content).to_bytes(5, "big") + content) is None  # five length bytes
    assert certificate_facts(b"\x30\x84\x00\x00") is None  # length bytes past the end


class _Ticks:
    """A monotonic clock for ``http_requests`` alone: each reading one second after the last."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now


def test_each_exchange_s_debug_line_says_its_milliseconds(monkeypatch, caplog):
    import asyncio

    from scripted_http import HandlerBackend, serving
    from test_http_driver import URL, _Kept

    from diverge_codec.relay import http_requests
    from diverge_codec.relay.channel import FileWriter, RelayOptions
    from diverge_codec.relay.streamable_http import HttpRelay

    monkeypatch.setattr(http_requests, "time", _Ticks())  # the exchange's two readings, one second apart
    answered = HandlerBackend(Server().handle)  # a relay answered; then, the server gone, one refused
    with caplog.at_level(logging.DEBUG, logger="diverge_codec.relay"), serving(answered):
        async def main() -> dict[str, Any]:
            options = RelayOptions(grace=0.2, request_timeout=5.0, reconnect_window=0.3, protocol="2025-11-25",
                                   calls=[("go", {})], until_answered=True)
            driver = HttpRelay(URL, FileWriter(_Kept()), options)
            report = (await asyncio.wait_for(driver.run(), 30)).as_dict()
            answered.go_down()
            again = HttpRelay(URL, FileWriter(_Kept()), options)
            await asyncio.wait_for(again.run(), 30)
            return report
        report = asyncio.run(main())
    assert report["calls"]["answered"] == 1
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG and " ms)" in r.getMessage()]
    assert "POST /mcp: HTTP 200 (1000 ms)" in lines
    assert any(line.startswith("POST /mcp: ") and "refused" in line and line.endswith(" (1000 ms)") for line in lines), lines


class AwayThenSlow(Server):
    """The 2025 era without a stream of its own (GET 405): ``tools/call away`` answered 502, ``slow`` 0.3 s late."""

    async def handle(self, request: Any) -> Any:  # type: ignore[override]
        body = json.loads(request.content) if request.content else {}
        if body.get("method") == "tools/call":
            self.record(request)
            if body["params"]["name"] == "away":
                return Response(502, headers={"content-type": "text/html"}, content=b"<p>bad gateway")
            import asyncio

            await asyncio.sleep(0.3)
            return Response(200, headers=SSE, content=_events(_answer(body["id"])))
        return super().handle(request)


def test_a_call_answered_502_sends_the_relay_to_the_server_s_stream_to_watch_the_outage_end(pure):
    server = AwayThenSlow()
    report, _ = relay(server, pure=pure, calls=[("away", {}), ("slow", {})], until_answered=True)
    assert report["calls"] == {"sent": 2, "answered": 1, "failed": 1, "timed_out": 0}
    gets = [method for method, _, _, _ in server.requests if method == "GET"]
    assert len(gets) == 2  # the first after initialize; the second once the 502 said the server may be away

"""The relay behind real nginx and haproxy, and past a middlebox that forgets idle flows (issue #41).

The server is ``field_server.py`` (a process, killed and started again on its port); nginx and haproxy come from
Debian's packages (``tests/infra.py``: skipped locally where missing, saying why; required in CI); the middlebox
is a forwarder in the test's loop. Short windows and limits keep the whole file near 45 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
import infra  # noqa: E402
from field import FieldServer, field_server, forgetful_middlebox, later, relay_run  # noqa: E402


@contextlib.contextmanager
def behind(proxy: str, server: FieldServer, **settings: Any) -> Iterator[tuple[str, Any]]:
    """``server`` behind ``proxy`` (nginx terminating TLS, or haproxy): the relay's URL and its TLS context."""
    if proxy == "nginx":
        with infra.nginx(("127.0.0.1", server.port), **settings) as running:
            assert running.tls is not None
            yield f"{running.url}/mcp", ssl.create_default_context(cafile=running.tls.ca_file)
    else:
        with infra.haproxy([("127.0.0.1", server.port)]) as running:
            yield f"{running.url}/mcp", None


GATEWAY = {"nginx": 502, "haproxy": 503}


def test_pings_answered_at_nginx_keepalive_timeout_lose_no_session_and_no_call(caplog):
    with field_server() as server, behind("nginx", server, keepalive_timeout="1s") as (url, verify):
        pinger = {"count": 6, "every": 1.0, "comments": 0.25}
        with caplog.at_level(logging.INFO, logger="diverge_codec.relay"):
            report, _, status = asyncio.run(relay_run(url, verify, calls=[("pinger", pinger)], until_answered=True))
    assert report["calls"] == {"sent": 1, "answered": 1, "failed": 0, "timed_out": 0} and status == 0
    assert report["requests_answered"] == 6 and report["server"]["sessions"] == 1
    assert report["server"]["posts_failed"] == 0 and report["server"]["calls_lost"] == 0
    assert "failed" not in caplog.text


@pytest.mark.parametrize("proxy", ["nginx", "haproxy"])
def test_a_server_restarted_behind_a_proxy_gets_a_new_session(proxy, caplog):
    with field_server(tick=0.3) as server, behind(proxy, server) as (url, verify):
        async def run() -> tuple[dict[str, Any], list[Any], int]:
            later(1.0, server.kill)
            later(2.0, server.start)
            return await relay_run(url, verify, duration=6.0, reconnect_window=10.0,
                                   calls=[("toggle-simulated-logging", {})])
        with caplog.at_level(logging.INFO, logger="diverge_codec.relay"):
            report, data, status = asyncio.run(run())
    server_report = report["server"]
    assert server_report["sessions"] == 2 and "error" not in server_report and status == 0
    assert 0 < server_report["without_session_s"] < 6
    assert str(GATEWAY[proxy]) in server_report["statuses"] or "404" in server_report["statuses"]
    assert "not made again, so the server may have forgotten them: tools/call toggle-simulated-logging" in caplog.text
    assert data and data[-1] > 0  # the new session's stream relayed


@pytest.mark.parametrize("proxy", ["nginx", "haproxy"])
def test_a_server_killed_for_good_behind_a_proxy_ends_the_relay_after_the_window_naming_the_status(proxy, caplog):
    with field_server(tick=0.3) as server, behind(proxy, server) as (url, verify):
        async def run() -> tuple[dict[str, Any], list[Any], int]:
            later(1.0, server.kill)
            return await relay_run(url, verify, duration=30.0, reconnect_window=2.0)
        started = time.monotonic()
        with caplog.at_level(logging.INFO, logger="diverge_codec.relay"):
            report, _, status = asyncio.run(run())
        elapsed = time.monotonic() - started
    server_report = report["server"]
    assert status == 1 and server_report["ended_by"] == "connection lost" and elapsed < 20
    assert server_report["error"] == f"HTTP {GATEWAY[proxy]} on the event stream"
    assert f"the relay gives up: HTTP {GATEWAY[proxy]} on the event stream" in caplog.text


def test_a_call_is_answered_past_a_middlebox_that_forgets_idle_flows():
    with field_server(tick=0.5) as server:
        async def run() -> tuple[dict[str, Any], list[Any], int]:
            async with forgetful_middlebox(("127.0.0.1", server.port), idle=5.0) as port:
                pinger = {"count": 1, "every": 6.0, "comments": 1.0}  # its answer POSTed after 6 s without a request
                return await relay_run(f"http://127.0.0.1:{port}/mcp", calls=[("pinger", pinger)], until_answered=True)
        report, _, status = asyncio.run(run())
    assert report["calls"] == {"sent": 1, "answered": 1, "failed": 0, "timed_out": 0} and status == 0
    assert report["server"]["sessions"] == 1 and report["requests_answered"] == 1


def test_a_stream_whose_flow_a_middlebox_forgot_is_noticed_and_reopened_from_its_last_event():
    with field_server(tick=1.5) as server:
        async def run() -> tuple[dict[str, Any], list[Any], int]:
            async with forgetful_middlebox(("127.0.0.1", server.port), idle=1.0) as port:
                return await relay_run(f"http://127.0.0.1:{port}/mcp", duration=7.0, stream_timeout=2.0)
        report, data, status = asyncio.run(run())
    assert report["server"]["stream_silences"] >= 1 and status == 0
    assert len(data) >= 3 and data == list(range(data[0], data[0] + len(data)))  # none lost, none twice

"""``relay --url`` against hostile and restarting servers (``http_servers.py``): bounded, always ending, new sessions.

Each server here is written to break a relay: a restart under it, bodies that inflate to 1 GiB, a session id
HTTP cannot carry, redirects, replays, slow calls by the hundred. The relay must stay bounded (its peak RSS is
read by ``wait4``), end in bounded time, say what happened in its report and never print a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from diverge_codec.sequence import State

sys.path.insert(0, str(Path(__file__).with_name("peers")))
from test_relay_command import _report, channel  # noqa: E402
from test_relay_http import odd_server  # noqa: E402,F401  (the fixture)

pytest.importorskip("h11", reason="relay --url needs the [http] extra (h11)")

HERE = Path(__file__).resolve().parent
RELAY = [sys.executable, "-m", "diverge_codec", "relay"]


PEAK_RSS = ("import os, resource, subprocess, sys\n"
            "status = subprocess.call(sys.argv[2:])\n"
            "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
            "sys.exit(status)\n")
"""Runs a command and writes its peak RSS (KiB): the relay's alone, as the wrapper has no other child."""


def run_relay(url: str, *args: str, pure: str = "0", timeout: float = 90) -> tuple[int, bytes, dict, float, int]:
    """(exit status, channel, report, seconds it ran, its peak RSS in KiB), stderr held to one report line."""
    rss_file = Path(os.environ.get("TMPDIR", "/tmp")) / f"relay-rss-{os.getpid()}-{time.monotonic_ns()}"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", PEAK_RSS, str(rss_file), *RELAY, "--url", url, *args],
                          capture_output=True, timeout=timeout, env={**os.environ, "DIVERGE_CODEC_PURE": pure})
    elapsed = time.monotonic() - started
    rss = int(rss_file.read_text())
    rss_file.unlink()
    report = _report(done.stderr)
    assert b"Traceback" not in done.stderr and b"never retrieved" not in done.stderr, done.stderr.decode(errors="replace")
    assert report["seen"] == report["relayed"] + sum(report["dropped"].values())
    assert 10 * 1024 < rss  # it measured the relay
    return done.returncode, done.stdout, report, elapsed, rss


def _received(log: Path) -> list[str]:
    return [json.loads(line) for line in log.read_text().splitlines() if json.loads(line).startswith("<- ")]


# --- a lost session is made again -----------------------------------------------------

@pytest.mark.parametrize("odd_server", ["restart", "forget-post"], indirect=True)
@pytest.mark.parametrize("pure", ["0", "1"])
def test_a_server_that_forgot_the_session_gets_a_new_one_and_the_requests_again(odd_server, pure):
    url, log = odd_server
    status, out, report, elapsed, _ = run_relay(url, "--request", 'logging/setLevel={"level":"debug"}', "--call", "go",
                                                "--until-answered", "--grace", "1", pure=pure)
    notifications, error, state = channel(out)
    assert status == 3 and error is None and state is State.FINISHED  # 3: the calls lost with the session failed
    assert [n["params"]["data"] for n in notifications] == ["before", "after"]
    server = report["server"]
    assert server["sessions"] == 2 and server["calls_lost"] == 2 and server["shutdown"] == "until-answered"
    assert report["calls"] == {"sent": 3, "answered": 1, "failed": 2, "timed_out": 0}
    received = _received(log)
    assert received.count("<- initialize") == 2 and received.count("<- logging/setLevel") == 2
    assert received.count("<- tools/call") == 1  # a call in flight is never sent again: it may have run
    forgotten = "400" if "restart" in url or server["statuses"].get("400") else "404"
    assert int(server["statuses"][forgotten]) >= 1 and elapsed < 30


@pytest.mark.parametrize("odd_server", ["forget"], indirect=True)
def test_a_server_that_forgets_every_session_at_once_ends_the_relay(odd_server):
    url, _ = odd_server
    status, out, report, elapsed, _ = run_relay(url, "--request", "tools/list={}", "--duration", "20", "--grace", "1")
    assert status == 1 and report["server"]["ended_by"] == "session gone"
    assert report["server"]["error"] == "the server forgot each new session at once"
    assert report["server"]["sessions"] == 3 and elapsed < 30


@pytest.mark.parametrize("odd_server", ["strict-version"], indirect=True)
def test_every_request_after_initialize_carries_the_protocol_version(odd_server):
    url, _ = odd_server
    # the 2025 era forced: auto's probe carries MCP-Protocol-Version 2026-07-28 and is refused 400 here (then falls back)
    status, out, report, _, _ = run_relay(url, "--protocol", "2025-11-25", "--request", "tools/list={}", "--call", "go",
                                          "--until-answered", "--grace", "1")
    assert status == 0 and report["calls"] == {"sent": 2, "answered": 2, "failed": 0, "timed_out": 0}
    assert "400" not in report["server"]["statuses"]


# --- bounded whatever the server sends ------------------------------------------------

@pytest.mark.parametrize("odd_server", ["bomb-text", "bomb-500"], indirect=True)
def test_a_body_inflating_to_a_gibibyte_is_read_a_few_kib_and_the_call_failed(odd_server):
    url, _ = odd_server
    status, out, report, elapsed, rss = run_relay(url, "--call", "go", "--until-answered", "--grace", "1")
    assert report["calls"]["failed"] == 1 and report["server"]["bodies_unread"] >= 1
    assert rss < 200 * 1024, f"peak RSS {rss} KiB"
    assert elapsed < 30


@pytest.mark.parametrize("odd_server", ["plain:300"], indirect=True)
def test_a_300_mb_body_of_another_type_is_not_read(odd_server):
    url, _ = odd_server
    status, out, report, elapsed, rss = run_relay(url, "--call", "go", "--until-answered", "--grace", "1")
    assert report["calls"]["failed"] == 1 and report["server"]["bodies_unread"] >= 1
    assert rss < 200 * 1024, f"peak RSS {rss} KiB"


@pytest.mark.parametrize("odd_server", ["endless-head"], indirect=True)
def test_a_response_head_that_never_ends_is_refused_at_64_kib_and_fails_that_call_alone(odd_server):
    url, _ = odd_server
    status, out, report, elapsed, rss = run_relay(url, "--call", "go", "--until-answered", "--grace", "1")
    server = report["server"]
    assert report["calls"]["failed"] == 1 and server["calls_lost"] == 0 and server["sessions"] == 1
    assert server["posts_failed"] == 1
    assert rss < 100 * 1024, f"peak RSS {rss} KiB"
    assert elapsed < 30


@pytest.mark.parametrize("odd_server", ["bomb-events"], indirect=True)
def test_a_compressed_event_stream_never_holds_off_the_end(odd_server):
    url, _ = odd_server
    status, out, report, elapsed, rss = run_relay(url, "--call", "go", "--duration", "3", "--grace", "1")
    assert status == 0 and report["server"]["shutdown"] == "duration"
    assert elapsed < 3 + 3 * 1 + 5, f"ended after {elapsed:.1f} s"
    assert rss < 300 * 1024, f"peak RSS {rss} KiB"


@pytest.mark.parametrize("odd_server", ["slow-calls:3"], indirect=True)
def test_150_calls_on_slow_streams_are_all_answered(odd_server):
    url, _ = odd_server
    calls = [arg for index in range(150) for arg in ("--call", f"tool{index}")]
    status, out, report, elapsed, _ = run_relay(url, *calls, "--until-answered", "--grace", "1", timeout=120)
    assert status == 0 and report["calls"] == {"sent": 150, "answered": 150, "failed": 0, "timed_out": 0}


@pytest.mark.parametrize("odd_server", ["replay"], indirect=True)
def test_replayed_events_are_dropped_and_a_stream_that_ends_at_once_backs_off(odd_server):
    url, _ = odd_server
    status, out, report, _, _ = run_relay(url, "--duration", "5", "--grace", "1")
    notifications, _, _ = channel(out)
    assert [n["params"]["data"] for n in notifications] == [1, 2]
    server = report["server"]
    assert server["replayed"] == 2 * server["reconnects"] and 1 <= server["reconnects"] <= 12


# --- values HTTP cannot carry, redirects, signals ---------------------------------------

@pytest.mark.parametrize("odd_server", ["bad-session-id"], indirect=True)
def test_a_session_id_http_cannot_carry_ends_cleanly_and_is_never_echoed(odd_server):
    url, _ = odd_server
    status, out, report, _, _ = run_relay(url, "--call", "go", "--until-answered", "--grace", "1")
    assert status == 1 and channel(out)[2] is State.ENDED_WITH_ERROR
    assert report["server"]["error"] == "the server's Mcp-Session-Id is not visible ASCII: unusable"
    assert "\u00e9" not in json.dumps(report, ensure_ascii=False) and "u00e9" not in json.dumps(report)


@pytest.mark.parametrize("odd_server", ["redirect-same"], indirect=True)
def test_a_redirect_within_the_origin_is_followed_with_the_headers(odd_server):
    url, _ = odd_server
    status, out, report, _, _ = run_relay(url, "--call", "go", "--until-answered", "--grace", "1")
    assert status == 0 and report["calls"]["answered"] == 1
    assert report["server"]["statuses"]["307"] == 1  # the URL it led to is kept for the later requests


@pytest.mark.parametrize(("odd_server", "error"), [
    ("redirect-other", "HTTP 307 on initialize: redirect to another origin"),
    ("redirect-loop", "HTTP 3xx on initialize: more than 5 redirects"),
], indirect=["odd_server"])
def test_a_redirect_elsewhere_or_in_a_loop_is_reported_at_once(odd_server, error):
    url, _ = odd_server
    status, out, report, elapsed, _ = run_relay(url, "--protocol", "2025-11-25", "--header", "Authorization: Bearer SECRET")
    assert status == 1 and report["server"]["error"] == error and elapsed < 15  # initialize's (2025 forced)
    assert channel(out)[2] is State.ENDED_WITH_ERROR and "SECRET" not in json.dumps(report)


@pytest.mark.parametrize("odd_server", ["hang"], indirect=True)
def test_sigint_in_an_unanswered_handshake_exits_0(odd_server):
    url, _ = odd_server
    process = subprocess.Popen([*RELAY, "--url", url, "--grace", "0.5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(2)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    report = _report(err)
    assert process.returncode == 0 and report["server"]["shutdown"] == "signal SIGINT" and b"Traceback" not in err


@pytest.mark.parametrize(("args", "message"), [
    (["--url", "http://127.0.0.1:99999/mcp"], "--url has an invalid port"),
    (["--url", "http://h/mcp", "--header", "X-Name: caf\u00e9"],
     "--header X-Name: the value must be printable ASCII (HTTP cannot carry the rest as sent)"),
])
def test_values_http_cannot_carry_are_refused_before_anything_starts(args, message):
    done = subprocess.run([*RELAY, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr == f"diverge-codec: {message}\n"


def test_a_ca_file_that_cannot_be_read_is_one_line_and_exit_2(tmp_path):
    done = subprocess.run([*RELAY, "--url", "https://127.0.0.1:1/mcp"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SSL_CERT_FILE": str(tmp_path / "missing.pem")})
    assert done.returncode == 2 and done.stderr == "diverge-codec: SSL_CERT_FILE names no readable file of CA certificates\n"

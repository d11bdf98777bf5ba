"""``diverge-codec relay``, run as a user runs it, against the small servers of ``relay_servers.py``.

Every channel it writes is read back whole: each record decoded, the sequence checked
by ``McpNotificationsChecker``, the finish given. The report is the last line of stderr.
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

from diverge_codec import mcp_notifications, stream
from diverge_codec.sequence import McpNotificationsChecker, State

SERVERS = Path(__file__).with_name("relay_servers.py")
CAPTURE = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "mcp_server_capture.jsonl"


def server(*args: str) -> list[str]:
    return [sys.executable, str(SERVERS), *args]


def relay(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> tuple[int, bytes, dict]:
    done = subprocess.run([sys.executable, "-m", "diverge_codec", "relay", *args], capture_output=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)
    report = _report(done.stderr)
    assert report["seen"] == report["relayed"] + sum(report["dropped"].values())  # every notification accounted for
    return done.returncode, done.stdout, report


def _report(stderr: bytes) -> dict:
    lines = stderr.decode().strip().splitlines()
    assert lines, "the relay printed no report"
    return json.loads(lines[-1])


def channel(data: bytes) -> tuple[list[dict], object, State]:
    """The notifications, the error (or None) and the final state of a whole channel."""
    checker = McpNotificationsChecker()
    notifications, error = [], None
    for payload in stream.split_records(data):
        frame = checker.payload(payload)
        if isinstance(frame, mcp_notifications.Notification):
            notifications.append(frame.notification)
        else:
            error = frame.error
    return notifications, error, checker.finish()


@pytest.mark.parametrize("pure", ["0", "1"])
def test_a_server_relayed_through_its_handshake_and_calls(pure):
    status, out, report = relay("--call", 'echo={"x":1}', "--call", "plain", "--until-answered", "--",
                                *server("basic"), env={"DIVERGE_CODEC_PURE": pure})
    notifications, error, state = channel(out)
    assert status == 0 and state is State.FINISHED and error is None
    assert notifications[0] == {"method": "notifications/message", "params": {"level": "info", "data": "before the handshake"}}
    progress = [n["params"] for n in notifications if n["method"] == "notifications/progress"]
    assert progress == [{"progressToken": f"call-{c}", "progress": s, "total": 3} for c in (1, 2) for s in range(3)]
    logs = [n["params"]["data"] for n in notifications[1:] if n["method"] == "notifications/message"]
    assert logs == [{"tool": "echo", "arguments": {"x": 1}}, {"tool": "plain", "arguments": {}}]
    assert report == {
        "seen": 9, "relayed": 9, "dropped": {"backpressure": 0, "invalid": 0, "too_large": 0},
        "calls": {"sent": 2, "answered": 2, "failed": 0, "timed_out": 0}, "protocol_version": "2025-11-25",
        "unreachable": False, "requests_answered": 0, "requests_unanswered": 0, "ignored": 0, "exit_status": 0,
        "channel": {"unsent": 0, "cut": False}, "server": {**report["server"], "started": True, "ended_by": "stdin closed", "shutdown": "until-answered",
                   "exit_status": 0, "signal": None, "leftovers": 0},
    }


def test_the_channel_is_what_inspect_reads(tmp_path):
    out = tmp_path / "channel.bin"
    status, stdout, _ = relay("--out", str(out), "--until-answered", "--", *server("basic"))
    assert status == 0 and stdout == b""
    done = subprocess.run([sys.executable, "-m", "diverge_codec", "inspect", "--channel", "mcp-notifications", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "verdict: ok: finished after 1 notifications"


def test_an_older_revision_the_server_answers_is_accepted():
    status, out, report = relay("--until-answered", "--", *server("basic", "2024-11-05"))
    assert status == 0 and report["protocol_version"] == "2024-11-05" and channel(out)[2] is State.FINISHED


def test_a_revision_the_relay_does_not_speak_ends_the_session():
    status, out, report = relay("--", *server("basic", "1999-01-01"))
    notifications, error, state = channel(out)
    assert status == 1 and report["protocol_version"] == "1999-01-01" and report["server"]["shutdown"] == "handshake failed"
    assert len(notifications) == 1 and error is None and state is State.FINISHED  # a notification came first: no Error


@pytest.mark.parametrize("command, status, started", [
    (server("exit", "3"), 1, True),
    (server("exit", "0"), 1, True),
    (["/nonexistent/mcp-server"], 2, False),
])
def test_a_server_that_is_gone_before_anything_gives_one_error_then_the_finish(command, status, started):
    got, out, report = relay("--", *command)
    notifications, error, state = channel(out)
    assert got == status and report["unreachable"] and report["server"]["started"] is started
    assert notifications == [] and (error.code, error.message) == (-32000, "the container's MCP server cannot be reached")
    assert state is State.ENDED_WITH_ERROR


def test_a_server_killed_mid_stream_ends_the_channel_with_the_finish_alone():
    status, out, report = relay("--", *server("killed", "5"))
    notifications, error, state = channel(out)
    assert status == 1 and [n["params"]["data"] for n in notifications] == list(range(5))
    assert error is None and state is State.FINISHED
    assert report["server"]["signal"] == "SIGKILL" and report["server"]["ended_by"] == "itself"
    assert report["server"]["exit_status"] is None and not report["unreachable"]


def test_a_capture_replays_through_cat():
    status, out, report = relay("--", "cat", str(CAPTURE))
    lines = CAPTURE.read_bytes().splitlines()
    expected = [json.loads(line) for line in lines if b'"id"' not in line]
    for message in expected:
        del message["jsonrpc"]
    notifications, error, state = channel(out)
    assert status == 0 and notifications == expected and state is State.FINISHED
    assert report["seen"] == report["relayed"] == len(expected) and report["server"]["ended_by"] == "itself"


def test_a_notification_of_2_mib_reaches_a_consumer_that_keeps_up():
    status, out, report = relay("--until-answered", "--", *server("big", str(2 << 20)))
    notifications, _, state = channel(out)
    assert status == 0 and state is State.FINISHED and report["dropped"]["backpressure"] == 0
    assert [len(n["params"]["data"]) for n in notifications] == [2 << 20]


def test_a_line_over_the_limit_is_counted_and_the_relay_goes_on():
    status, out, report = relay("--max-line", "1000", "--until-answered", "--", *server("big", "2000"))
    assert status == 0 and channel(out)[0] == [] and report["dropped"]["too_large"] == 1 and report["seen"] == 1


def test_usage_errors_exit_2():
    for args, message in [((), "relay needs the server's command after '--'"),
                          (("--call", "=1", "--", "cat"), "a name is needed before '='"),
                          (("--call", "x={", "--", "cat"), "--call x: the arguments are not JSON"),
                          (("--call", "x=[1]", "--", "cat"), "--call x: the arguments must be a JSON object")]:
        done = subprocess.run([sys.executable, "-m", "diverge_codec", "relay", *args], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 2 and message in done.stderr and done.stdout == ""
    done = subprocess.run([sys.executable, "-m", "diverge_codec", "relay", "--grace", "0", "--", "cat"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "must be more than 0" in done.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is no process left behind: its parent reaps it
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def _pids(pidfile: Path) -> list[int]:
    for _ in range(600):
        if pidfile.exists() and pidfile.read_text().endswith("\n"):
            return [int(pid) for pid in pidfile.read_text().split()]
        time.sleep(0.05)
    raise AssertionError("the server never wrote its pids")


def test_duration_ends_a_server_that_ignores_eof_and_sigterm_and_leaves_no_process(tmp_path):
    pidfile = tmp_path / "pids"
    status, out, report = relay("--duration", "1", "--grace", "0.5", "--", *server("stubborn", str(pidfile)))
    notifications, error, state = channel(out)
    assert status == 0 and state is State.FINISHED and error is None and notifications
    assert report["server"] == {**report["server"], "ended_by": "SIGKILL", "signal": "SIGKILL", "shutdown": "duration"}
    assert [pid for pid in _pids(pidfile) if _alive(pid)] == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_relay_shuts_the_server_down(tmp_path, signum):
    pidfile = tmp_path / "pids"
    process = subprocess.Popen([sys.executable, "-m", "diverge_codec", "relay", "--grace", "0.5", "--",
                                *server("stubborn", str(pidfile))], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pids = _pids(pidfile)
    process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    report = _report(err)
    assert process.returncode == 0 and report["server"]["shutdown"] == f"signal {signum.name}"
    assert channel(out)[2] is State.FINISHED
    assert [pid for pid in pids if _alive(pid)] == []


def test_a_second_signal_skips_the_grace(tmp_path):
    pidfile = tmp_path / "pids"
    process = subprocess.Popen([sys.executable, "-m", "diverge_codec", "relay", "--grace", "600", "--",
                                *server("stubborn", str(pidfile))], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pids = _pids(pidfile)
    process.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)  # not 1200 s: the second signal went straight on
    assert process.returncode == 0 and _report(err)["server"]["signal"] == "SIGKILL"
    assert [pid for pid in pids if _alive(pid)] == []


def test_notifications_the_channel_refuses_are_counted_and_the_relay_goes_on():
    from diverge_codec import relay as sans_io
    from diverge_codec.errors import DecodeError

    try:
        sans_io.relay_frame(b'{"method":"n/x","params":"\\ud83d"}')
    except DecodeError:
        pass
    else:
        pytest.skip("this relay_frame does not yet raise for what decode refuses (branch scanner)")
    status, out, report = relay("--until-answered", "--", *server("refused"))
    notifications, error, state = channel(out)
    assert status == 0 and error is None and state is State.FINISHED
    assert [n["params"]["data"] for n in notifications] == ["valid"]
    assert report["dropped"] == {"backpressure": 0, "invalid": 2, "too_large": 0} and report["seen"] == 3


def test_a_consumer_that_goes_away_ends_the_relay_and_every_notification_is_accounted_for():
    process = subprocess.Popen([sys.executable, "-m", "diverge_codec", "relay", "--grace", "0.5", "--",
                                *server("flood", "200000")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert len(process.stdout.read(100)) == 100
    process.stdout.close()  # like `| head -c 100`
    _, err = process.communicate(timeout=60)
    report = _report(err)
    assert process.returncode == 0 and report["server"]["shutdown"] == "channel closed"
    dropped = report["dropped"]
    assert report["seen"] == report["relayed"] + sum(dropped.values()) and report["relayed"] >= 1
    # The server, stopped by a signal in the middle of its output, may leave half a line: that one is invalid.
    assert dropped["invalid"] <= 1 and dropped["too_large"] == 0

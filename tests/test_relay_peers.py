"""``diverge-codec relay`` against real MCP servers (``tests/peers``) and their committed captures.

Live servers need ``.ci/peers`` (npm peers, the mcp 1.x and fastmcp venvs); without it
their tests skip and say so. Captures replay through ``relay -- cat CAPTURE``. Every
channel is read back whole: each record decoded, the sequence checked, the finish given.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from diverge_codec import _json, relay
from diverge_codec.errors import DecodeError
from diverge_codec.sequence import State

sys.path.insert(0, str(Path(__file__).with_name("peers")))
from servers import command_for, missing  # noqa: E402
from test_relay_command import channel  # noqa: E402
from test_relay_command import relay as run_relay  # noqa: E402

CAPTURES = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "captures"
FAMILIES = ("ts-sdk-everything", "ts-sdk", "mcp-v1", "mcp-v2", "fastmcp")
LONE_SURROGATE = b'{"method":"notifications/message","params":{"level":"info","data":"\\ud83d"},"jsonrpc":"2.0"}'


def _refuses_what_decode_refuses() -> bool:
    """relay_frame raises for a notification the channel refuses (the contract of issue 14)."""
    try:
        relay.relay_frame(LONE_SURROGATE)
    except DecodeError:
        return True
    return False


REQUIRE_PEERS = os.environ.get("DIVERGE_CODEC_REQUIRE_PEERS", "") not in ("", "0")
"""Set by ``.ci/relay``: a peer that cannot start fails its test instead of skipping it."""


def peer(name: str) -> list[str]:
    command = command_for(name)
    if command is None:
        (pytest.fail if REQUIRE_PEERS else pytest.skip)(f"peer {name}: {missing(name)} (CI runs .ci/peers first)")
    return command


def _notification_lines(lines: list[bytes]) -> tuple[list[dict], int]:
    """What a capture's notifications are, envelope removed, and how many the channel refuses."""
    valid, refused = [], 0
    for line in lines:
        try:
            message = _json.loads(line)
        except ValueError:
            refused += b'"method"' in line and b'"id"' not in line
            continue
        if "method" in message and "id" not in message:
            message.pop("jsonrpc", None)
            valid.append(message)
    return valid, refused


@pytest.mark.parametrize("family", FAMILIES)
def test_a_capture_replays_through_cat(family):
    capture = CAPTURES / f"{family}.jsonl"
    expected, refused = _notification_lines(capture.read_bytes().splitlines())
    if refused and not _refuses_what_decode_refuses():
        pytest.skip("this relay_frame does not yet raise for what decode refuses (branch scanner)")
    status, out, report = run_relay("--", "cat", str(capture))
    notifications, error, state = channel(out)
    assert status == 0 and error is None and state is State.FINISHED
    assert notifications == expected
    assert report["relayed"] == len(expected) and report["dropped"] == {"backpressure": 0, "invalid": refused, "too_large": 0}
    assert report["seen"] == len(expected) + refused


def test_the_ts_sdk_capture_has_what_the_relay_must_refuse():
    assert _notification_lines((CAPTURES / "ts-sdk.jsonl").read_bytes().splitlines())[1] == 40


EVERYTHING_ARGS = (
    "--request", 'logging/setLevel={"level":"debug"}',
    "--request", 'resources/subscribe={"uri":"demo://resource/static/document/architecture.md"}',
    "--call", "toggle-subscriber-updates", "--call", "toggle-simulated-logging",
    "--call", 'trigger-long-running-operation={"duration":1,"steps":5}',
)


def assert_everything_relayed(status: int, out: bytes, report: dict) -> None:
    """What EVERYTHING_ARGS make server-everything send, over any transport: progress, logging, updates."""
    notifications, error, state = channel(out)
    assert status == 0 and error is None and state is State.FINISHED
    methods = [n["method"] for n in notifications]
    progress = [n["params"] for n in notifications if n["method"] == "notifications/progress"]
    assert [p["progressToken"] for p in progress] == ["call-5"] * 5 and [p["progress"] for p in progress] == [1, 2, 3, 4, 5]
    assert "notifications/message" in methods and "notifications/resources/updated" in methods
    updated = [n["params"]["uri"] for n in notifications if n["method"] == "notifications/resources/updated"]
    assert set(updated) == {"demo://resource/static/document/architecture.md"}
    assert report["calls"] == {"sent": 5, "answered": 5, "failed": 0, "timed_out": 0} and report["seen"] == report["relayed"]


def test_server_everything_progress_logging_and_a_subscription():
    # Its subscription updates tick every 5 s and it ignores stdin EOF: --duration, then SIGTERM.
    status, out, report = run_relay(*EVERYTHING_ARGS, "--duration", "7", "--grace", "1", "--quiet-server", "--",
                                    *peer("ts-sdk-everything"), timeout=120)
    assert_everything_relayed(status, out, report)
    assert report["server"]["shutdown"] == "duration" and report["server"]["ended_by"] in ("SIGTERM", "stdin closed")


@pytest.mark.parametrize("family", ["ts-sdk", "mcp-v1", "mcp-v2", "fastmcp"])
def test_an_sdk_server_relayed_until_its_calls_are_answered(family):
    # The 2025 era forced: under --protocol auto the dual-era mcp 2.x and fastmcp servers speak 2026-07-28
    # (tests/test_relay_eras_peers.py relays mcp 2.x there).
    status, out, report = run_relay("--protocol", "2025-11-25", "--request", 'logging/setLevel={"level":"debug"}',
                                    "--call", "emit_all", "--until-answered", "--grace", "2", "--quiet-server", "--",
                                    *peer(family), timeout=120)
    notifications, error, state = channel(out)
    # The Python SDK's servers lack logging/setLevel (-32601): a request that failed, exit 3
    failed = 1 if family in ("mcp-v1", "mcp-v2") else 0
    assert status == (3 if failed else 0) and error is None and state is State.FINISHED
    assert report["calls"]["sent"] == 2 and report["calls"]["answered"] == 2 and report["protocol_version"] == "2025-11-25"
    assert report["calls"]["failed"] == failed
    assert report["relayed"] == len(notifications) == report["seen"] - report["dropped"]["invalid"] > 0
    assert report["dropped"]["backpressure"] == report["dropped"]["too_large"] == 0
    assert {"notifications/message", "notifications/progress"} <= {n["method"] for n in notifications}


def test_a_server_that_ignores_eof_and_sigterm_is_killed_and_the_relay_ends():
    status, out, report = run_relay("--duration", "1", "--grace", "0.5", "--", *peer("eof-ignoring-sigterm"))
    notifications, error, state = channel(out)
    assert status == 0 and error is None and state is State.FINISHED and notifications
    assert report["server"]["ended_by"] == "SIGKILL" and report["server"]["signal"] == "SIGKILL"


def test_a_server_that_ignores_eof_ends_at_sigterm():
    status, _, report = run_relay("--duration", "1", "--grace", "0.5", "--", *peer("eof-ignoring"))
    assert status == 0 and report["server"]["ended_by"] == "SIGTERM"


def test_the_peer_that_exits_at_once_is_unreachable():
    status, out, report = run_relay("--", *peer("exit-at-once"))
    assert status == 1 and report["unreachable"] and channel(out)[2] is State.ENDED_WITH_ERROR


def test_the_2_mib_log_line_of_the_big_log_peer_is_relayed():
    status, out, report = run_relay("--call", "noop", "--until-answered", "--", *peer("big-log"))
    notifications, _, state = channel(out)
    assert status == 0 and state is State.FINISHED and report["dropped"]["backpressure"] == 0
    assert [len(json.dumps(n["params"]["data"])) - 2 for n in notifications] == [2 << 20, len("after the big one")]


def test_a_notification_written_before_the_initialize_answer_is_relayed_first():
    status, out, report = run_relay("--until-answered", "--grace", "2", "--quiet-server", "--", *peer("ts-sdk-early"),
                                    timeout=120)
    notifications, error, state = channel(out)
    assert status == 0 and error is None and state is State.FINISHED
    assert [n["method"] for n in notifications] == ["notifications/message"]  # the one it wrote before answering
    assert report["protocol_version"] == "2025-11-25" and report["relayed"] == len(notifications)

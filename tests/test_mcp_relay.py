"""``examples/mcp_relay`` end to end: a real MCP SDK server (mcp 2.x), the relay API, a loopback socket, a consumer."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from diverge_codec import _json, relay
from diverge_codec.relay import RelayOptions
from diverge_codec.sequence import State

pytest.importorskip("mcp.server.mcpserver", reason="the [mcp] extra is not installed")
from diverge_codec import mcp_sdk  # noqa: E402

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "mcp_relay"
if not EXAMPLE.is_dir():  # the installed-package runs copy tests/ and examples/ side by side
    pytest.fail(f"examples/mcp_relay not found beside the tests: {EXAMPLE}", pytrace=False)
sys.path.insert(0, str(EXAMPLE))
from consumer import consume  # noqa: E402
from relay import SERVER, relay_to_socket  # noqa: E402

SERVER_COMMAND = [sys.executable, str(SERVER)]


def _capturing(lines: list[bytes]):
    def frame(line: bytes) -> bytes | None:
        lines.append(line)
        return relay.relay_frame(line)
    return frame


async def _relay(command, options, *, stalled=None):
    """Relay ``command`` to the example consumer; with ``stalled`` (an ``_Answered``) the consumer reads
    nothing until the server has written every notification."""
    async def consumer(reader):
        while stalled is not None and not stalled.answered:
            await asyncio.sleep(0.01)
        return await consume(reader, chunk=4096)

    return await asyncio.wait_for(relay_to_socket(command, options, consumer, small_buffers=stalled is not None), 120)


def _as_sent(line):
    message = _json.loads(line)
    message.pop("jsonrpc")
    return message


def test_every_notification_arrives_in_order_as_the_server_wrote_it():
    lines: list[bytes] = []
    options = RelayOptions(calls=[("emit_all", {})], until_answered=True, frame=_capturing(lines), protocol="2025-11-25")
    report, consumed = asyncio.run(_relay(SERVER_COMMAND, options))
    sent = [_as_sent(line) for line in lines if b'"id"' not in line]
    assert len(sent) == report.seen == report.relayed == 20 and sum(report.dropped.values()) == 0
    assert consumed.notifications == sent
    assert consumed.state is State.FINISHED and consumed.error is None
    kinds = [type(model).__name__ for model in consumed.models[:-1]]
    assert kinds == ["ToolListChangedNotification", "ResourceListChangedNotification", "PromptListChangedNotification",
                     "ResourceUpdatedNotification"] + ["LoggingMessageNotification"] * 9 + ["ProgressNotification"] * 3 \
        + ["ElicitCompleteNotification", "CancelledNotification", "TaskStatusNotification"]
    assert isinstance(consumed.models[-1], mcp_sdk.CustomNotification)
    assert dict(consumed.unknown_methods) == {"notifications/demo/custom": 1}
    levels = [model.params.level for model in consumed.models if type(model).__name__ == "LoggingMessageNotification"]
    assert levels == ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency", "info"]
    tokens = [model.params.progress_token for model in consumed.models[-7:-4]]
    assert tokens == [7, "job-α", "call-1"]
    assert (report.calls_sent, report.calls_answered, report.calls_failed) == (1, 1, 0)
    assert report.protocol_version == "2025-11-25" and report.server["shutdown"] == "until-answered"


def test_a_server_that_exits_at_once_gives_one_error_then_the_finish():
    report, consumed = asyncio.run(_relay(SERVER_COMMAND + ["--exit-at-once"], RelayOptions()))
    assert report.unreachable and report.seen == 0 and report.server["exit_status"] == 3
    assert consumed.notifications == [] and consumed.error is not None
    assert (consumed.error.code, consumed.error.message) == (-32000, "the container's MCP server cannot be reached")
    assert consumed.state is State.ENDED_WITH_ERROR  # and finished: consume() returns what finish() said


class _Answered:
    """A frame function that also says when the flood's call was answered (its last notification seen)."""

    def __init__(self, count: int) -> None:
        self.count, self.seen, self.answered = count, 0, False

    def __call__(self, line: bytes) -> bytes | None:
        payload = relay.relay_frame(line)
        if payload is not None:
            self.seen += 1
            self.answered = self.seen >= self.count
        return payload


def test_a_slow_consumer_makes_the_relay_drop_and_count_not_grow():
    # 1500 notifications of ~2.1 KB (3 MB) against a consumer that reads nothing until the
    # server is done: all but the outbox (64 KiB) and the socket's few buffers must be dropped.
    outbox_bytes = 64 << 10
    flood = _Answered(1500)
    options = RelayOptions(calls=[("flood", {"count": 1500, "size": 2048})], until_answered=True,
                           outbox_bytes=outbox_bytes, frame=flood, protocol="2025-11-25")
    report, consumed = asyncio.run(_relay(SERVER_COMMAND, options, stalled=flood))
    assert report.seen == 1500
    dropped = report.dropped["backpressure"]
    assert dropped > 1000 and report.relayed == len(consumed.notifications) == 1500 - dropped
    indexes = [n["params"]["data"]["index"] for n in consumed.notifications]
    assert indexes == sorted(set(indexes))  # what arrives is in order, each once
    assert consumed.state is State.FINISHED


@pytest.mark.parametrize("pure", ["0", "1"])
def test_the_demo_runs_on_both_cores(pure):
    env = {**os.environ, "DIVERGE_CODEC_PURE": pure}
    done = subprocess.run([sys.executable, str(EXAMPLE / "relay.py")], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "relayed 20 of 20 notifications, dropped 0" and lines[-1] == "channel: finished"
    assert "unknown methods: {'notifications/demo/custom': 1}" in lines

"""``examples/mcp_relay`` end to end: a real MCP SDK server, the relay, a loopback socket, a consumer."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from diverge_codec import _json
from diverge_codec.sequence import State

pytest.importorskip("mcp.server.mcpserver", reason="the [mcp] extra is not installed")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "mcp_relay"
if not EXAMPLE.is_dir():  # the installed-package runs copy tests/ and examples/ side by side
    pytest.fail(f"examples/mcp_relay not found beside the tests: {EXAMPLE}", pytrace=False)
sys.path.insert(0, str(EXAMPLE))
from consumer import consume  # noqa: E402
from relay import SERVER, RelayReport, relay_server  # noqa: E402

SERVER_COMMAND = [sys.executable, str(SERVER)]


async def _relay_to_consumer(command, calls=(("emit_all", {}),), *, outbox_bytes=1 << 20, stalled=False):
    """Relay ``command`` to a consumer over loopback; a ``stalled`` consumer reads nothing until the server is done."""
    done = asyncio.get_running_loop().create_future()
    report = RelayReport()

    async def accepted(reader, writer):
        if stalled:
            writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            while not report.answered:
                await asyncio.sleep(0.01)
        try:
            done.set_result(await consume(reader, chunk=4096))
        except BaseException as failure:  # the test sees the consumer's failure, not a hang
            done.set_exception(failure)
        writer.close()

    listener = await asyncio.start_server(accepted, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    if stalled:
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        writer.transport.set_write_buffer_limits(high=16384)
    await relay_server(command, writer, calls, outbox_bytes=outbox_bytes, capture=True, report=report)
    consumed = await asyncio.wait_for(done, 60)
    listener.close()
    await listener.wait_closed()
    return report, consumed


def _as_sent(line):
    message = _json.loads(line)
    message.pop("jsonrpc")
    return message


def test_every_notification_arrives_in_order_as_the_server_wrote_it():
    report, consumed = asyncio.run(_relay_to_consumer(SERVER_COMMAND))
    sent = [_as_sent(line) for line in report.captured if b'"id"' not in line]
    assert len(sent) == report.seen == 18 and report.dropped == 0
    assert consumed.notifications == sent
    assert consumed.state is State.FINISHED and consumed.error is None
    kinds = [type(model).__name__ for model in consumed.models]
    assert kinds == ["ToolListChangedNotification", "ResourceListChangedNotification", "PromptListChangedNotification",
                     "ResourceUpdatedNotification"] + ["LoggingMessageNotification"] * 9 + ["ProgressNotification"] * 3 \
        + ["ElicitCompleteNotification", "CancelledNotification"]
    levels = [model.params.level for model in consumed.models if type(model).__name__ == "LoggingMessageNotification"]
    assert levels == ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency", "info"]
    tokens = [model.params.progress_token for model in consumed.models[-5:-2]]
    assert tokens == [7, "job-α", "call-1"]


def test_a_server_that_exits_at_once_gives_one_error_then_the_finish():
    report, consumed = asyncio.run(_relay_to_consumer(SERVER_COMMAND + ["--exit-at-once"]))
    assert report.unreachable and report.seen == 0
    assert consumed.notifications == [] and consumed.error is not None
    assert (consumed.error.code, consumed.error.message) == (-32000, "the container's MCP server cannot be reached")
    assert consumed.state is State.ENDED_WITH_ERROR  # and finished: consume() returns what finish() said


def test_a_slow_consumer_makes_the_relay_drop_and_count_not_grow():
    # 1500 notifications of ~2.1 KB (3 MB) against a consumer that reads nothing until the
    # server is done: all but the outbox (64 KiB) and the socket's few buffers must be dropped.
    outbox_bytes = 64 << 10
    calls = (("flood", {"count": 1500, "size": 2048}),)
    report, consumed = asyncio.run(
        _relay_to_consumer(SERVER_COMMAND, calls, outbox_bytes=outbox_bytes, stalled=True))
    assert report.seen == 1500
    assert report.dropped > 1000 and report.relayed == len(consumed.notifications) == 1500 - report.dropped
    assert report.high_water_bytes <= outbox_bytes
    indexes = [n["params"]["data"]["index"] for n in consumed.notifications]
    assert indexes == sorted(set(indexes))  # what arrives is in order, each once
    assert consumed.state is State.FINISHED


@pytest.mark.parametrize("pure", ["0", "1"])
def test_the_demo_runs_on_both_cores(pure):
    env = {**os.environ, "DIVERGE_CODEC_PURE": pure}
    done = subprocess.run([sys.executable, str(EXAMPLE / "relay.py")], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "relayed 18 of 18 notifications, dropped 0" and lines[-1] == "channel: finished"

"""The relay's throughput, replaying a capture of the example MCP server (``data/``), server excluded.

Two relays of the same lines, in one run: this library's (the envelope spliced off,
``frame_notification``, never parsed) and the same relay written the obvious way,
parsing each line with orjson and re-serializing the notification through ``encode``.
``per line`` times the relay's own work into a buffer; ``over a socket`` runs the
relay (``diverge_codec.relay``, as the example uses it) end to end, with ``cat`` of the
capture as its server and a consumer that counts records. Both report notifications per second in the ratio table.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from pathlib import Path

import orjson
import pytest

from diverge_codec import _bench, relay, stream
from diverge_codec.relay import RelayOptions

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "mcp_relay"))
CAPTURE = Path(__file__).with_name("data") / "mcp_server_capture.jsonl"
LINES = CAPTURE.read_bytes().splitlines(keepends=True)
NOTIFICATIONS = sum(relay.notification_json(line) is not None for line in LINES)
REPLAYS = 50  # the capture, that many times over, per end-to-end round


def spliced(mn):
    return functools.partial(relay.relay_frame, codec=mn)


def reserialized(mn):
    encode, Notification = mn.encode, mn.Notification

    def frame(line: bytes) -> bytes | None:
        message = orjson.loads(line)
        if not isinstance(message, dict) or "id" in message or "method" not in message:
            return None
        message.pop("jsonrpc", None)
        return encode(Notification(message))
    return frame


def relay_lines(frame, lines=LINES) -> bytearray:
    out = bytearray()
    for line in lines:
        payload = frame(line)
        if payload is not None:
            stream.write_record(out, payload)
    return out


RELAYS = {"baseline": reserialized, "cython": spliced, "python": spliced}


@pytest.mark.parametrize("who", list(RELAYS))
def test_relay_per_line(benchmark, who):
    mn, _ = _bench.modules("python" if who == "python" else "cython")
    frame = RELAYS[who](mn)
    benchmark.group = f"relay per line ({NOTIFICATIONS} notifications)"
    benchmark.extra_info.update(who=who, items=NOTIFICATIONS)
    out = benchmark(relay_lines, frame)
    if who != "baseline":  # the ratio again, the two relays alternating: a drift of the machine hits both
        reserialize = reserialized(mn)
        baseline_ns, ours_ns = _bench.paired_ns(lambda: relay_lines(reserialize), lambda: relay_lines(frame), 0.5, 10)
        benchmark.extra_info["interleaved"] = ours_ns / baseline_ns
    payloads = stream.split_records(out)
    assert len(payloads) == NOTIFICATIONS
    assert [mn.decode(p) for p in payloads] == [mn.decode(p) for p in stream.split_records(relay_lines(spliced(mn)))]


async def _replay(frame, capture_copies: Path) -> int:
    from relay import relay_to_socket

    async def count(reader: asyncio.StreamReader) -> int:
        records = stream.RecordReader()
        total = 0
        while data := await reader.read(1 << 16):
            total += len(records.feed(data))
        return total

    options = RelayOptions(outbox_bytes=1 << 30, frame=frame)
    report, total = await relay_to_socket(["cat", str(capture_copies)], options, count)
    assert sum(report.dropped.values()) == 0
    return total


@pytest.mark.parametrize("who", ["baseline", "cython"])
def test_relay_over_a_socket(benchmark, who, tmp_path):
    copies = tmp_path / "capture.jsonl"
    copies.write_bytes(CAPTURE.read_bytes() * REPLAYS)
    frame = RELAYS[who](_bench.modules("cython")[0])
    benchmark.group = f"relay over a socket ({NOTIFICATIONS * REPLAYS} notifications)"
    benchmark.extra_info.update(who=who, items=NOTIFICATIONS * REPLAYS)
    total = benchmark.pedantic(lambda: asyncio.run(_replay(frame, copies)), rounds=5, warmup_rounds=1)
    assert total == NOTIFICATIONS * REPLAYS

"""The relay's splice on every SDK family's output, against parse-and-reserialize, validation included.

Per family (a capture of a real server in ``data/captures/<family>.jsonl``), the
notification lines go through ``relay.relay_frame`` (compiled core: the scan that
validates as orjson does and removes ``jsonrpc`` wherever it stands) and through the
obvious relay, ``orjson.loads`` + ``pop("jsonrpc")`` + ``orjson.dumps``, in one run;
the ratio is per notification (target: at most 0.25x). ``relay's own work`` times every
line of the TypeScript SDK capture through the splice ``relay_frame`` wraps (what the
relay calls) and into the stream envelope, server and socket excluded, in notifications
per second (target: 3 M/s). ``relay session`` times the whole sans-IO path the relay runs
on the same bytes: ``RelaySession.receive`` in 64 KiB reads (lines split, framed, answers
parsed, notifications queued), the outbox taken and written as records. Instructions
per notification for both: ``python benchmarks/own_work_instructions.py`` (valgrind).

Where the captures are not there yet, the demo capture (mcp 2.x, envelope first) and
its lines rewritten as the TypeScript SDK writes them (envelope last) stand in.
"""

from __future__ import annotations

import functools
from pathlib import Path

import orjson
import pytest

from diverge_codec import _bench, stream
from diverge_codec import relay
from diverge_codec.relay import session as relay_session

DATA = Path(__file__).with_name("data")
FAMILIES = ("ts-sdk-everything", "ts-sdk", "mcp-v1", "mcp-v2", "fastmcp")


def _envelope_last(line: bytes) -> bytes:
    """The line as the TypeScript SDK writes it: JSON.stringify of {method, params, jsonrpc}."""
    message = orjson.loads(line)
    message["jsonrpc"] = message.pop("jsonrpc", "2.0")
    return orjson.dumps(message) + b"\n"


def _captures() -> dict[str, list[bytes]]:
    found = {family: (DATA / "captures" / f"{family}.jsonl") for family in FAMILIES}
    lines = {family: path.read_bytes().splitlines(keepends=True) for family, path in found.items() if path.exists()}
    if not lines:
        demo = (DATA / "mcp_server_capture.jsonl").read_bytes().splitlines(keepends=True)
        lines = {"mcp-v2 (demo capture)": demo, "ts-sdk (demo, envelope last)": [_envelope_last(line) for line in demo]}
    return lines


CAPTURES = _captures()
TS_FAMILY = next((name for name in CAPTURES if name.startswith("ts-sdk")), next(iter(CAPTURES)))


def _relayed(line: bytes) -> bool:
    try:
        return relay.relay_frame(line) is not None
    except relay.mcp_notifications.NotificationParseError:  # refused by the channel: not a notification to time
        return False


def _notifications(lines: list[bytes]) -> list[bytes]:
    return [line for line in lines if _relayed(line)]


def reparse(line: bytes) -> bytes:
    message = orjson.loads(line)
    message.pop("jsonrpc", None)
    return b"\x00" + orjson.dumps(message)


def _relay_frame(mn):
    """What the relay calls per line: the compiled splice itself (``relay_frame`` without its wrapper), as
    ``RelaySession`` does; the pure core through ``relay_frame``."""
    if mn.splice_notification is relay.mcp_notifications.splice_notification:
        return mn.splice_notification
    return functools.partial(relay.relay_frame, codec=mn)


def each(frame, lines: list[bytes]) -> None:
    for line in lines:
        frame(line)


@pytest.mark.parametrize("who", ["baseline", "cython", "python"])
@pytest.mark.parametrize("family", list(CAPTURES))
def test_relay_frame_per_family(benchmark, family, who):
    mn, _ = _bench.modules("python" if who == "python" else "cython")
    lines = _notifications(CAPTURES[family])
    frame = reparse if who == "baseline" else _relay_frame(mn)
    benchmark.group = f"relay_frame per notification, {family} ({len(lines)} notifications)"
    benchmark.extra_info.update(who=who, items=len(lines))
    benchmark(each, frame, lines)
    if who != "baseline":
        baseline_ns, ours_ns = _bench.paired_ns(lambda: each(reparse, lines), lambda: each(frame, lines), 0.5, 10)
        benchmark.extra_info["interleaved"] = ours_ns / baseline_ns
    assert [mn.decode(frame(line)) for line in lines] == [mn.decode(reparse(line)) for line in lines]


def relay_own_work(frame, lines: list[bytes], refusal: type[Exception]) -> bytearray:
    """What the relay does per line it reads: frame it, and put a notification in the stream envelope.

    A line the channel refuses is counted and not sent.
    """
    out = bytearray()
    write_record = stream.write_record
    refused = 0
    for line in lines:
        try:
            payload = frame(line)
        except refusal:
            refused += 1
            continue
        if payload is not None:
            write_record(out, payload)
    return out


@pytest.mark.parametrize("who", ["baseline", "cython"])
def test_relay_own_work_on_the_ts_sdk_capture(benchmark, who):
    mn, _ = _bench.modules("cython")
    lines = CAPTURES[TS_FAMILY]
    count = len(_notifications(lines))

    def reparse_relay(line: bytes) -> bytes | None:
        message = orjson.loads(line)
        if type(message) is not dict or "id" in message:
            return None
        message.pop("jsonrpc", None)
        return b"\x00" + orjson.dumps(message)

    frame = reparse_relay if who == "baseline" else _relay_frame(mn)
    benchmark.group = f"relay's own work, {TS_FAMILY} ({count} notifications of {len(lines)} lines)"
    benchmark.extra_info.update(who=who, items=count)
    refusal = orjson.JSONDecodeError if who == "baseline" else mn.NotificationParseError
    out = benchmark(relay_own_work, frame, lines, refusal)
    assert len(stream.split_records(out)) == count


def reads(data: bytes, read: int = 1 << 18) -> list[bytes]:
    """The server's output as the driver reads it: ``read`` bytes at a time (asyncio reads up to 256 KiB)."""
    return [data[at:at + read] for at in range(0, len(data), read)]


def relay_session_work(chunks: list[bytes]) -> list[bytes]:
    """The relay's sans-IO path on a server's output, as ``relay.stdio`` drives it: each read received,
    the outbox taken whole as the records of one write to the channel."""
    session = relay_session.RelaySession(outbox_bytes=1 << 30)
    session.start()
    written = []
    for chunk in chunks:
        session.receive(chunk)
        written.append(session.outbox.take_records()[0])
    session.end_of_output()
    return written


def test_relay_session_on_the_ts_sdk_capture(benchmark):
    lines = CAPTURES[TS_FAMILY]
    count = len(_notifications(lines))
    data = b"".join(lines)
    benchmark.group = f"relay session, {TS_FAMILY} ({count} notifications of {len(lines)} lines, 256 KiB reads)"
    benchmark.extra_info.update(who="cython", items=count)
    out = benchmark(relay_session_work, reads(data))
    assert len(stream.split_records(b"".join(out))) == count

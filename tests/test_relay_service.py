"""The relay as a service an operator leaves running: it always ends, its memory is bounded, nothing escapes it.

Each case runs ``diverge-codec relay`` as an operator does, against a real quiet server
(npm's server-memory) or a deliberately hostile one of ``relay_servers.py``, and each
failed on the main of before (a relay that never ended, memory that grew with the
server's requests, a process left running, a refused revision it had offered).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from diverge_codec.relay import channel as relay_channel, stdio as relay_stdio
from diverge_codec.cli import main
from diverge_codec.relay import RelayUnsupported, ServerRelay, open_writer
from diverge_codec.sequence import State

sys.path.insert(0, str(Path(__file__).with_name("peers")))
from test_relay_command import _alive, _pids, _report, channel, relay, server  # noqa: E402
from test_relay_peers import peer  # noqa: E402  (fails instead of skipping where CI requires the peers)

RELAY = [sys.executable, "-m", "diverge_codec", "relay"]
ENDS_WITHIN = 30  # seconds: each case ends in about one grace; the old relay never ended at all


def _dead_soon(pids: list[int]) -> list[int]:
    """The pids still running after a short wait (a SIGKILLed process is gone within milliseconds)."""
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.05)
    return [pid for pid in pids if _alive(pid)]


def _consumer_leaves(command: list[str], *relay_args: str, env: dict[str, str] | None = None,
                     quiet_for: float | None = None) -> tuple[int, dict, float]:
    """Start the relay, then close its channel's read end (``| head -c``).

    The consumer leaves after the first record, or, for a server that says nothing on the
    channel at all, after ``quiet_for`` seconds (time enough to start and answer the calls).
    """
    process = subprocess.Popen([*RELAY, "--grace", "0.5", *relay_args, "--", *command], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
    assert process.stdout is not None
    if quiet_for is None:
        assert len(process.stdout.read(4)) == 4  # the first record's length: the server has started and spoken
    else:
        time.sleep(quiet_for)
    left = time.monotonic()
    process.stdout.close()
    _, err = process.communicate(timeout=ENDS_WITHIN)
    return process.returncode, _report(err), time.monotonic() - left


def test_a_quiet_server_s_consumer_leaving_ends_the_relay():
    # `basic` logs once and then waits for requests, silent as most servers are between calls.
    status, report, took = _consumer_leaves(server("basic"))
    assert status == 0 and report["server"]["shutdown"] == "channel closed" and took < 10
    assert report["server"]["ended_by"] == "stdin closed" and report["relayed"] == 1


@pytest.mark.parametrize("pure", ["0", "1"])
def test_a_real_quiet_server_s_consumer_leaving_ends_the_relay(tmp_path, pure):
    command = peer("server-memory")
    # server-memory sends no notification at all: the channel stays empty while the calls are answered.
    status, report, took = _consumer_leaves(
        command, "--request", 'logging/setLevel={"level":"debug"}', "--call", "read_graph",
        env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl"), "DIVERGE_CODEC_PURE": pure}, quiet_for=3)
    # server-memory lacks logging/setLevel (-32601): a request that failed, exit 3
    assert status == 3 and report["server"]["shutdown"] == "channel closed" and took < 10
    assert report["calls"]["answered"] == 2 and report["calls"]["failed"] == 1 and report["relayed"] == 0


def test_a_server_that_exits_while_its_child_holds_the_output_is_ended(tmp_path):
    pidfile = tmp_path / "pids"
    started = time.monotonic()
    status, out, report = relay("--grace", "0.5", "--", *server("orphan", str(pidfile)), timeout=ENDS_WITHIN)
    assert time.monotonic() - started < 10 and status == 0 and channel(out)[2] is State.FINISHED
    assert report["server"] == {**report["server"], "ended_by": "itself", "exit_status": 0, "leftovers": 1}
    assert _dead_soon(_pids(pidfile)) == []


@pytest.mark.parametrize("how", ["setsid", "clean"])
def test_a_process_that_left_the_server_s_group_is_ended_too(tmp_path, how):
    """``setsid``: found by the mark in its environment; ``clean`` (an empty environment too): the
    command line is a subreaper, so the orphan is its child, and it ends its children."""
    pidfile = tmp_path / "pids"
    status, _, report = relay("--grace", "0.5", "--until-answered", "--", *server("escape", str(pidfile), how),
                              timeout=ENDS_WITHIN)
    pids = _pids(pidfile)
    assert status == 0 and report["server"]["leftovers"] == 1
    assert _dead_soon(pids) == []


def test_a_call_never_answered_is_cancelled_and_until_answered_ends():
    status, out, report = relay("--request-timeout", "0.5", "--call", "never", "--until-answered", "--",
                                *server("silent"), timeout=ENDS_WITHIN)
    notifications, _, state = channel(out)
    assert status == 3 and state is State.FINISHED and report["server"]["shutdown"] == "until-answered"  # 3: a call failed
    assert report["calls"] == {"sent": 1, "answered": 0, "failed": 1, "timed_out": 1}
    # What the server was sent: MCP's cancellation, which it logged back onto the channel.
    assert [n["params"]["data"] for n in notifications] == [{"cancelled": 1, "reason": "no answer within 0.5 s"}]


def test_a_tool_result_with_is_error_counts_as_a_failed_call():
    status, _, report = relay("--call", "nope", "--until-answered", "--", *server("failing"), timeout=ENDS_WITHIN)
    assert status == 3 and report["calls"] == {"sent": 1, "answered": 1, "failed": 1, "timed_out": 0}


def _max_rss_kib(count: int) -> tuple[int, dict]:
    """The relay's peak RSS over a flood of ``count`` pings: it is stopped once it relayed the log
    line the server writes after the last one (so every ping was read, however slow the core)."""
    process = subprocess.Popen([*RELAY, "--grace", "0.5", "--", *server("pings", str(count))],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    length = process.stdout.read(4)  # the one record: "all pinged"
    assert len(length) == 4 and b"all pinged" in process.stdout.read(int.from_bytes(length, "big"))
    process.send_signal(signal.SIGINT)
    err = process.stderr.read()
    _, _, usage = os.wait4(process.pid, 0)
    return usage.ru_maxrss, _report(err)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB, as Linux gives it")
def test_a_server_that_floods_requests_and_reads_nothing_grows_no_memory():
    small, small_report = _max_rss_kib(20_000)
    large, large_report = _max_rss_kib(600_000)
    # Before: every answer queued in the stdin transport, +24 MiB for 600k pings. Now flat.
    assert large - small < 4 * 1024, (small, large)
    for count, report in ((20_000, small_report), (600_000, large_report)):
        assert report["requests_answered"] + report["requests_unanswered"] == count
        assert report["requests_unanswered"] > 0 and report["relayed"] == 1  # and the log line after them


def test_a_revision_the_relay_cannot_speak_is_refused_up_front():
    done = subprocess.run([*RELAY, "--protocol-version", "2024-10-07", "--", *server("basic")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert "--protocol-version: invalid choice" in done.stderr and "2024-10-07" not in done.stderr


def test_a_revision_offered_is_accepted_back():
    status, out, report = relay("--protocol-version", "2024-11-05", "--until-answered", "--",
                                *server("basic", "2024-11-05"), timeout=ENDS_WITHIN)
    assert status == 0 and report["protocol_version"] == "2024-11-05" and channel(out)[2] is State.FINISHED


def test_every_line_is_accounted_for_blank_meaning_json_whitespace_only():
    status, out, report = relay("--until-answered", "--", *server("odd-lines"), timeout=ENDS_WITHIN)
    assert status == 0 and [n["params"]["data"] for n in channel(out)[0]] == ["after"]
    assert report["seen"] == 3 and report["dropped"]["invalid"] == 2  # the \x0b and \x0c lines


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe sizes are Linux's (F_SETPIPE_SZ)")
def test_the_server_s_output_pipe_is_widened_to_read_more_per_turn():
    status, out, report = relay("--duration", "3", "--", *server("pipe-size"), timeout=ENDS_WITHIN)
    limit = int(Path("/proc/sys/fs/pipe-max-size").read_text())
    assert status == 0 and [n["params"]["data"] for n in channel(out)[0]] == [min(relay_channel.PIPE_BYTES, limit)]


_READ_SIZE_PROBE = """
import asyncio, sys
from diverge_codec import relay
from diverge_codec.cli import main, relay as cli_relay

async def run(server, out_fd, options, watch):  # what the CLI would relay with, and nothing relayed
    print(options.read_bytes)
    return {"server": {}}, 0

cli_relay._run = run
relay.become_subreaper = lambda: None
main(["relay", "--report", "/dev/null", "--", "true"])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux")
def test_the_cli_reads_a_pipeful_a_turn_once_the_allocator_keeps_freed_blocks():
    """Issue 44: the CLI tunes glibc's allocator (a 1 MiB block each turn is otherwise a fresh mapping),
    then asks the stdio driver for a pipeful a read; the library's default stays asyncio's."""
    from diverge_codec.relay import RelayOptions

    done = subprocess.run([sys.executable, "-c", _READ_SIZE_PROBE], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[:1] == [str(relay_channel.PIPE_BYTES)], done.stderr
    assert RelayOptions().read_bytes is None


@pytest.mark.parametrize("read_bytes", [0, -1, 1.5, True, "1"])
def test_a_read_size_that_is_no_positive_int_is_refused(read_bytes):
    from diverge_codec.relay import RelayOptions

    with pytest.raises(ValueError, match=r"^read_bytes must be a positive int, or None$"):
        ServerRelay(["true"], None, RelayOptions(read_bytes=read_bytes))  # type: ignore[arg-type]


@pytest.mark.parametrize("size, relayed", [(1000, 1), (1001, 0)])
def test_a_line_of_max_line_bytes_is_relayed_and_one_more_is_too_large(size, relayed):
    status, out, report = relay("--max-line", "1000", "--until-answered", "--", *server("exact", str(size)),
                                timeout=ENDS_WITHIN)
    assert status == 0 and report["relayed"] == relayed and report["dropped"]["too_large"] == 1 - relayed
    assert [len(payload) for payload in _records(out)] == [1001] * relayed  # the record: the tag and the line


def _records(out: bytes) -> list[bytes]:
    from diverge_codec import stream
    return [bytes(payload) for payload in stream.split_records(out)]


def test_the_channel_file_is_private_and_replaces_what_was_there(tmp_path):
    out = tmp_path / "channel.bin"
    out.write_bytes(b"old")
    out.chmod(0o644)
    status, _, _ = relay("--out", str(out), "--until-answered", "--", *server("basic"), timeout=ENDS_WITHIN)
    assert status == 0 and out.stat().st_mode & 0o777 == 0o600 and out.read_bytes()[:4] != b"old"
    link = tmp_path / "link.bin"
    link.symlink_to(out)
    done = subprocess.run([*RELAY, "--out", str(link), "--", *server("basic")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and f"cannot write {link}: it is a symbolic link, which is not followed" in done.stderr


def test_a_signal_after_the_consumer_left_gives_the_report(tmp_path):
    pidfile = tmp_path / "pids"
    process = subprocess.Popen([*RELAY, "--grace", "5", "--", *server("stubborn", str(pidfile))],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pids = _pids(pidfile)
    assert process.stdout is not None
    time.sleep(1)  # the handshake done; `stubborn` then waits for its stdin's end, quiet
    process.stdout.close()  # the relay closes the server's stdin; the server ignores it and SIGTERM, and logs
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)  # inside the grace, with the channel closed
    _, err = process.communicate(timeout=ENDS_WITHIN)
    assert b"unexpected" not in err and _report(err)["server"]["shutdown"] in ("channel closed", "signal SIGINT")
    assert _dead_soon(pids) == []


def test_a_pipe_whose_reader_left_can_be_aborted_after_it_closed():
    """asyncio's pipe transport raised AttributeError on an abort after the reader's departure
    closed it: the relay's stuck-consumer path hit that after a signal."""
    async def scenario() -> None:
        read_end, write_end = os.pipe()
        writer = await open_writer(write_end)
        os.close(read_end)
        await asyncio.wait_for(writer.wait_closed(), 5)  # noticed with nothing written
        writer.abort()  # type: ignore[attr-defined]
        writer.abort()  # type: ignore[attr-defined]

    asyncio.run(scenario())


def test_windows_is_refused_plainly(monkeypatch, capsys):
    monkeypatch.setattr(relay_stdio.sys, "platform", "win32")
    with pytest.raises(RelayUnsupported, match=r"^the relay runs MCP servers on POSIX systems only \(Linux, macOS\); "
                                               r"the codec runs everywhere$"):
        ServerRelay(["x"], None)  # type: ignore[arg-type]
    assert main(["relay", "--", "x"]) == 2
    assert capsys.readouterr().err == ("diverge-codec: relay runs MCP servers on POSIX systems only (Linux, macOS); "
                                       "--url, inspect and encode run everywhere\n")


def test_nothing_is_left_when_the_relay_ends_normally():
    """The mark in every relayed server's environment names only that relay's processes."""
    status, _, report = relay("--until-answered", "--", *server("basic"), timeout=ENDS_WITHIN)
    assert status == 0 and report["server"]["leftovers"] == 0
    assert json.dumps(report).count("DIVERGE_CODEC_RELAY") == 0

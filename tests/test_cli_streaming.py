"""inspect as a stream: peak memory stays bounded whatever the input's length, and live input is shown as it comes.

Peak memory is the child's own maximum resident set (``os.wait4``), compared with the
same command on an empty input: the difference is what the capture costs.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile

import pytest

from diverge_codec import samples

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes, signals and terminals")
LINUX = pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB, and a child's figure as Linux counts it")

MIB = 1024 * 1024
ALLOWANCE = 8 * MIB
"""What the largest record (2 KB here) and the constant part may cost: a few MiB."""
TOOL = [sys.executable, "-m", "diverge_codec", "inspect"]
MN = ["--channel", "mcp-notifications"]

# writes the notification stream to stdout: MB_TOTAL megabytes of it, or without end for 0
WRITER = """
import itertools, sys
from diverge_codec import samples
block = samples.capture(list(itertools.islice(samples.notification_stream(), 5000)))
total = int(sys.argv[1]) * 1_000_000
out = sys.stdout.buffer
written = 0
try:
    while not total or written < total:
        out.write(block)
        written += len(block)
    out.flush()
except BrokenPipeError:
    sys.stdout = None
"""


# runs the command and writes its peak RSS (KiB) to the file argv[1]. A child's figure starts at
# its parent's size when it forks, so the parent measuring must be smaller than the tool: not pytest.
MEASURE = """
import resource, subprocess, sys
status = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as file:
    file.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(status)
"""


def peak(argv, stdin=None, megabytes=None):
    """Exit status, peak RSS in bytes and the last line of stdout of inspect; input from a file or from WRITER."""
    writer = None
    if megabytes is not None:
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(megabytes)], stdout=subprocess.PIPE)
        stdin = writer.stdout
    with tempfile.NamedTemporaryFile("r") as figure:
        tool = subprocess.Popen([sys.executable, "-c", MEASURE, figure.name, *TOOL, *argv],
                                stdin=subprocess.DEVNULL if stdin is None else stdin,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if writer is not None:
            writer.stdout.close()
        tail = b""
        while chunk := tool.stdout.read(1 << 16):  # keep only the end: the summary
            tail = (tail + chunk)[-4096:]
        err = tool.stderr.read()
        status = tool.wait(timeout=120)
        rss = int(figure.read()) * 1024
    if writer is not None:
        writer.wait(timeout=60)
    assert b"Traceback" not in err and err == b"", err
    return status, rss, tail.decode().splitlines()[-1]


@pytest.fixture(scope="module")
def baseline():
    # PyPy's JIT and GC add ~19 MiB once a stream warms them up, the same for 10 MB as for 300 MB:
    # there the baseline is a 10 MB stream, so what is compared is still what the length costs.
    status, rss, _ = peak(["-", *MN], megabytes=10 if sys.implementation.name == "pypy" else None)
    assert status == 0
    return rss


@LINUX
@pytest.mark.parametrize("json_lines", [False, True], ids=["text", "json"])
def test_a_100_mb_capture_costs_no_more_than_its_largest_record_and_a_few_mib(baseline, json_lines):
    status, rss, last = peak(["-", *MN, *(["--json"] if json_lines else [])], megabytes=100)
    assert status == 0
    if json_lines:
        summary = json.loads(last)
        assert summary["type"] == "summary" and summary["kind"] == "finished" and summary["frames"] > 250_000
    else:
        assert last.startswith("verdict: ok: finished after ")
    assert rss - baseline <= ALLOWANCE, f"{(rss - baseline) / MIB:.1f} MiB over the baseline"


@LINUX
@pytest.mark.parametrize("limit", ["0", "1024", str(16 * MIB)])
def test_dev_zero_stops_at_its_first_record_in_bounded_memory(baseline, limit):
    status, rss, last = peak(["/dev/zero", *MN, "--max-record", limit])
    assert status == 1
    assert last == "verdict: frame 0 could not be decoded: mcp notifications response frame is empty"
    assert rss - baseline <= ALLOWANCE


@LINUX
def test_an_endless_input_stops_at_max_frames_in_bounded_memory(baseline):
    status, rss, last = peak(["-", *MN, "--max-frames", "200000"], megabytes=0)
    assert status == 0
    assert last == "verdict: ok so far: --max-frames reached after 200000 frames (streaming)"
    assert rss - baseline <= ALLOWANCE


def _lines(stream, count, timeout=60.0):
    """``count`` lines from a pipe, waiting at most ``timeout`` for each: proves output comes before the input ends."""
    lines = []
    buffer = b""
    fd = stream.fileno()
    while len(lines) < count:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"no output after {lines}"
        data = os.read(fd, 4096)
        assert data, f"output ended after {lines}"
        buffer += data
        *whole, buffer = buffer.split(b"\n")
        lines += [line.decode() for line in whole]
    assert buffer == b""
    return lines


@pytest.mark.parametrize(("signum", "status", "json_lines"), [(signal.SIGINT, 130, False), (signal.SIGTERM, 143, True)])
def test_live_input_is_shown_as_it_comes_and_a_signal_ends_it_with_a_summary(signum, status, json_lines):
    tool = subprocess.Popen(TOOL + ["-", *MN, *(["--json"] if json_lines else [])],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        payloads = samples.mcp_notifications_session()
        tool.stdin.write(samples.capture(payloads[:3]))
        tool.stdin.flush()
        shown = _lines(tool.stdout, 3 if json_lines else 5)  # the input is still open
        assert "notifications/progress" in shown[-1]
        tool.send_signal(signum)
        rest = tool.stdout.read().decode().splitlines()
        assert tool.wait(timeout=60) == status
        assert tool.stderr.read() == b""
    finally:
        tool.kill()
        tool.wait()
        tool.stdin.close()
    if json_lines:
        summary = json.loads(rest[-1])
        assert summary == {"type": "summary", "channel": "mcp-notifications", "source": "-", "frames": 3, "valid": True,
                           "kind": "interrupted", "index": None, "rule": None,
                           "message": "ok so far: interrupted after 3 frames (streaming)", "state": "streaming"}
    else:
        assert rest == ["frames: 3", "verdict: ok so far: interrupted after 3 frames (streaming)"]


@LINUX
def test_a_large_record_costs_a_small_multiple_of_itself(baseline, tmp_path):
    """8 MiB in one record: held while it arrives, copied out whole by RecordReader, decoded (about 3x today)."""
    from diverge_codec import mcp_notifications as mn

    big = mn.encode(mn.Notification({"method": "x", "params": {"blob": "b" * (8 * MIB)}}))
    small = samples.mcp_notifications_session()
    path = tmp_path / "big.cap"
    path.write_bytes(samples.capture(small * 200 + [big] + small * 200))
    status, rss, last = peak([str(path), *MN])
    assert status == 0 and last == "verdict: ok: finished after 2001 notifications"
    # PyPy's GC lets its heap grow to 1.82x what survived the last major collection before the next one
    copies = 4 * 1.82 if sys.implementation.name == "pypy" else 4
    assert rss - baseline <= copies * len(big) + ALLOWANCE, f"{(rss - baseline) / len(big):.2f} copies"


def test_progress_is_drawn_on_a_terminal_and_cleared_when_done():
    import pty
    import threading
    import time

    master, slave = pty.openpty()
    tool = subprocess.Popen(TOOL + ["-", *MN], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks: list[bytes] = []

    def drain():  # read while the tool runs: Linux may discard what a pty holds once its last writer exits
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the terminal's other end is closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    payloads = samples.mcp_notifications_session()
    deadline = time.monotonic() + 60
    while not chunks and time.monotonic() < deadline:  # a slow live input, fed until a redraw was due
        tool.stdin.write(samples.capture(payloads))  # (a loaded machine, or PyPy, may start the tool late)
        tool.stdin.flush()
        time.sleep(0.4)
    tool.stdin.close()
    assert tool.wait(timeout=60) == 0
    reader.join(timeout=60)
    os.close(master)
    drawn = b"".join(chunks)
    assert re.fullmatch(rb"(\r\d+ frames read)+\r\x1b\[K", drawn), drawn

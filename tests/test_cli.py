"""The command-line tool, run as a user runs it: a subprocess, on good and bad captures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from diverge_codec import samples

TOKEN_VALUES = ("sample-token-1", "sample-token-2")


def run(*args, input=None, env=None):
    return subprocess.run(
        [sys.executable, "-m", "diverge_codec", *args], input=input, capture_output=True,
        env={**os.environ, **(env or {})}, timeout=120,
    )


def test_inspect_with_no_file_shows_both_sample_sessions():
    done = run("inspect", "--sample")
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr
    assert "tools-begin: built-in sample session\n" in out
    assert "mcp-notifications: built-in sample session\n" in out
    assert out.count("frames: 5\n") == 2
    assert "verdict: ok: finished after 2 periods of activity" in out
    assert "method notifications/progress" in out
    assert "rotating: session=<redacted>" in out
    assert not any(value in out for value in TOKEN_VALUES)


def test_inspect_a_capture_file(tmp_path):
    path = tmp_path / "tb.cap"
    path.write_bytes(samples.capture(samples.tools_begin_session()))
    done = run("inspect", str(path), "--channel", "tools-begin")
    assert done.returncode == 0
    lines = done.stdout.decode().splitlines()
    assert lines[2].split()[:5] == ["0", "0", "Begun", "53", "secrets:"]
    assert lines[-1] == "verdict: ok: finished after 2 periods of activity"


def test_inspect_from_stdin_as_json():
    done = run("inspect", "-", "--channel", "mcp-notifications", "--json", input=samples.capture(samples.mcp_notifications_unreachable()))
    frame, summary = (json.loads(line) for line in done.stdout.splitlines())
    assert done.returncode == 0
    assert frame == {"type": "frame", "channel": "mcp-notifications", "index": 0, "tag": 1, "variant": "Error", "size": 69,
                     "code": -32000, "message_chars": 40, "message": None, "data_present": False, "data": None}
    assert summary == {"type": "summary", "channel": "mcp-notifications", "source": "-", "frames": 1, "valid": True, "kind": "error",
                       "index": None, "rule": None, "message": "ok: ended with an error, then the finish", "state": "ended with error"}


def test_a_rule_broken_is_exit_1_naming_rule_and_frame(tmp_path):
    payloads = samples.tools_begin_session()
    path = tmp_path / "bad.cap"
    path.write_bytes(samples.capture([payloads[0], payloads[1], payloads[1]]))
    done = run("inspect", str(path), "--channel", "tools-begin")
    assert done.returncode == 1
    assert done.stdout.decode().splitlines()[-1] == (
        "verdict: tools-begin: frame 2 (Active) breaks the rule: no Active while a period is open"
    )


def test_an_open_capture_and_a_finish_inside_a_period(tmp_path):
    path = tmp_path / "open.cap"
    path.write_bytes(samples.capture(samples.tools_begin_session()[:2]))
    open_run = run("inspect", str(path), "--channel", "tools-begin", "--open")
    assert open_run.returncode == 0 and b"ok so far: still open (active)" in open_run.stdout
    finished = run("inspect", str(path), "--channel", "tools-begin")
    assert finished.returncode == 1 and b"the finish breaks the rule" in finished.stdout


def test_an_empty_notifications_capture_says_no_notification_came(tmp_path):
    path = tmp_path / "empty.cap"
    path.write_bytes(b"")
    done = run("inspect", str(path), "--channel", "mcp-notifications")
    assert done.returncode == 0
    assert done.stdout.decode().splitlines()[-2:] == [
        "frames: 0", "verdict: ok: a finish with nothing: no notification came (the specification reads a bare finish as a request the server could not read; a relay's report says what happened: calls answered, as plain JSON, ...)",
    ]


def test_a_truncated_stream_says_how_many_bytes_were_missing(tmp_path):
    data = samples.capture(samples.mcp_notifications_session())
    path = tmp_path / "cut.cap"
    path.write_bytes(data[:-5])
    done = run("inspect", str(path), "--channel", "mcp-notifications")
    assert done.returncode == 1
    out = done.stdout.decode()
    assert "frames: 4\n" in out
    assert out.splitlines()[-1] == "verdict: invalid stream: stream ended inside a record: 5 bytes missing"


def test_an_undecodable_frame(tmp_path):
    path = tmp_path / "hex.txt"
    path.write_text("# a comment\n00" + b"{}".hex() + "\n\n00" + b"[]".hex() + "\n")
    done = run("inspect", str(path), "--channel", "tools-begin", "--hex")
    assert done.returncode == 1
    assert done.stdout.decode().splitlines()[-1] == (
        "verdict: frame 1 could not be decoded: tools begin registration did not parse: expected a JSON object"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("inspect", "/no/such/file", "--channel", "tools-begin"), "diverge-codec: cannot read /no/such/file: No such file or directory"),
        (("inspect", "-", "--channel", "tools-begin", "--hex"), "diverge-codec: line 1 is not hex"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    done = run(*args, input=b"zz\n")
    assert done.returncode == 2
    assert done.stderr.decode().strip() == message
    assert b"Traceback" not in done.stderr


def test_encode_then_inspect_round_trips(tmp_path):
    lines = [
        {"variant": "begun", "secrets": {"k": "rotating"}},
        {"variant": "active"},
        {"variant": "inactive", "values": {"k": "SECRET-VALUE"}},
    ]
    jsonl = "\n".join(json.dumps(line) for line in lines).encode()
    encoded = run("encode", "--channel", "tools-begin", input=jsonl)
    assert encoded.returncode == 0, encoded.stderr
    assert encoded.stdout == samples.capture([b'\x00{"secrets":{"k":"rotating"}}', b"\x02", b'\x03{"k":"SECRET-VALUE"}'])
    inspected = run("inspect", "-", "--channel", "tools-begin", "--json", input=encoded.stdout)
    *frames, summary = (json.loads(line) for line in inspected.stdout.splitlines())
    assert [row["variant"] for row in frames] == ["Begun", "Active", "Inactive"]
    assert summary["valid"] and b"SECRET-VALUE" not in inspected.stdout
    hexed = run("encode", "--channel", "tools-begin", "--hex", input=jsonl)
    assert hexed.stdout.decode().splitlines()[1] == "02"


def test_encode_notifications_and_errors(tmp_path):
    out = tmp_path / "n.cap"
    jsonl = b'{"variant": "notification", "notification": {"method": "m"}}\n{"variant": "error", "error": {"code": 1, "message": "x"}}\n'
    done = run("encode", "--channel", "mcp-notifications", "-o", str(out), input=jsonl)
    assert done.returncode == 0
    assert out.read_bytes() == samples.capture([b'\x00{"method":"m"}', b'\x01{"code":1,"message":"x"}'])
    bad = run("encode", "--channel", "mcp-notifications", input=b'{"variant": "nope"}\n')
    assert bad.returncode == 2
    assert bad.stderr.decode().strip() == (
        "diverge-codec: line 1: an unknown variant in member 'variant': a mcp-notifications line's is one of notification, error")
    broken = run("encode", "--channel", "tools-begin", input=b"{not json\n")
    assert broken.returncode == 2 and broken.stderr.decode().startswith("diverge-codec: line 1: ")
    invalid = run("encode", "--channel", "tools-begin", input=b'{"variant": "begun", "secrets": {"a": "Fixed"}}\n')
    assert invalid.returncode == 2 and b'must be "fixed" or "rotating"' in invalid.stderr


def test_bench_quick_prints_the_ratio_table():
    pytest.importorskip("orjson", reason="the benchmark's baseline is orjson")
    done = run("bench", "--quick")
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    lines = out.splitlines()
    assert lines[0] == "| implementation | case | against | ns | ratio | target | met |"
    assert "decode progress notification (~180 B)" in out and "| python |" in out
    marked = [line.rsplit("|", 2)[1].strip() for line in lines[2:-1]]
    assert marked.count("met") + marked.count("MISSED") == (8 if "| cython |" in out else 1)
    assert lines[-1].startswith(f"targets: {marked.count('met')} met, {marked.count('MISSED')} missed")


def test_the_console_script_is_the_same_tool():
    script = shutil.which("diverge-codec")
    if script is None:
        pytest.skip("the package is not installed with its scripts here")
    done = subprocess.run([script, "--version"], capture_output=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith(b"diverge-codec ")

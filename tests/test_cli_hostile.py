"""Every subcommand over a table of hostile inputs: the exit status, one line on stderr, never a traceback.

A capture is the least trusted input the tool sees: nothing in one may forge a line,
reach the terminal as a control sequence, leak an Error's message or a secret's value,
or end the tool in a traceback.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from diverge_codec import samples

SECRET = "hunter2-SECRET"
FORGED = "x\nverdict: ok: finished after 9 notifications"
ESCAPES = "\x1b]0;pwned\x07\x1b[31m\x9b2J\u202e\u2066\u200b\x7f\r"


def notification(method: str) -> bytes:
    return b"\x00" + json.dumps({"jsonrpc": "2.0", "method": method}).encode()


def capture(*payloads: bytes) -> bytes:
    return samples.capture(list(payloads))


MCP_ERROR = b"\x01" + json.dumps({"code": -32000, "message": f"token={SECRET}", "data": {"password": SECRET}}).encode()
TB_ERROR = b"\x01" + json.dumps({"message": f"bad {SECRET}", "region": SECRET}).encode()
TB_LEAK = [b'\x00{"secrets":{"k":"rotating"}}', b"\x02", b'\x03{"k":"' + SECRET.encode() + b'"}']
GOOD = samples.mcp_notifications_session()
TB = ("--channel", "tools-begin")
MN = ("--channel", "mcp-notifications")

# (id, argv, stdin, exit status, text that must be on stderr (None: stderr empty))
CASES = [
    # inspect: endless and degenerate input
    ("zero-envelope", ("inspect", "/dev/zero", *MN), None, 1, None),
    ("zero-envelope-limit", ("inspect", "/dev/zero", *TB, "--max-record", "0"), None, 1, None),
    ("zero-hex", ("inspect", "/dev/zero", *MN, "--hex", "--max-record", "1024"), None, 2, "line 1 is longer than --max-record allows"),
    ("empty-records", ("inspect", "-", *TB), b"\0" * 64, 1, None),
    ("length-over-limit", ("inspect", "-", *MN), capture(GOOD[0]) + b"\xff\xff\xff\xff", 1, None),
    ("truncated-prefix", ("inspect", "-", *MN), capture(GOOD[0]) + b"\x00\x00", 1, None),
    ("big-limit-broken-tail", ("inspect", "-", *MN, "--max-record", str(32 << 20)), capture(*GOOD)[:-5], 1, None),
    ("max-limit-broken-tail", ("inspect", "-", *MN, "--max-record", str(2**32 - 1)), capture(*GOOD) + b"\x00\x01", 1, None),
    # inspect: payloads that do not parse
    ("nested-100k", ("inspect", "-", *MN), capture(b"\x00" + b"[" * 100_000), 1, None),
    ("infinity", ("inspect", "-", *MN), capture(b'\x00{"method":"m","params":{"x":1e400}}'), 1, None),
    ("lone-surrogate", ("inspect", "-", *MN), capture(b'\x00{"method":"\\ud800"}'), 1, None),
    ("bad-utf8", ("inspect", "-", *MN), capture(b'\x00{"method":"a\xff"}'), 1, None),
    ("unknown-tag", ("inspect", "-", *TB), capture(b"\x09{}"), 1, None),
    ("method-not-str", ("inspect", "-", *MN), capture(b'\x00{"method": 5}'), 1, None),
    # inspect: output injection
    ("forged-verdict", ("inspect", "-", *MN), capture(notification(FORGED)), 0, None),
    ("forged-verdict-json", ("inspect", "-", *MN, "--json"), capture(notification(FORGED)), 0, None),
    ("escapes-in-method", ("inspect", "-", *MN), capture(notification(ESCAPES)), 0, None),
    ("escapes-in-secret-name", ("inspect", "-", *TB, "--open"),
     capture(b"\x00" + json.dumps({"secrets": {ESCAPES + FORGED: "fixed"}}).encode()), 0, None),
    ("escapes-shown-values", ("inspect", "-", *MN, "--show-values"), capture(b"\x01" + json.dumps({"code": 1, "message": ESCAPES + FORGED}).encode()), 0, None),
    # inspect: values
    ("mcp-error-message", ("inspect", "-", *MN), capture(MCP_ERROR), 0, None),
    ("mcp-error-message-json", ("inspect", "-", *MN, "--json"), capture(MCP_ERROR), 0, None),
    ("mcp-error-message-open", ("inspect", "-", *MN, "--open"), capture(MCP_ERROR), 0, None),
    ("tb-error-message", ("inspect", "-", *TB), capture(TB_ERROR), 0, None),
    ("tb-error-message-json", ("inspect", "-", *TB, "--json"), capture(TB_ERROR), 0, None),
    ("tb-error-message-hex", ("inspect", "-", *TB, "--hex"), TB_ERROR.hex().encode() + b"\n", 0, None),
    ("tb-secret-value", ("inspect", "-", *TB, "--json"), capture(*TB_LEAK), 0, None),
    ("tb-secret-value-text", ("inspect", "-", *TB), capture(*TB_LEAK), 0, None),
    # inspect: refusals of flags and files
    ("max-record-too-big", ("inspect", "-", *MN, "--max-record", str(2**32)), b"", 2, "--max-record takes a whole number"),
    ("max-record-negative", ("inspect", "-", *MN, "--max-record", "-1"), b"", 2, "--max-record takes a whole number"),
    ("max-record-text", ("inspect", "-", *MN, "--max-record", "16M"), b"", 2, "--max-record takes a whole number"),
    ("max-frames-text", ("inspect", "-", *MN, "--max-frames", "x"), b"", 2, "--max-frames takes a whole number"),
    ("unknown-flag", ("inspect", "-", *MN, f"--bogus={SECRET}", SECRET), b"", 2, "unrecognized arguments: --bogus, 1 more"),
    ("bad-channel", ("inspect", "-", "--channel", SECRET), b"", 2, "argument --channel: invalid choice (choose from"),
    ("no-channel", ("inspect", "-"), b"", 2, "--channel is required with a FILE"),
    ("no-such-file", ("inspect", "/no/such/file", *TB), None, 2, "cannot read /no/such/file: No such file or directory"),
    ("a-folder", ("inspect", "/", *TB), None, 2, "cannot read /: Is a directory"),
    ("escapes-in-file-name", ("inspect", f"/no/{ESCAPES}", *TB), None, 2, "cannot read /no/"),
    ("not-hex", ("inspect", "-", *TB, "--hex"), b"00\nzz\n", 2, "line 2 is not hex"),
    ("odd-hex", ("inspect", "-", *TB, "--hex"), b"000\n", 2, "line 1 is not hex"),
    # encode
    ("encode-error-list", ("encode", *MN), b'{"variant": "error", "error": [1, 2]}\n', 2, "line 1: member 'error' must be a JSON object, not an array"),
    ("encode-error-string", ("encode", *MN), b'{"variant": "error", "error": "boom"}\n', 2, "line 1: member 'error' must be a JSON object, not a string"),
    ("encode-nested-100k", ("encode", *TB), b"[" * 100_000 + b"\n", 2, "line 1: nested too deeply"),
    ("encode-nested-in-member", ("encode", *MN), b'{"variant": "notification", "notification": {"method": "m", "params": {"x": '
     + b"[" * 100_000 + b"]" * 100_000 + b"}}}\n", 2, "line 1: "),
    ("encode-misspelled", ("encode", *TB), b'{"variant": "begun", "secret": {"k": "fixed"}}\n', 2, "line 1: a begun line has no member 'secret'"),
    ("encode-misplaced", ("encode", *TB), b'{"variant": "active", "values": {"k": 1}}\n', 2, "line 1: a active line has no member 'values'"),
    ("encode-missing", ("encode", *TB), b'{"variant": "inactive"}\n', 2, "line 1: a inactive line needs member 'values'"),
    ("encode-error-misspelled", ("encode", *MN), b'{"variant": "error", "error": {"code": 1, "mesage": "x"}}\n', 2,
     "line 1: member 'error' of an error line has no member 'mesage'"),
    ("encode-tb-error-no-message", ("encode", *TB), b'{"variant": "error", "error": {"msg": "x"}}\n', 2,
     "line 1: member 'error' needs a string member 'message'"),
    ("encode-code-too-big", ("encode", *MN), b'{"variant": "error", "error": {"code": 4294967296, "message": "x"}}\n', 2,
     "line 1: ErrorData code must fit in 32 signed bits"),
    ("encode-code-float", ("encode", *MN), b'{"variant": "error", "error": {"code": 1.5, "message": "x"}}\n', 2, "line 1: member 'code' must be an integer"),
    ("encode-unknown-variant", ("encode", *MN), b'{"variant": "' + SECRET.encode() + b'"}\n', 2, "line 1: an unknown variant in member 'variant'"),
    ("encode-no-variant", ("encode", *MN), b"{}\n", 2, "line 1: no member 'variant'"),
    ("encode-not-object", ("encode", *MN), b"[]\n", 2, "line 1: expected a JSON object, not an array"),
    ("encode-not-json", ("encode", *MN), b"{" + SECRET.encode() + b"\n", 2, "line 1: not JSON"),
    ("encode-bad-utf8", ("encode", *MN), b'{"variant": "\xff"}\n', 2, "line 1: not UTF-8"),
    ("encode-escapes-in-member", ("encode", *TB), json.dumps({"variant": "active", ESCAPES + FORGED: 1}).encode(), 2, "has no member"),
    ("encode-bad-mode", ("encode", *TB), b'{"variant": "begun", "secrets": {"a": "Fixed"}}\n', 2, 'must be "fixed" or "rotating"'),
    ("encode-zero", ("encode", "/dev/zero", *TB), None, 2, "line 1 is longer than"),
    ("encode-no-folder", ("encode", *TB, "-o", "/no/such/dir/x.cap"), b"", 2, "cannot write /no/such/dir/x.cap"),
    ("encode-no-channel", ("encode",), b"", 2, "the following arguments are required: --channel"),
    # bench and the top level
    ("bench-plot-no-folder", ("bench", "--plot", "/no/such/dir/x.png"), None, 2, "--plot: no folder /no/such/dir"),
    ("bench-unknown-flag", ("bench", "--fast"), None, 2, "unrecognized arguments: --fast"),
    ("no-command", (), None, 2, "the following arguments are required: COMMAND"),
    ("unknown-command", ("decode",), None, 2, "invalid choice"),
]


def run(argv, stdin, env=None):
    return subprocess.run(
        [sys.executable, "-m", "diverge_codec", *argv], input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True, timeout=120, env={**os.environ, **(env or {})},
    )


PURE = {"DIVERGE_CODEC_PURE": "1"}
STDLIB = {"DIVERGE_CODEC_STDLIB_JSON": "1"}
# every case with the default core; the captures' cases also with the pure one, which decodes them its own way
WINDOWS = pytest.mark.skipif(sys.platform == "win32", reason="no /dev/zero; a folder is refused as 'Permission denied'")


def _marks(case):
    return [WINDOWS] if "/dev/zero" in case[1] or case[0] == "a-folder" else []


RUNS = [pytest.param(*case[1:], {}, id=case[0], marks=_marks(case)) for case in CASES] + [
    pytest.param(*case[1:], PURE, id=f"pure-{case[0]}", marks=_marks(case)) for case in CASES if case[1][:1] == ("inspect",) and case[4] is None
] + [  # the payloads that do not parse, also with the stdlib JSON backend (where orjson is absent)
    pytest.param(*case[1:], STDLIB, id=f"stdlib-{case[0]}") for case in CASES
    if case[0] in ("nested-100k", "infinity", "lone-surrogate", "bad-utf8", "unknown-tag", "method-not-str")
]


@pytest.fixture(params=["compiled", "pure"])
def core(request):
    return PURE if request.param == "pure" else {}


@pytest.mark.parametrize(("argv", "stdin", "status", "message", "env"), RUNS)
def test_hostile_input(argv, stdin, status, message, env):
    done = run(argv, stdin, env)
    out, err = done.stdout.decode("ascii", "replace") if argv[:1] != ("encode",) else "", done.stderr.decode()
    assert done.returncode == status, err
    assert "Traceback" not in err
    if message is None:
        assert err == ""
    else:
        assert err.count("\n") == 1 and err.endswith("\n")
        assert err.startswith("diverge-codec") and message in err
    for text in (out, err):
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]", text)
        assert SECRET not in text or "--show-values" in argv
    if argv[:1] == ("inspect",) and "--json" not in argv and status != 2:
        lines = out.splitlines()
        assert [line for line in lines if line.startswith("verdict: ")] == [lines[-1]]
        assert lines[-2].startswith("frames: ")
    if "--json" in argv:
        objects = [json.loads(line) for line in out.splitlines()]
        assert [o["type"] for o in objects] == ["frame"] * (len(objects) - 1) + ["summary"]
        assert out.isascii()


def test_the_broken_tail_with_a_large_limit_lists_the_frames_as_without_it():
    data = capture(*GOOD)[:-5]
    default = run(("inspect", "-", *MN), data)
    large = run(("inspect", "-", *MN, "--max-record", str(32 << 20)), data)
    assert default.returncode == large.returncode == 1
    assert default.stdout == large.stdout
    assert default.stdout.decode().splitlines()[-2:] == ["frames: 4", "verdict: invalid stream: stream ended inside a record: 5 bytes missing"]


def test_frames_before_a_record_over_the_limit_are_listed(core):
    done = run(("inspect", "-", *MN), capture(*GOOD) + b"\xff\xff\xff\xff", core)
    assert done.stdout.decode().splitlines()[-2:] == [
        "frames: 5", "verdict: invalid stream: record of 4294967295 bytes is over the limit of 16777216 bytes",
    ]


def test_a_forged_verdict_stays_inside_its_frame_line():
    done = run(("inspect", "-", *MN), capture(notification(FORGED)))
    lines = done.stdout.decode().splitlines()
    assert lines[2].endswith("method x\\nverdict: ok: finished after 9 notifications")
    assert lines[-1] == "verdict: ok: finished after 1 notifications"


def test_escapes_are_shown_visibly():
    done = run(("inspect", "-", *MN), capture(notification(ESCAPES)))
    assert done.stdout.decode().splitlines()[2].endswith(
        "method \\x1b]0;pwned\\x07\\x1b[31m\\x9b2J\\u202e\\u2066\\u200b\\x7f\\r"
    )


def test_values_are_lengths_unless_show_values():
    hidden = run(("inspect", "-", *MN), capture(MCP_ERROR)).stdout.decode().splitlines()[2]
    assert hidden.endswith("error -32000: <20 chars> data=<redacted>")
    shown = run(("inspect", "-", *MN, "--show-values"), capture(MCP_ERROR)).stdout.decode().splitlines()[2]
    assert shown.endswith(f'error -32000: "token={SECRET}" data={{"password":"{SECRET}"}}')
    frame = json.loads(run(("inspect", "-", *TB, "--json", "--show-values"), capture(TB_ERROR)).stdout.splitlines()[0])
    assert frame["message"] == f"bad {SECRET}" and frame["details"] == {"region": SECRET}


def test_encode_removes_its_output_file_when_a_line_is_refused(tmp_path):
    out = tmp_path / "x.cap"
    done = run(("encode", *TB, "-o", str(out)), b'{"variant": "active"}\n{"variant": "nope"}\n')
    assert done.returncode == 2 and not out.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="no head; a closed pipe is EINVAL there")
@pytest.mark.parametrize("argv", [("inspect", "-", *MN), ("inspect", "-", *MN, "--json"), ("encode", *MN)])
def test_a_closed_pipe_ends_quietly_with_141(argv):
    if argv[0] == "encode":
        data = b'{"variant": "notification", "notification": {"method": "m"}}\n' * 200_000
    else:
        data = capture(*GOOD) * 40_000
    tool = subprocess.Popen([sys.executable, "-m", "diverge_codec", *argv], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.Popen(["head", "-c", "100"], stdin=tool.stdout, stdout=subprocess.PIPE)
    tool.stdout.close()
    try:
        tool.stdin.write(data)
        tool.stdin.close()
    except BrokenPipeError:
        pass
    assert len(head.communicate(timeout=60)[0]) == 100
    assert tool.wait(timeout=60) == 141
    assert tool.stderr.read() == b""


def test_help_is_plain_text_with_an_example_per_subcommand():
    for argv in ((), ("inspect",), ("encode",), ("bench",)):
        done = run((*argv, "--help"), None)
        text = done.stdout.decode()
        assert done.returncode == 0 and f"  diverge-codec {' '.join(argv)}" in text.partition("examples:\n")[2]
        assert "``" not in text and ":func:" not in text and ":class:" not in text
    shown = " ".join(run(("inspect", "--help"), None).stdout.decode().split())
    assert "--show-values also print what frames carry: a notification's params, Error messages and details" in shown and "(credentials)" in shown

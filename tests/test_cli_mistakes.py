"""The common mistakes, answered: JSON Lines given to inspect, a bad path, an empty capture, doctor's advice, bench's targets.

Each answer is pinned word for word, run as a user runs it (a subprocess) on both cores
where a core reads the input, and none may quote a byte of the input.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diverge_codec import _bench, _implementation, samples
from diverge_codec.cli import _records, bench, doctor, main

from conftest import IMPLEMENTATIONS, load

ROOT = Path(__file__).resolve().parent.parent
SECRET = "hunter2-SECRET"
# what a relayed server writes: an answer to initialize, then a notification carrying a value
SERVER_LINES = (
    b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},'
    b'"serverInfo":{"name":"x","version":"1"}}}\n'
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"' + SECRET.encode() + b'"}}\n'
)
HINT = ("diverge-codec: {what} is JSON text or JSON Lines, not {expected}; to inspect a capture of a server's lines, run: "
        "diverge-codec relay -- cat {path} | diverge-codec inspect --channel mcp-notifications -\n")
HEADER = "{channel}: {source}\n    #  tag  variant          size  summary\n"


def run(*args: str, core: str = "c", input: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """The tool on one core: ``py`` forced pure, ``c`` the compiled one (skipped where it is not built)."""
    env = {k: v for k, v in os.environ.items() if k != "DIVERGE_CODEC_PURE"}
    if core == "py":
        env["DIVERGE_CODEC_PURE"] = "1"
    else:
        load("stream", "c")
    return subprocess.run([sys.executable, "-m", "diverge_codec", *args], input=input, capture_output=True,
                          stdin=None if input is not None else subprocess.DEVNULL, env=env, cwd=cwd, timeout=120)


@pytest.fixture(params=IMPLEMENTATIONS)
def core(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# JSON text and JSON Lines given to inspect ---------------------------------------------


@pytest.mark.parametrize(("text", "args", "expected"), [
    (SERVER_LINES, (), "a stream of records"),
    (b"\n  [1, 2]\n", (), "a stream of records"),
    (b'{"k": "' + SECRET.encode() + b'"}', ("--max-record", "0"), "a stream of records"),
    (SERVER_LINES, ("--hex",), "payloads in hex"),
    (b"# payloads\n\n" + SERVER_LINES, ("--hex",), "payloads in hex"),
])
def test_json_lines_given_to_inspect_say_what_to_run_before_any_output(tmp_path, core, text, args, expected):
    path = tmp_path / "server lines.jsonl"
    path.write_bytes(text)
    done = run("inspect", str(path), "--channel", "mcp-notifications", *args, core=core)
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode() == HINT.format(what=path, expected=expected, path=shlex.quote(str(path)))


def test_json_lines_on_standard_input_say_so_after_the_header(core):
    done = run("inspect", "-", "--channel", "tools-begin", core=core, input=SERVER_LINES)
    assert (done.returncode, done.stdout.decode()) == (2, HEADER.format(channel="tools-begin", source="-"))
    assert done.stderr.decode() == HINT.format(what="standard input", expected="a stream of records", path="FILE")


def test_a_json_looking_start_within_the_limit_is_read_as_records(core, tmp_path):
    # 0x7b227d0a is "{"}\n" read as a length: within an explicit 4 GiB limit, a record like any other
    path = tmp_path / "records"
    path.write_bytes(b'{"}\n' + b"x" * 10)
    done = run("inspect", str(path), "--channel", "mcp-notifications", "--max-record", str(2**32 - 1), core=core)
    assert done.returncode == 1 and done.stderr == b""
    assert done.stdout.decode().splitlines()[-1] == "verdict: invalid stream: stream ended inside a record: 2065857792 bytes missing"


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="the relay is POSIX's")
def test_what_the_hint_says_to_run_inspects_the_capture(tmp_path):
    path = tmp_path / "capture.jsonl"
    path.write_bytes(SERVER_LINES)
    hint = run("inspect", str(path), "--channel", "mcp-notifications").stderr.decode()
    command = hint.rstrip("\n").partition("run: ")[2].replace("diverge-codec ", f"{shlex.quote(sys.executable)} -m diverge_codec ")
    done = subprocess.run(command + " 2>/dev/null", shell=True, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[2:] == [
        "    0    0  Notification       85  method notifications/message", "frames: 1",
        "verdict: ok: finished after 1 notifications",
    ]


@pytest.mark.parametrize("head", [b"{", b" \r\n\t[", b'{"jsonrpc":"2.0"}\n'])
def test_looks_like_json_wants_text_that_cannot_be_a_length_within_the_limit(head):
    padded = (head + b" " * 4)[:max(4, len(head))]
    assert _records.looks_like_json(padded, 1 << 24)
    assert not _records.looks_like_json(padded, 2**32 - 1)  # every 4 bytes are a length within it
    assert not _records.looks_like_json(padded[:3], 0)  # not even a prefix yet
    assert not _records.looks_like_json(padded[:4] + b"\x00", 0)  # a zero byte: binary, not text
    assert not _records.looks_like_json(b"\x7f" + padded[1:], 0)


@given(records=st.lists(st.binary(max_size=300), min_size=1, max_size=6), size=st.integers(1, 64))
def test_a_capture_is_never_taken_for_json(stream_core, records, size):
    data = samples.capture(records)
    chunks = [data[i:i + size] for i in range(0, len(data), size)]
    assert [bytes(p) for batch in _records.envelope(chunks, 300) for p in batch] == records


_json_text = st.builds(
    lambda space, opener, rest: space + opener + rest.encode(),
    st.sampled_from([b"", b" ", b"\n", b" \t\r\n"]), st.sampled_from([b"{", b"["]),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E) | st.sampled_from("\n\té漢"), min_size=3, max_size=80),
)


@given(text=_json_text, size=st.integers(1, 9))
def test_json_is_refused_at_its_start_however_the_reads_split_it(stream_core, text, size):
    assert _records.looks_like_json(text, 1024)
    with pytest.raises(_records.NotRecords, match="^JSON text or JSON Lines, not a stream of records$"):
        for _ in _records.envelope([text[i:i + size] for i in range(0, len(text), size)], 1024):
            pass


# a path that cannot be read: one line, before any output ------------------------------


@pytest.mark.parametrize("command", [("inspect", "--channel", "tools-begin"), ("encode", "--channel", "tools-begin")])
@pytest.mark.parametrize(("name", "why"), [("missing", "No such file or directory"), (".", "Is a directory")])
@pytest.mark.skipif(sys.platform == "win32", reason="a folder is refused as 'Permission denied' there")
def test_a_bad_path_fails_before_any_output(tmp_path, command, name, why):
    done = run(command[0], name, *command[1:], cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr.decode()) == (2, b"", f"diverge-codec: cannot read {name}: {why}\n")


# a 0-byte input: the finish with nothing, which the specification gives a meaning -------


EMPTY = {"tools-begin": "a finish with nothing: the server could not read the request",
         "mcp-notifications": "a finish with nothing: no notification came (the specification reads a bare finish as a "
                              "request the server could not read; a relay's report says what happened: calls answered, "
                              "as plain JSON, ...)"}
"""What the verdict says of an empty capture: the specification's meaning; on mcp-notifications, what is known."""


@pytest.mark.parametrize("channel", ["tools-begin", "mcp-notifications"])
def test_an_empty_capture_is_a_finish_with_nothing(tmp_path, core, channel):
    path = tmp_path / "empty.cap"
    path.write_bytes(b"")
    text = run("inspect", str(path), "--channel", channel, core=core)
    assert (text.returncode, text.stderr) == (0, b"")  # valid: a bare finish breaks no rule, it says something
    assert text.stdout.decode() == HEADER.format(channel=channel, source=path) + (
        f"frames: 0\nverdict: ok: {EMPTY[channel]}\n")
    as_json = run("inspect", "-", "--channel", channel, "--json", "--hex", core=core, input=b"# nothing\n\n")
    assert as_json.returncode == 0
    assert json.loads(as_json.stdout) == {
        "type": "summary", "channel": channel, "source": "-", "frames": 0, "valid": True, "kind": "unreadable",
        "index": None, "rule": None, "message": f"ok: {EMPTY[channel]}",
        "state": "unreadable",
    }


# doctor: built from the user's source, never a name on an index -----------------------


@pytest.mark.parametrize(("direct_url", "command"), [
    ('{"url": "file:///home/me/diverge-codec", "dir_info": {}}',
     "then: pip cache remove diverge_codec && pip install --force-reinstall --no-deps /home/me/diverge-codec"),
    ('{"url": "file:///home/me/src/dc", "dir_info": {"editable": true}}',
     "then: pip cache remove diverge_codec && pip install --force-reinstall --no-deps -e /home/me/src/dc"),
    ('{"url": "file:///tmp/my%20dl/diverge_codec-0.1.0.tar.gz", "archive_info": {}}',
     "then: pip cache remove diverge_codec && pip install --force-reinstall --no-deps '/tmp/my dl/diverge_codec-0.1.0.tar.gz'"),
    ('{"url": "file:///tmp/a%1B%5B2Jb", "dir_info": {}}',  # a control character in the path is shown escaped
     "then: pip cache remove diverge_codec && pip install --force-reinstall --no-deps '/tmp/a\\x1b[2Jb'"),
    ('{"url": "file:///tmp/diverge_codec-0.1.0-py3-none-any.whl", "archive_info": {}}', None),
    ('{"url": "https://example.org/diverge_codec-0.1.0.tar.gz", "archive_info": {}}', None),
    ('{"url": "file:///tmp/clone", "vcs_info": {"vcs": "git"}}', None),
    (None, None),
    ("not json", None),
])
def test_doctor_builds_from_the_source_it_was_installed_from(monkeypatch, capsys, direct_url, command):
    if command is None:
        command = ("then (the clone or sdist you installed from): "
                   "pip cache remove diverge_codec && pip install --force-reinstall --no-deps PATH-TO-SOURCE")
    monkeypatch.setattr(doctor, "_direct_url", lambda: direct_url)
    for flag in ("FORCED_PURE", "PYPY", "FREE_THREADED"):
        monkeypatch.setattr(_implementation, flag, False)
    monkeypatch.setattr(_implementation, "IMPLEMENTATION", "python")
    assert main(["doctor", "--require-extension"]) == 1
    advice = capsys.readouterr().out.splitlines()[-1]
    assert advice == f"to compile:    install a C compiler and the Python headers, {command}"
    assert not {"diverge-codec", "diverge_codec"} & set(advice.partition("pip install")[2].split())  # no name to fetch


def test_doctor_reads_pip_s_record_of_this_install():
    assert doctor._direct_url() is None or isinstance(json.loads(doctor._direct_url() or ""), dict)


def test_doctor_help_has_a_description_and_examples(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["doctor", "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    assert text.splitlines()[2:4] == ["Say which core (compiled or pure) and which JSON backend this install uses, and why;",
                                      "where it could compile and did not, how to build it."]
    assert text.partition("examples:\n")[2] == (
        "  diverge-codec doctor\n  diverge-codec doctor --require-extension && python -m pytest -q tests\n")


# bench: one table of targets, each case met or missed ---------------------------------


def test_the_committed_targets_page_is_the_table_rendered():
    if not (ROOT / "docs").is_dir():
        pytest.skip("docs/ is not beside tests/ here (a copy of the tests alone, as .ci/sanitize runs)")
    assert (ROOT / "docs" / "bench_targets.md").read_text(encoding="utf-8") == _bench.render_targets()


def test_the_targets_are_the_readme_s():
    shown = {(t.case, t.implementation): str(t) for t in _bench.TARGETS}
    assert shown == {
        ("decode progress notification (~180 B)", "cython"): "<= 1.25x",
        ("decode progress notification (~180 B)", "python"): "<= 2.30x",
        ("decode logging notification (~2 KB)", "cython"): "<= 1.08x",
        ("encode progress notification", "cython"): "<= 1.45x",
        ("frame_notification 64 KB", "cython"): "<= 1.25x",
        ("check a notification (sequence)", "cython"): "< 1.00x",
        ("check a period: Active and Inactive (sequence)", "cython"): "< 1.00x",
        ("frame_notification 200 B", "cython"): "< 60 ns",
    }
    limit = _bench.target("encode progress notification", "cython")
    assert limit is not None and limit.met(1.45) and not limit.met(1.46)
    strict = _bench.target("frame_notification 200 B", "cython")
    assert strict is not None and strict.met(59.9) and not strict.met(60.0)
    assert _bench.target("encode progress notification", "python") is None


def test_bench_marks_each_case_met_or_missed(monkeypatch, capsys):
    pytest.importorskip("orjson", reason="bench refuses to run without its baseline")
    rows = [
        _bench._row("cython", "encode progress notification", "orjson.dumps", 100.0, 150.0, 1.5),
        _bench._row("cython", "decode progress notification (~180 B)", "orjson.loads", 100.0, 110.0, 1.1),
        _bench._row("python", "encode progress notification", "orjson.dumps", 100.0, 500.0, 5.0),
        _bench._row("cython", "frame_notification 200 B", "(absolute)", None, 39.4, None),
    ]
    monkeypatch.setattr(_bench, "ratio_table", lambda implementations, budget_s: rows)
    assert main(["bench", "--quick"]) == 0
    assert capsys.readouterr().out == (
        "| implementation | case | against | ns | ratio | target | met |\n"
        "|---|---|---|---:|---:|---:|---|\n"
        "| cython | encode progress notification | orjson.dumps | 150 | 1.50x | <= 1.45x | MISSED |\n"
        "| cython | decode progress notification (~180 B) | orjson.loads | 110 | 1.10x | <= 1.25x | met |\n"
        "| python | encode progress notification | orjson.dumps | 500 | 5.00x |  |  |\n"
        "| cython | frame_notification 200 B | (absolute) | 39 |  | < 60 ns | met |\n"
        "targets: 2 met, 1 missed (timings depend on the machine's load: run again before reading much into it)\n"
    )


def test_bench_says_where_its_targets_come_from(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert '"target" is the case\'s target (_bench.TARGETS, rendered as docs/bench_targets.md)' in text
    assert "issue" not in text

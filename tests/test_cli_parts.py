"""The command line's parts, in process: escaping, the envelope and hex readers, progress, the plot."""

from __future__ import annotations

import io
import json
import sys
import types

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import diverge_codec
from diverge_codec import samples
from diverge_codec.cli import _records, _without_values, bench, main
from diverge_codec.cli._common import UsageError
from diverge_codec.cli import inspect as inspect_cli
from diverge_codec.cli._output import JsonLines, Progress, Text, summary
from diverge_codec.cli._safe import escape, json_line
from diverge_codec.errors import RecordTooLargeError, TruncatedStreamError


@pytest.mark.parametrize(("text", "shown"), [
    ("notifications/progress", "notifications/progress"),
    ("é 漢字 emoji \U0001f600", "é 漢字 emoji \U0001f600"),
    ("a\nb\r\tc\\", "a\\nb\\r\\tc\\\\"),
    ("\x1b]0;title\x07\x1b[2J\x9b", "\\x1b]0;title\\x07\\x1b[2J\\x9b"),
    ("\u202aA\u202bB\u202cC\u202dD\u202eE\u2066F\u2067G\u2068H\u2069", "\\u202aA\\u202bB\\u202cC\\u202dD\\u202eE\\u2066F\\u2067G\\u2068H\\u2069"),
    ("zero\u200bwidth\u200d\ufeff\u00ad\u2028\u2029\u00a0", "zero\\u200bwidth\\u200d\\ufeff\\xad\\u2028\\u2029\\xa0"),
    ("\x00\x7f\ud800\U000e0041\U0010ffff", "\\x00\\x7f\\ud800\\U000e0041\\U0010ffff"),
])
def test_escape_shows_every_invisible_character(text, shown):
    assert escape(text) == shown


@given(st.text())
def test_escaped_text_is_printable_on_one_line_and_unambiguous(text):
    shown = escape(text)
    assert shown.isprintable()
    assert shown.encode("ascii", "backslashreplace").decode("unicode_escape") == text


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)))
def test_json_lines_are_ascii_printable_and_read_back(value):
    line = json_line(value)
    assert line.isascii() and line.isprintable()
    assert json.loads(line) == value


def test_argparse_refusals_lose_the_values_given():
    assert _without_values("unrecognized arguments: --x=secret secret2 -y") == "unrecognized arguments: --x, -y, 1 more"
    assert _without_values("argument --channel: invalid choice: 'sec\nret' (choose from 'a', 'b')") == (
        "argument --channel: invalid choice (choose from 'a', 'b')"
    )


def test_summary_clips_what_a_record_can_make_long(tb):
    frame = tb.Begun({f"name{i}": "fixed" for i in range(1000)})
    assert len(summary(frame)) == 200 and summary(frame).endswith("...")


@pytest.mark.parametrize("writer", [Text, JsonLines])
def test_frames_are_written_as_one_block_at_flush(mn, writer):
    out = io.StringIO()
    output = writer(out=out)
    frames = [mn.decode(p) for p in samples.mcp_notifications_session()]
    for index, frame in enumerate(frames * 2):
        output.frame("mcp-notifications", index, frame, 100 + index)
    assert out.getvalue() == "" and len(output.lines) == 2 * len(frames)  # held until the batch ends
    output.flush()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 * len(frames) and output.lines == []
    if writer is Text:  # the cached start and summary give what the first frame of each kind got
        assert lines[0] == f"    0    0  Notification      100  {summary(frames[0])}"
        assert lines[len(frames)] == f"{len(frames):5d}    0  Notification    {100 + len(frames):5d}  {summary(frames[0])}"
    output.frame("mcp-notifications", 9, frames[0], 1)
    output.end("mcp-notifications", "x", 10, {"message": "ok", "valid": True})
    assert out.getvalue().splitlines()[-3 if writer is Text else -2].startswith("    9" if writer is Text else '{"type":"frame"')


# the envelope and hex readers ------------------------------------------------


def _split(data, cuts):
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


@given(records=st.lists(st.binary(max_size=40), max_size=12), bad=st.integers(41, 2**32 - 1), at=st.integers(0, 12),
       cuts=st.lists(st.integers(0, 700), max_size=8))
def test_every_whole_record_before_a_length_over_the_limit_comes_out(stream_core, records, bad, at, cuts):
    at = min(at, len(records))
    data = samples.capture(records[:at]) + bad.to_bytes(4, "big") + b"tail"
    assume(not _records.looks_like_json(data, 40))  # JSON text is refused as such (test_cli_mistakes)
    out = []
    with pytest.raises(RecordTooLargeError):
        for batch in _records.envelope(_split(data, cuts), 40):
            out += [bytes(p) for p in batch]
    assert out == records[:at]


@given(records=st.lists(st.binary(max_size=40), max_size=12), cut_off=st.integers(1, 29), cuts=st.lists(st.integers(0, 700), max_size=8))
def test_a_stream_that_ends_inside_a_record_gives_the_records_before(stream_core, records, cut_off, cuts):
    data = samples.capture(records + [b"x" * 26])[:-cut_off]
    out = []
    with pytest.raises(TruncatedStreamError):
        for batch in _records.envelope(_split(data, cuts), 40):
            out += [bytes(p) for p in batch]
    assert out == records


@given(records=st.lists(st.binary(max_size=40), max_size=12), cuts=st.lists(st.integers(0, 900), max_size=8))
def test_hex_lines_split_anywhere(records, cuts):
    text = "# comment\n\n" + "".join(f"  {r.hex()}  \n" for r in records)
    out = [p for batch in _records.hex_lines(_split(text.encode(), cuts), 40) for p in batch]
    assert out == [r for r in records if r]  # an empty payload is a blank line, skipped


def test_hex_lines_refuse_a_line_past_the_limit_before_holding_it():
    chunks = iter([b"00" * 1000] * 10**6)
    with pytest.raises(UsageError, match="^line 1 is longer than --max-record allows$"):
        for _ in _records.hex_lines(chunks, 10):
            pass
    assert len(list(chunks)) > 10**6 - 10


# progress and bench ----------------------------------------------------------


class Terminal(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_progress_only_on_a_terminal_with_stdout_elsewhere():
    assert Progress.on_terminal(Terminal(False), Terminal(False)) is None
    assert Progress.on_terminal(Terminal(True), Terminal(True)) is None
    assert Progress.on_terminal(Terminal(True), Terminal(False)) is not None


def test_progress_is_cleared_when_done(monkeypatch):
    err = Terminal(True)
    progress = Progress(err)
    progress.clear()
    assert err.getvalue() == ""
    monkeypatch.setattr(Progress, "EVERY_S", 0.0)
    progress.update(10)
    progress.update(20)
    progress.clear()
    assert err.getvalue() == "\r10 frames read\r20 frames read\r\x1b[K"


def test_bench_plot_checks_matplotlib_before_the_run(monkeypatch, tmp_path, capsys):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    never_run = types.ModuleType("diverge_codec._bench")  # the real one needs orjson, absent in some runs
    never_run.ratio_table = lambda *a, **k: pytest.fail("ran before checking")
    monkeypatch.setitem(sys.modules, "diverge_codec._bench", never_run)
    monkeypatch.setattr(diverge_codec, "_bench", never_run, raising=False)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert main(["bench", "--plot", str(tmp_path / "r.png")]) == 2
    assert capsys.readouterr().err == "diverge-codec: --plot needs matplotlib: pip install 'diverge-codec[plot]'\n"


def test_bench_plot_has_a_title_lower_is_better_and_the_targets(tmp_path):
    pytest.importorskip("matplotlib")
    plt = bench._pyplot(str(tmp_path / "r.png"))
    rows = [
        {"implementation": "cython", "case": "decode", "ratio": 1.1, "target": 1.25, "ns": 500.0},
        {"implementation": "python", "case": "decode", "ratio": 1.8, "target": 2.3, "ns": 900.0},
        {"implementation": "cython", "case": "frame_notification 200 B", "ratio": None, "target": 60.0, "ns": 40.0},
    ]
    drawn = {}
    real_close = plt.close
    plt.close = lambda figure: drawn.setdefault("figure", figure)
    try:
        bench.plot(plt, rows, str(tmp_path / "r.png"))
    finally:
        plt.close = real_close
    axes = drawn["figure"].axes[0]
    assert "lower is better" in axes.get_title() and "lower is better" in axes.get_xlabel()
    targets = [line for line in axes.get_lines() if line.get_color() == "red"]
    assert sorted(line.get_xdata()[0] for line in targets) == [1.25, 2.3]
    assert "target < 60 ns" in drawn["figure"].texts[0].get_text()
    assert (tmp_path / "r.png").stat().st_size > 1000
    real_close(drawn["figure"])


# whatever a capture holds, the output is printable lines ending in the verdict -------

_text = st.text(max_size=12)
_frames = st.one_of(
    st.binary(max_size=30),
    st.builds(lambda m: b"\x00" + json.dumps({"jsonrpc": "2.0", "method": m}).encode(), _text),
    st.builds(lambda c, m, d: b"\x01" + json.dumps({"code": c, "message": m, "data": d}).encode(), st.integers(-(2**31), 2**31 - 1), _text, _text),
    st.builds(lambda n, mode: b"\x00" + json.dumps({"secrets": {n: mode}}).encode(), _text, st.sampled_from(["fixed", "rotating"])),
    st.builds(lambda m, k, v: b"\x01" + json.dumps({"message": m, k: v}).encode(), _text, _text, _text),
    st.just(b"\x02"),
    st.builds(lambda n, v: b"\x03" + json.dumps({n: v}).encode(), _text, _text),
)


@given(channel=st.sampled_from(["tools-begin", "mcp-notifications"]), payloads=st.lists(_frames, max_size=8),
       tail=st.binary(max_size=6), cuts=st.lists(st.integers(0, 400), max_size=5), as_json=st.booleans(), show=st.booleans())
def test_nothing_in_a_capture_reaches_the_output_unescaped(channel, payloads, tail, cuts, as_json, show):
    out = io.StringIO()
    output = (JsonLines if as_json else Text)(show, out)
    session = inspect_cli.Session(channel)
    output.begin(channel, "capture\n\x1b[2J")
    data = samples.capture(payloads) + tail
    assume(not _records.looks_like_json(data, 1 << 20))  # JSON text is refused as such (test_cli_mistakes)
    batches = _records.envelope(_split(data, cuts), 1 << 20)
    verdict = inspect_cli.run_session(session, batches, output, inspect_cli._Signals())
    output.end(channel, "capture\n\x1b[2J", session.frames, verdict)
    lines = out.getvalue().split("\n")
    assert lines.pop() == ""
    assert all(line.isprintable() for line in lines)
    if as_json:
        objects = [json.loads(line) for line in lines]
        assert [o["type"] for o in objects] == ["frame"] * session.frames + ["summary"]
        assert all(line.isascii() for line in lines)
    else:
        assert lines[-1].startswith("verdict: ") and lines[-2] == f"frames: {session.frames}"
        assert len(lines) == session.frames + 4

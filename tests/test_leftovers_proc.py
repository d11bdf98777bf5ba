"""``leftovers`` reading a ``/proc`` of the test's own making (``leftovers.PROC``): hostile command names, every
shape of stat line the kernel writes, and entries that are not processes, so the scan's parsing is tested
without starting a process (the quick subset).

A process names itself (``prctl(PR_SET_NAME)``, or its executable's name): up to 15 bytes of anything
but NUL, ``)``, spaces, newlines and bytes that are no UTF-8 included. The kernel writes the name between
parentheses in field 2 of ``/proc/PID/stat``, unescaped, so the fields after it are read from the last ``)``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from diverge_codec.relay import leftovers as _leftovers

ME = os.getpid()
HOSTILE_NAMES = [
    b"sleep", b"", b")", b"a) Z 1 1 1", b"x) R 1 2 3 4 5", b"two words", b"new\nline", b"\n) S 9 9",
    b"\xff\xfe\x80 latin-1 \xe9", b"((((", b"))))))))))))))))", b"tab\there", b"R 1 1 1 1 1 1 1",
]
"""Names a process may give itself (15 bytes at most is the kernel's cut; a fake /proc holds longer ones too)."""


def stat_line(pid: int, name: bytes, state: bytes = b"S", parent: int = 1, group: int | None = None,
              start: int = 1000, fields: int = 52) -> bytes:
    """A ``/proc/PID/stat`` line as the kernel writes it: ``fields`` fields (44 in Linux 2.6, 52 since 3.5)."""
    group = pid if group is None else group
    rest = [b"0"] * (fields - 22)  # vsize on: numbers the scan never reads
    head = [state, b"%d" % parent, b"%d" % group, b"%d" % group, b"34817", b"-1", b"4194560", b"120", b"0", b"0", b"0",
            b"3", b"1", b"0", b"0", b"20", b"0", b"1", b"0", b"%d" % start]
    return b"%d (%s) " % (pid, name) + b" ".join(head + rest) + b"\n"


class FakeProc:
    """A directory laid out as ``/proc``: a stat line, an environment and a leading thread's children a process."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def add(self, pid: int, name: bytes = b"sleep", *, state: bytes = b"S", parent: int = 1, group: int | None = None,
            start: int = 1000, environ: dict[str, str] | None = None, children: list[int] = (), stat: bytes | None = None,
            fields: int = 52) -> None:
        folder = self.root / str(pid)
        (folder / "task" / str(pid)).mkdir(parents=True, exist_ok=True)
        (folder / "stat").write_bytes(stat_line(pid, name, state, parent, group, start, fields) if stat is None else stat)
        (folder / "environ").write_bytes(b"".join(b"%s=%s\0" % (k.encode(), v.encode()) for k, v in (environ or {}).items()))
        (folder / "task" / str(pid) / "children").write_bytes(b"".join(b"%d " % child for child in children))


@pytest.fixture
def proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeProc:
    """This process (started at 1000 ticks) below init, as a subreaper: the scan walks its own tree."""
    monkeypatch.setattr(_leftovers, "PROC", str(tmp_path))
    monkeypatch.setattr(_leftovers, "_me", (0, 0))  # read again, from this /proc
    monkeypatch.setattr(_leftovers, "_subreaper", True)
    monkeypatch.setattr(_leftovers, "_servers", {})
    fake = FakeProc(tmp_path)
    fake.add(1, b"init", parent=0, start=1)
    return fake


@pytest.mark.parametrize("name", HOSTILE_NAMES)
@pytest.mark.parametrize("state", [b"R", b"S", b"D", b"T", b"t", b"P", b"I", b"K", b"W"])
def test_a_live_process_is_read_whatever_its_name(proc: FakeProc, name: bytes, state: bytes) -> None:
    proc.add(4242, name, state=state, parent=ME, group=777, start=123456)
    assert _leftovers._head(4242) == (state, ME, 777, 123456)
    assert _leftovers._stat(4242) == (ME, 777)


@pytest.mark.parametrize("name", HOSTILE_NAMES)
@pytest.mark.parametrize("state", [b"Z", b"X", b"x"])
def test_a_zombie_or_a_dead_process_is_no_live_one_whatever_its_name(proc: FakeProc, name: bytes, state: bytes) -> None:
    proc.add(4242, name, state=state, parent=ME, group=777)
    assert _leftovers._stat(4242) is None and not _leftovers._running(4242)


@pytest.mark.parametrize("fields", [44, 47, 49, 52, 60])
def test_every_length_of_stat_line_the_kernel_has_written_is_read(proc: FakeProc, fields: int) -> None:
    proc.add(4242, b"a) b", parent=ME, group=99, start=5, fields=fields)
    assert _leftovers._head(4242) == (b"S", ME, 99, 5)


@pytest.mark.parametrize("stat", [
    b"", b"4242", b"4242 (sleep)", b"4242 (sleep) S 1 2", b"4242 (sleep) S one two three" + b" 0" * 30,
    stat_line(4242, b"sleep")[:60], b"\xff" * 80, b"4242 (sleep S 1 2 3",
])
def test_a_stat_line_the_kernel_never_writes_is_a_process_gone_not_an_error(proc: FakeProc, stat: bytes) -> None:
    proc.add(4242, stat=stat)
    assert _leftovers._head(4242) is None and _leftovers._stat(4242) is None


def test_only_digits_name_a_process(proc: FakeProc) -> None:
    proc.add(ME, b"me", start=1000)
    proc.add(4242, b"x", parent=ME)
    for other in ("self", "thread-self", "sys", "12a", "\u0661\u0662"):  # other scripts' digits: no such stat file
        (proc.root / other).mkdir()
    assert sorted(pid for pid, _, _ in _leftovers._processes()) == [1, 4242, ME]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_what_a_server_left_is_found_by_its_group_and_its_mark_whatever_the_names(proc: FakeProc, name: bytes) -> None:
    """The server (its group 500, its mark ``token``) left one in its group and one that left the group, marked; a
    stranger below it carries another's mark, and one older than this process carries the right one."""
    mark = {_leftovers.MARK: "token"}
    proc.add(ME, name, start=1000, children=[500, 9001])
    proc.add(500, name, parent=ME, group=500, start=2000, children=[501, 502, 503], environ=mark)  # the server
    proc.add(501, name, parent=500, group=500, start=2001)  # in its group, environment cleared
    proc.add(502, name, parent=500, group=502, start=2002, environ={"HOME": "/", **mark})  # left the group, marked
    proc.add(503, name, parent=500, group=503, start=2003, environ={_leftovers.MARK: "other"})  # another's mark
    proc.add(9001, name, parent=ME, group=9001, start=999, environ=mark)  # older than this process: nobody's
    found = _leftovers._find([(500, "token")])
    assert sorted(found[0]) == [501, 502]
    with pytest.MonkeyPatch.context() as patch:  # without the children files: every process read, the same found
        patch.setattr(_leftovers, "_roots", lambda reapers: None)
        assert sorted(_leftovers._find([(500, "token")])[0]) == [501, 502, 9001]  # of unknown age: read


def test_an_environment_entry_is_a_mark_only_whole(proc: FakeProc) -> None:
    proc.add(ME, b"me", start=1000, children=[600, 601, 602])
    proc.add(600, b"a", parent=ME, group=600, start=2000, environ={"X" + _leftovers.MARK: "token"})
    proc.add(601, b"b", parent=ME, group=601, start=2000, environ={_leftovers.MARK: "token2"})
    (proc.root / "602").mkdir()
    proc.add(602, b"c", parent=ME, group=602, start=2000)
    (proc.root / "602" / "environ").write_bytes(b"\xff\0" + f"{_leftovers.MARK}=token".encode() + b"\0\xfe")
    assert _leftovers._find([(2**22 + 1, "token")]) == [[602]]


def test_children_files_that_are_not_pids_are_as_if_unreadable(proc: FakeProc) -> None:
    proc.add(ME, b"me", start=1000)
    (proc.root / str(ME) / "task" / str(ME) / "children").write_bytes(b"12 ab 14")
    assert _leftovers._thread_children(ME, ME) is None and _leftovers._children(ME) is None
    (proc.root / str(ME) / "task" / str(ME) / "children").write_bytes(b"12 13\n")
    assert _leftovers._children(ME) == [12, 13]

"""``leftovers`` reading a ``/proc`` of the test's own making (``leftovers.PROC``): hostile command names, every
shape of stat line the kernel writes, and entries that are not processes, so the scan's parsing is tested
without starting a process (the quick subset).

A process names itself (``prctl(PR_SET_NAME)``, or its executable's name): up to 15 bytes of anything
but NUL, ``)``, spaces, newlines and bytes that are no UTF-8 included. The kernel writes the name between
parentheses in field 2 of ``/proc/PID/stat``, unescaped, so the fields after it are read from the last ``)``.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

import pytest

from diverge_codec.relay import leftovers as _leftovers

ME = os.getpid()
P = 1 << 22
"""Above every pid (``pid_max`` is at most 2**22): a fake process is never this one."""
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
    proc.add(P + 4242, name, state=state, parent=ME, group=777, start=123456)
    assert _leftovers._head(P + 4242) == (state, ME, 777, 123456)
    assert _leftovers._stat(P + 4242) == (ME, 777)


@pytest.mark.parametrize("name", HOSTILE_NAMES)
@pytest.mark.parametrize("state", [b"Z", b"X", b"x"])
def test_a_zombie_or_a_dead_process_is_no_live_one_whatever_its_name(proc: FakeProc, name: bytes, state: bytes) -> None:
    proc.add(P + 4242, name, state=state, parent=ME, group=777)
    assert _leftovers._stat(P + 4242) is None and not _leftovers._running(P + 4242)


@pytest.mark.parametrize("fields", [44, 47, 49, 52, 60])
def test_every_length_of_stat_line_the_kernel_has_written_is_read(proc: FakeProc, fields: int) -> None:
    proc.add(P + 4242, b"a) b", parent=ME, group=99, start=5, fields=fields)
    assert _leftovers._head(P + 4242) == (b"S", ME, 99, 5)


@pytest.mark.parametrize("stat", [
    b"", b"4242", b"4242 (sleep)", b"4242 (sleep) S 1 2", b"4242 (sleep) S one two three" + b" 0" * 30,
    stat_line(P + 4242, b"sleep")[:60], b"\xff" * 80, b"4242 (sleep S 1 2 3",
])
def test_a_stat_line_the_kernel_never_writes_is_a_process_gone_not_an_error(proc: FakeProc, stat: bytes) -> None:
    proc.add(P + 4242, stat=stat)
    assert _leftovers._head(P + 4242) is None and _leftovers._stat(P + 4242) is None


def test_only_digits_name_a_process(proc: FakeProc) -> None:
    proc.add(ME, b"me", start=1000)
    proc.add(P + 4242, b"x", parent=ME)
    for other in ("self", "thread-self", "sys", "12a", "\u0661\u0662"):  # other scripts' digits: no such stat file
        (proc.root / other).mkdir()
    assert sorted(pid for pid, _, _ in _leftovers._processes()) == sorted([1, P + 4242, ME])


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_what_a_server_left_is_found_by_its_group_and_its_mark_whatever_the_names(proc: FakeProc, name: bytes) -> None:
    """The server (its own group, its mark ``token``) left one in its group and one that left the group, marked; a
    stranger below it carries another's mark, and one older than this process carries the right one."""
    mark = {_leftovers.MARK: "token"}
    proc.add(ME, name, start=1000, children=[P + 500, P + 9001])
    proc.add(P + 500, name, parent=ME, group=P + 500, start=2000, children=[P + 501, P + 502, P + 503], environ=mark)  # the server
    proc.add(P + 501, name, parent=P + 500, group=P + 500, start=2001)  # in its group, environment cleared
    proc.add(P + 502, name, parent=P + 500, group=P + 502, start=2002, environ={"HOME": "/", **mark})  # left the group, marked
    proc.add(P + 503, name, parent=P + 500, group=P + 503, start=2003, environ={_leftovers.MARK: "other"})  # another's mark
    proc.add(P + 9001, name, parent=ME, group=P + 9001, start=999, environ=mark)  # older than this process: nobody's
    found = _leftovers._find([(P + 500, "token")])
    assert sorted(found[0]) == [P + 501, P + 502]
    with pytest.MonkeyPatch.context() as patch:  # without the children files: every process read, the same found
        patch.setattr(_leftovers, "_roots", lambda reapers: None)
        assert sorted(_leftovers._find([(P + 500, "token")])[0]) == [P + 501, P + 502, P + 9001]  # of unknown age: read


def test_an_environment_entry_is_a_mark_only_whole(proc: FakeProc) -> None:
    proc.add(ME, b"me", start=1000, children=[P + 600, P + 601, P + 602])
    proc.add(P + 600, b"a", parent=ME, group=P + 600, start=2000, environ={"X" + _leftovers.MARK: "token"})
    proc.add(P + 601, b"b", parent=ME, group=P + 601, start=2000, environ={_leftovers.MARK: "token2"})
    proc.add(P + 602, b"c", parent=ME, group=P + 602, start=2000)
    (proc.root / str(P + 602) / "environ").write_bytes(b"\xff\0" + f"{_leftovers.MARK}=token".encode() + b"\0\xfe")
    assert _leftovers._find([(P + 1, "token")]) == [[P + 602]]


def test_children_files_that_are_not_pids_are_as_if_unreadable(proc: FakeProc) -> None:
    proc.add(ME, b"me", start=1000)
    (proc.root / str(ME) / "task" / str(ME) / "children").write_bytes(b"12 ab 14")
    assert _leftovers._thread_children(ME, ME) is None and _leftovers._children(ME) is None
    (proc.root / str(ME) / "task" / str(ME) / "children").write_bytes(b"12 13\n")
    assert _leftovers._children(ME) == [12, 13]


def test_a_server_started_from_another_thread_is_walked_from_its_group(proc: FakeProc) -> None:
    """A relay whose loop runs in a thread of its own: the server is that thread's child, which the leading
    thread's ``children`` file does not list; the group's leader is walked all the same."""
    mark = {_leftovers.MARK: "token"}
    proc.add(ME, b"me", start=1000)
    (proc.root / str(ME) / "task" / "77").mkdir()
    (proc.root / str(ME) / "task" / "77" / "children").write_bytes(b"%d" % (P + 500))
    proc.add(P + 500, b"server", parent=ME, group=P + 500, start=2000, children=[P + 501], environ=mark)
    proc.add(P + 501, b"child", parent=P + 500, group=P + 500, start=2001)  # in the group, its environment cleared
    assert _leftovers._find([(P + 500, "token")]) == [[P + 501]]


@pytest.mark.parametrize("subreaper", [False, True])
def test_beyond_a_pid_namespace_its_init_is_where_orphans_go_and_hidden_it_makes_every_process_read(
        proc: FakeProc, monkeypatch: pytest.MonkeyPatch, subreaper: bool) -> None:
    """This process's parent is outside its pid namespace (shown as 0): the kernel hands orphans to the
    namespace's init, pid 1; with ``/proc/1`` hidden, where they are cannot be read, so every process is."""
    monkeypatch.setattr(_leftovers, "_subreaper", subreaper)
    proc.add(ME, b"me", parent=0, start=1000)
    assert _leftovers._reapers() == ([(ME, True)] if subreaper else [(ME, True), (1, True)])
    proc.add(1, b"init", parent=0, state=b"Z")
    assert _leftovers._reapers() == ([(ME, True)] if subreaper else [(ME, True), (1, False)])
    for entry in (proc.root / "1").rglob("*"):
        if entry.is_file():
            entry.unlink()
    assert _leftovers._reapers() == ([(ME, True)] if subreaper else None)


def test_reading_proc_leaves_no_descriptor_open(proc: FakeProc) -> None:
    proc.add(P + 4242, b"x", parent=ME)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        assert _leftovers._head(P + 4242) is not None and _leftovers._head(P + 4243) is None
    assert len(os.listdir("/proc/self/fd")) == before


def _kernel_at_least(major: int, minor: int) -> bool:
    import platform

    found = re.match(r"(\d+)\.(\d+)", platform.release())
    return sys.platform.startswith("linux") and found is not None and (int(found[1]), int(found[2])) >= (major, minor)


def test_a_group_is_held_by_a_pidfd_exactly_where_the_kernel_signals_groups_through_one(monkeypatch) -> None:
    """Linux 6.9 added ``PIDFD_SIGNAL_PROCESS_GROUP``; the question is asked with signal 0, which sends nothing."""
    asked: list[tuple[int, int]] = []
    send = getattr(signal, "pidfd_send_signal", None)
    if send is not None:
        monkeypatch.setattr(signal, "pidfd_send_signal", lambda fd, signum, info=None, flags=0:
                            asked.append((signum, flags)) or send(fd, signum, info, flags))
    monkeypatch.setattr(_leftovers, "_group_pidfds_here", None)
    assert _leftovers._group_pidfds() is _kernel_at_least(6, 9)
    assert asked == ([(0, _leftovers.PIDFD_SIGNAL_PROCESS_GROUP)] if send is not None and hasattr(os, "pidfd_open") else [])


def test_a_group_whose_leader_is_no_child_of_this_process_is_let_go_and_never_signalled(monkeypatch) -> None:
    """No process has the pid (or, where it had one, it was reaped): held, yet with no pidfd, it is signalled no more."""
    if not _leftovers._group_pidfds():
        pytest.skip("this kernel signals no group through a pidfd (Linux 6.9+): groups go by number")
    monkeypatch.setattr(os, "killpg", lambda *args: pytest.fail("signalled by number"))
    for leader in (P + 77, 1):  # no such process; init, which is no child of this one
        group = _leftovers.Group(leader)
        assert group.held and not group.alive() and not group.signal(0) and repr(group) == f"<Group {leader} let go>"
        group.close()
    assert _leftovers.Group(P + 77, by_number=True).alive()  # by number: assumed alive, as before
    if os.getpgrp() != os.getpid():  # this process leads no group: a pidfd of it names an empty one
        empty = _leftovers.Group(P + 77)
        empty._pidfd = os.pidfd_open(os.getpid())
        assert not empty.alive() and not empty.signal(0)  # signal 0: nothing is sent
        empty.close()


def test_a_parent_chain_that_loops_ends_the_walk_up(proc: FakeProc, monkeypatch: pytest.MonkeyPatch) -> None:
    """A /proc that says A's parent is B and B's is A (no kernel writes it; a hostile mount may): the walk ends."""
    import threading

    monkeypatch.setattr(_leftovers, "_subreaper", False)
    proc.add(ME, b"me", parent=P + 50, start=1000)
    proc.add(P + 50, b"loop", parent=ME, start=10)
    found: list[object] = []
    walker = threading.Thread(target=lambda: found.append(_leftovers._reapers()), daemon=True)
    walker.start()
    walker.join(10)
    assert found == [[(ME, True), (P + 50, True), (1, True)]]


def test_a_server_started_twice_is_running_until_stopped_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_leftovers, "_servers", {})
    _leftovers.started(P + 9)
    _leftovers.stopped(P + 9)
    assert _leftovers._servers == {}  # stopped: what it left is looked for from now on
    _leftovers.started(P + 9)
    _leftovers.started(P + 9)  # two relays of one server
    _leftovers.stopped(P + 9)
    assert _leftovers._servers == {P + 9: 1}
    _leftovers.stopped(P + 9)
    _leftovers.stopped(P + 9)  # once too often: nothing to forget
    assert _leftovers._servers == {}


def test_init_among_the_ancestors_is_a_reaper_once(proc: FakeProc, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_leftovers, "_subreaper", False)
    proc.add(ME, b"me", parent=P + 50, start=1000)
    proc.add(P + 50, b"shell", parent=1, start=10)
    assert _leftovers._reapers() == [(ME, True), (P + 50, True), (1, True)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux's")
def test_become_subreaper_makes_this_process_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked back of the kernel (``PR_GET_CHILD_SUBREAPER``), then undone: the test's process is left as it was."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    flag = ctypes.c_int(-1)
    assert libc.prctl(37, ctypes.byref(flag), 0, 0, 0) == 0  # PR_GET_CHILD_SUBREAPER
    was = flag.value
    monkeypatch.setattr(_leftovers, "_subreaper", False)
    try:
        assert _leftovers.become_subreaper() is True and _leftovers._subreaper is True
        assert libc.prctl(37, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value == 1
    finally:
        libc.prctl(_leftovers.PR_SET_CHILD_SUBREAPER, was, 0, 0, 0)


def test_reap_waits_for_a_live_process_no_longer_than_its_bound_and_never_blocks_the_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    monkeypatch.setattr(_leftovers, "REAP_WITHIN", 0.1)

    async def scenario() -> int:
        ticks = [0]

        async def ticker() -> None:
            while True:
                ticks[0] += 1
                await asyncio.sleep(0.005)
        beside = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        before = ticks[0]
        await asyncio.wait_for(_leftovers.reap([os.getppid()]), 5)  # alive, and not this process's child
        beside.cancel()
        return ticks[0] - before
    assert asyncio.run(scenario()) > 3  # the loop ran beside it


def test_end_children_kills_the_live_children_it_is_not_told_to_spare(proc: FakeProc, monkeypatch: pytest.MonkeyPatch) -> None:
    killed: list[int] = []
    monkeypatch.setattr(_leftovers, "_kill", lambda pid, kill, *signum: killed.append(pid) or True)
    proc.add(ME, b"me", start=1000, children=[P + 1, P + 2, P + 3])
    proc.add(P + 1, b"adopted", parent=ME)
    proc.add(P + 2, b"zombie", parent=ME, state=b"Z")  # its exit is collected, not killed
    proc.add(P + 3, b"a server", parent=ME)
    assert _leftovers.end_children(frozenset({P + 3})) == [P + 1] and killed == [P + 1]

"""``leftovers._children``: this process's children from its threads' ``children`` files, as a scan of ``/proc`` finds them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from diverge_codec.relay import leftovers as _leftovers

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="no /proc: end_children scans nothing")


def _scanned() -> list[int]:
    me = os.getpid()
    return sorted(pid for pid, parent, _ in _leftovers._processes() if parent == me)


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])


def _wait_zombie(pid: int) -> None:
    deadline = time.monotonic() + 10
    while _leftovers._running(pid):
        assert time.monotonic() < deadline, "the child did not exit"
        time.sleep(0.01)


def test_children_are_the_children_a_scan_of_proc_finds_from_every_thread() -> None:
    children = _leftovers._children()
    if children is None:
        pytest.skip("this kernel has no /proc/PID/task/TID/children")
    started: list[subprocess.Popen[bytes]] = [_sleeper()]
    thread = threading.Thread(target=lambda: started.append(_sleeper()))  # a child of another thread
    thread.start()
    thread.join()
    try:
        found = _leftovers._children()
        assert found is not None and {process.pid for process in started} <= set(found)
        assert found == _scanned()
    finally:
        for process in started:
            process.kill()
            process.wait()


def test_a_dead_unreaped_child_is_not_a_leftover() -> None:
    if _leftovers._children() is None:
        pytest.skip("this kernel has no /proc/PID/task/TID/children")
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        _wait_zombie(process.pid)
        assert process.pid in (_leftovers._children() or ())  # still this process's child, until reaped
        assert process.pid not in _scanned() and process.pid not in _leftovers.end_children()
        assert all(found[0] != process.pid for found in _leftovers._descendants() or ())
    finally:
        process.wait()


def test_end_children_kills_what_it_finds_and_spares_what_it_is_told_to() -> None:
    kept, ended = _sleeper(), _sleeper()
    try:
        found = _leftovers.end_children(exclude=frozenset({kept.pid}))
        assert ended.pid in found and kept.pid not in found
        assert ended.wait(timeout=10) == -9
        assert kept.poll() is None
    finally:
        kept.kill()
        kept.wait()


def _scanned_descendants() -> list[tuple[int, int, int]]:
    everyone = _leftovers._processes()
    tree, grown = {os.getpid()}, True
    while grown:
        grown = False
        for pid, parent, _ in everyone:
            if parent in tree and pid not in tree:
                tree.add(pid)
                grown = True
    return sorted(process for process in everyone if process[0] in tree - {os.getpid()})


def test_descendants_are_the_tree_a_scan_of_proc_finds_grandchildren_and_other_groups_included() -> None:
    if _leftovers._children() is None:
        pytest.skip("this kernel has no /proc/PID/task/TID/children")
    # a child that starts a grandchild in a session of its own, and waits
    tree = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'], "
        "start_new_session=True); print(flush=True); time.sleep(30)")], stdout=subprocess.PIPE)
    try:
        assert tree.stdout is not None and tree.stdout.readline() == b"\n"
        found = _leftovers._descendants()
        assert found is not None and sorted(found) == _scanned_descendants()
        child = next(process for process in found if process[0] == tree.pid)
        grandchild = next(process for process in found if process[1] == tree.pid)
        assert grandchild[2] != child[2]  # its own group: found by the tree, not by the group
    finally:
        for pid, _, _ in _leftovers._descendants() or ():
            _leftovers._kill(pid, os.kill)
        tree.wait()


def test_end_leftovers_reads_the_tree_only_as_a_subreaper(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    monkeypatch.setattr(_leftovers, "_processes", lambda: read.append("every process") or [])
    monkeypatch.setattr(_leftovers, "_descendants", lambda: read.append("the tree") or [])
    monkeypatch.setattr(_leftovers, "_kill", lambda pid, kill: None)
    for subreaper in (False, True):
        monkeypatch.setattr(_leftovers, "_subreaper", subreaper)
        _leftovers.end_leftovers(2**22 + 1, "token")
    assert read == ["every process", "the tree"]

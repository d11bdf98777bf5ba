"""``leftovers``: children from the threads' ``children`` files as a scan of ``/proc`` finds them, and what a
server left found from the children of this process and its ancestors as from every process, in one scan a turn."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import signal
import threading
import time

import pytest

from diverge_codec.relay import leftovers as _leftovers

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="no /proc: end_children scans nothing")
needs_children = pytest.mark.skipif(_leftovers._children() is None, reason="this kernel has no /proc/PID/task/TID/children")


def _scanned() -> list[int]:
    me = os.getpid()
    return sorted(pid for pid, parent, _ in _leftovers._processes() if parent == me)


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])


def _tree() -> list[tuple[int, int, int]]:
    """(pid, parent pid, process group) of every live process below this one, as a subreaper walks it."""
    return _leftovers._walk(((child, True) for child in _leftovers._children() or ()), (), lambda *_: True)


def _wait_zombie(pid: int) -> None:
    deadline = time.monotonic() + 10
    while _leftovers._running(pid):
        assert time.monotonic() < deadline, "the child did not exit"
        time.sleep(0.01)


@needs_children
def test_children_are_the_children_a_scan_of_proc_finds_from_every_thread() -> None:
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


@needs_children
def test_a_dead_unreaped_child_is_not_a_leftover() -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        _wait_zombie(process.pid)
        assert process.pid in (_leftovers._children() or ())  # still this process's child, until reaped
        assert process.pid not in _scanned() and process.pid not in _leftovers.end_children()
        assert all(found[0] != process.pid for found in _tree())
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


@needs_children
def test_descendants_are_the_tree_a_scan_of_proc_finds_grandchildren_and_other_groups_included() -> None:
    # a child that starts a grandchild in a session of its own, and waits
    tree = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'], "
        "start_new_session=True); print(flush=True); time.sleep(30)")], stdout=subprocess.PIPE)
    try:
        assert tree.stdout is not None and tree.stdout.readline() == b"\n"
        found = _tree()
        assert sorted(found) == _scanned_descendants()
        child = next(process for process in found if process[0] == tree.pid)
        grandchild = next(process for process in found if process[1] == tree.pid)
        assert grandchild[2] != child[2]  # its own group: found by the tree, not by the group
    finally:
        for pid, _, _ in _tree():
            _leftovers._kill(pid, os.kill)
        tree.wait()
        tree.stdout.close()


def test_a_subreaper_looks_below_itself_and_any_other_process_below_its_ancestors_and_init_too(
        monkeypatch: pytest.MonkeyPatch) -> None:
    me = os.getpid()
    monkeypatch.setattr(_leftovers, "_subreaper", True)
    assert _leftovers._reapers() == [(me, True)]
    monkeypatch.setattr(_leftovers, "_subreaper", False)
    reapers = _leftovers._reapers()
    assert reapers[0] == (me, True) and reapers[-1] == (1, True) and all(leading for _, leading in reapers)
    for (child, _), (parent, _) in zip(reapers[:-2], reapers[1:-1]):  # init may be beyond a pid namespace
        assert _leftovers._stat(child) is not None and _leftovers._stat(child)[0] == parent  # type: ignore[index]


def test_orphans_are_looked_for_where_the_kernel_hands_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process's first live thread, its leading one while it lives; every thread's children beyond it."""
    read: list[str] = []
    thread_children, children = _leftovers._thread_children, _leftovers._children
    monkeypatch.setattr(_leftovers, "_thread_children", lambda pid, tid: read.append("leading") or thread_children(pid, tid))
    monkeypatch.setattr(_leftovers, "_children", lambda pid="self": read.append("every thread") or children(pid))
    assert _leftovers._roots([(os.getpid(), True)]) is not None and read == ["leading"]
    read.clear()
    assert _leftovers._roots([(os.getpid(), False)]) is not None and read[0] == "every thread"


def test_end_leftovers_reads_every_process_only_without_children_files_or_with_a_reaper_hidden(
        monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    monkeypatch.setattr(_leftovers, "_processes", lambda: read.append("every process") or [])
    monkeypatch.setattr(_leftovers, "_kill", lambda pid, kill, *signum: None)
    for subreaper in (True, False):
        monkeypatch.setattr(_leftovers, "_subreaper", subreaper)
        _leftovers.end_leftovers(2**22 + 1, "token")
    assert read == []
    head = _leftovers._head
    with monkeypatch.context() as patch:  # init's /proc entry hidden (hidepid): where orphans go cannot be read
        patch.setattr(_leftovers, "_head", lambda pid: None if pid == 1 else head(pid))
        _leftovers.end_leftovers(2**22 + 1, "token")
        assert read == ["every process"]
    monkeypatch.setattr(_leftovers, "_thread_children", lambda pid, tid: None)
    _leftovers.end_leftovers(2**22 + 1, "token")
    assert read == ["every process"] * 2


# The "server": in its own session, marked, it starts what a server may leave, prints the pids and exits,
# so that each is handed to init (or the nearest subreaper above this process) or stays below its parent.
SERVER = """
import os, subprocess, sys
sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
unmarked = {name: value for name, value in os.environ.items() if name != "DIVERGE_CODEC_RELAY"}
below = "import subprocess, sys, time; subprocess.Popen(sys.argv[1:]); time.sleep(60)"
started = [subprocess.Popen(sleep), subprocess.Popen(sleep, start_new_session=True), subprocess.Popen(sleep, env=unmarked),
           subprocess.Popen([sys.executable, "-c", below, *sleep], start_new_session=True),
           subprocess.Popen(sleep, start_new_session=True, env=unmarked)]
print(*(process.pid for process in started), flush=True)
"""


def _execed(pid: int) -> bool:
    """Whether ``pid`` runs the sleeper: before, its environment may read empty for an instant (``execve``)."""
    return (_leftovers._read(f"/proc/{pid}/cmdline") or b"").endswith(b"time.sleep(60)\0")


@needs_children
def test_what_a_server_left_is_found_as_a_scan_of_every_process_finds_it_and_ended() -> None:
    token, other = os.urandom(8).hex(), os.urandom(8).hex()
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True,
                                env={**os.environ, _leftovers.MARK: other})  # another server's, running
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, start_new_session=True,
                              env={**os.environ, _leftovers.MARK: token})
    assert server.stdout is not None
    in_group, left_group, unmarked, daemon, clean = map(int, server.stdout.readline().split())
    server.wait()  # the server is gone; what it started lives on, handed to init
    pids = {in_group, left_group, unmarked, daemon, clean}
    try:
        deadline = time.monotonic() + 10
        while not (below := _leftovers._children(daemon)) or not _execed(below[0]):  # the daemon's own child
            assert time.monotonic() < deadline, "the daemon started nothing"
            time.sleep(0.01)
        pids.update(below)
        roots = sorted(_leftovers._find([(server.pid, token), (2**22 + 1, other)])[0])
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_leftovers, "_roots", lambda reapers: None)  # every process read
            everyone = sorted(_leftovers._find([(server.pid, token), (2**22 + 1, other)])[0])
        # The cleaned one that left the group is beyond a process that is no subreaper (docs/relay.md).
        assert roots == everyone == sorted(pids - {clean})
        assert sorted(_leftovers.end_leftovers(server.pid, token)) == roots
        deadline = time.monotonic() + 10
        while any(_leftovers._running(pid) for pid in roots):
            assert time.monotonic() < deadline, "a leftover still runs"
            time.sleep(0.01)
        assert _leftovers._running(clean) and stranger.poll() is None
    finally:
        for pid in pids:
            _leftovers._kill(pid, os.kill)
        stranger.kill()
        stranger.wait()
        server.stdout.close()


@needs_children
def test_what_is_below_a_running_server_is_not_read_until_it_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    read: list[int] = []
    head = _leftovers._head
    monkeypatch.setattr(_leftovers, "_head", lambda pid: read.append(int(pid)) or head(pid))
    try:
        _leftovers.started(server.pid)
        _leftovers.started(server.pid)  # two relays of one pid (reused): it runs until both stopped
        for stops in range(3):
            read.clear()
            _leftovers._find([(2**22 + 1, "token")])
            assert (server.pid in read) is (stops == 2)
            _leftovers.stopped(server.pid)
    finally:
        server.kill()
        server.wait()


def test_the_ends_of_one_turn_share_a_scan_and_the_next_waits_for_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    scans: list[tuple[list[tuple[int, str]], float]] = []

    def find(ending: list[tuple[int, str]]) -> list[list[int]]:
        scans.append((list(ending), asyncio.get_running_loop().time()))
        return [[group + 1] for group, _ in ending]

    monkeypatch.setattr(_leftovers, "_find", find)
    monkeypatch.setattr(_leftovers, "_kill", lambda pid, kill, *signum: None)

    async def scenario() -> tuple[list[list[int]], list[int]]:
        together = await asyncio.gather(_leftovers.ended(10, "a"), _leftovers.ended(20, "b"))
        return together, await _leftovers.ended(30, "c")

    together, later = asyncio.run(scenario())
    assert together == [[11], [21]] and later == [31]
    assert [ending for ending, _ in scans] == [[(10, "a"), (20, "b")], [(30, "c")]]
    assert scans[1][1] - scans[0][1] >= _leftovers.SCAN_EVERY * 0.9  # the window from the first scan's start


def test_a_cancelled_end_kills_what_it_found_at_once_and_its_scan_reads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cancelled before its scan, which a closing loop may never run (the window): ended at the cancellation."""
    killed: list[int] = []
    scans: list[list[tuple[int, str]]] = []
    monkeypatch.setattr(_leftovers, "_find", lambda ending: scans.append(list(ending)) or [[group + 1] for group, _ in ending])
    monkeypatch.setattr(_leftovers, "_kill", lambda pid, kill, *signum: killed.append(pid))
    monkeypatch.setattr(_leftovers, "SCAN_EVERY", 60.0)
    errors: list[dict] = []

    async def scenario() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: errors.append(context))
        await _leftovers.ended(10, "a")  # a scan: the next waits for the window
        waiting = asyncio.ensure_future(_leftovers.ended(20, "b"))
        await asyncio.sleep(0)  # registered
        waiting.cancel()
        await asyncio.sleep(0)

    asyncio.run(scenario())
    assert killed == [10, 11, 20, 21] and scans == [[(10, "a")], [(20, "b")]] and errors == []


@needs_children
def test_a_server_still_running_is_ended_by_its_group_and_is_not_its_own_leftover() -> None:
    """A relay cancelled before its server exited: the server is the group's leader, killed with the group."""
    server = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; print(subprocess.Popen("
                               "[sys.executable, '-c', 'import time; time.sleep(60)']).pid, flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, start_new_session=True)
    assert server.stdout is not None
    child = int(server.stdout.readline())
    try:
        assert _leftovers.end_leftovers(server.pid, "token") == [child]
        assert server.wait(timeout=10) == -9
    finally:
        _leftovers._kill(child, os.kill)
        server.kill()
        server.wait()
        server.stdout.close()


@needs_children
def test_the_environment_of_a_process_older_than_this_one_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every process a server of this one started is younger than it: an older one is nobody's leftover."""
    read: list[int] = []
    carried = _leftovers._carried
    monkeypatch.setattr(_leftovers, "_carried", lambda pid, marks: read.append(pid) or carried(pid, marks))
    sleeper = _sleeper()  # younger than this process, and its child: its environment is read
    try:
        _leftovers._find([(2**22 + 1, "token")])
        born = _leftovers._born()
        assert sleeper.pid in read and all((_leftovers._head(pid) or (0, 0, 0, born))[3] >= born for pid in read)
        read.clear()
        monkeypatch.setattr(_leftovers, "_born", lambda: 2**62)
        _leftovers._find([(2**22 + 1, "token")])
        assert read == []
    finally:
        sleeper.kill()
        sleeper.wait()


# The server's group after its leader is reaped (issue #46): its number is free once its last member ends, and
# another process may lead a group of that number; the group is signalled through a pidfd of its leader, never by it.
needs_group_pidfds = pytest.mark.skipif(not _leftovers._group_pidfds(),
                                        reason="this kernel signals no group through a pidfd (Linux 6.9+): by number")
LEAVES_A_CHILD = ("import subprocess, sys; print(subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])"
                  ".pid, flush=True)")


@needs_group_pidfds
def test_a_group_held_reaches_its_members_after_its_leader_is_reaped_and_nothing_once_they_ended(
        monkeypatch: pytest.MonkeyPatch) -> None:
    by_number: list[int] = []
    killpg = os.killpg
    monkeypatch.setattr(os, "killpg", lambda group, signum: by_number.append(group) or killpg(group, signum))
    leader = subprocess.Popen([sys.executable, "-c", LEAVES_A_CHILD], stdout=subprocess.PIPE, start_new_session=True)
    group = _leftovers.Group(leader.pid)  # while the leader is this process's child, unreaped
    assert leader.stdout is not None
    child = int(leader.stdout.readline())
    leader.stdout.close()
    try:
        assert leader.wait(timeout=10) == 0 and group.held  # reaped: only its child keeps the number
        assert _leftovers._stat(child)[1] == leader.pid  # type: ignore[index]  # the group's last member
        assert group.alive() and _leftovers.end_leftovers(group, "token") == [child]
        deadline = time.monotonic() + 10
        while group.alive():  # until its reaper (init, or this process if a subreaper) reaps it
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child, os.WNOHANG)
            assert time.monotonic() < deadline, "the group's last member was never reaped"
            time.sleep(0.01)
        assert not group.signal(signal.SIGKILL)  # empty: its number may be anyone's now
        assert _leftovers.end_leftovers(group, "token") == []
        group.close()
        assert not group.signal(0) and not group.alive()
        assert by_number == []
    finally:
        _leftovers._kill(child, os.kill)
        group.close()


@needs_group_pidfds
def test_a_leader_reaped_before_its_group_is_held_is_not_trusted_by_its_number() -> None:
    leader = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    leader.wait()
    group = _leftovers.Group(leader.pid)
    assert group.held and not group.alive() and not group.signal(0) and repr(group) == f"<Group {leader.pid} let go>"
    assert repr(_leftovers.Group(leader.pid, by_number=True)) == f"<Group {leader.pid} by number>"


@needs_group_pidfds
@pytest.mark.parametrize("code", ["pass", LEAVES_A_CHILD], ids=["exits", "leaves-a-child"])
def test_the_stdio_driver_never_signals_its_server_s_group_by_number_once_the_leader_is_reaped(
        monkeypatch: pytest.MonkeyPatch, tmp_path, code: str) -> None:
    """On 43bf8bf the driver reaped its server, then sent SIGKILL to the number (``_leftovers.ended``)."""
    from diverge_codec.relay.channel import FileWriter, RelayOptions
    from diverge_codec.relay.stdio import ServerRelay

    events: list[tuple[str, int]] = []
    waitpid, killpg = os.waitpid, os.killpg

    def reaping(pid: int, options: int) -> tuple[int, int]:
        done = waitpid(pid, options)
        if done[0] > 0:
            events.append(("reaped", done[0]))
        return done

    monkeypatch.setattr(os, "waitpid", reaping)  # asyncio's child watcher reaps through it
    monkeypatch.setattr(os, "killpg", lambda group, signum: events.append(("killpg", group)) or killpg(group, signum))
    with open(tmp_path / "channel", "wb") as out:
        relay = ServerRelay([sys.executable, "-c", code], FileWriter(out), RelayOptions(grace=0.3))
        report = asyncio.run(relay.run())
    server = report.server["pid"]
    assert ("reaped", server) in events
    assert ("killpg", server) not in events[events.index(("reaped", server)):]
    assert report.server["leftovers"] == (0 if code == "pass" else 1)


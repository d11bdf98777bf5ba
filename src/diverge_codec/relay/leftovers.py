"""What a server leaves behind, found and ended: its process group, and on Linux whatever it started.

The relay's process driver runs each server in its own process group and puts a token in
its environment (``MARK=token``), which every process it starts inherits, a daemon that
calls ``setsid`` included, unless it clears its environment. ``ended`` (``end_leftovers``
outside a loop) SIGKILLs the group and every process carrying the token (read from
``/proc/PID/environ``), and reaps those that had become this process's children: a process
that is a child subreaper (``become_subreaper``, what the command line does) adopts the
orphans of its servers, so a process that cleared its environment and left the group is
still its child and still ended (``end_children``). Where there is no ``/proc`` (macOS,
the BSDs), only the group is ended: docs/relay.md, "What is guaranteed", says so.

Where they are looked for, without reading every process on the machine: a process a
server started is below the server while its parent lives; when its parent exits, the
kernel hands it to the first live thread (the leading one while it lives) of the nearest
subreaper among its ancestors, or of init. So each one hangs below a child of this
process, or, unless it is a subreaper, of one of its ancestors or of init
(``/proc/PID/task/TID/children``). A subreaper walks its own tree, the servers still
running aside (what is below them is theirs); any other process reads those children and
looks below one only if it is marked or in an ending group, and reads no environment of
a process older than itself. Without the ``children`` files, or where ``/proc`` hides one of
those processes, every process is read. The ends of one loop share a scan: those of one
turn, and those of ``SCAN_EVERY`` seconds after a scan.

This is the driver's floor: it reads ``/proc`` and sends signals; nothing below it does.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import weakref
from collections.abc import Callable, Iterable, Sequence

__all__ = ["MARK", "become_subreaper", "end_adopted", "end_children", "end_leftovers", "ended", "reap", "started", "stopped"]

MARK = "DIVERGE_CODEC_RELAY"
"""The environment variable that marks every process a relayed server starts."""

PR_SET_CHILD_SUBREAPER = 36
REAP_WITHIN = 1.0
"""Seconds to wait for a killed child to be reapable: SIGKILL is not refused, only slow in the kernel."""
SCAN_EVERY = 0.02
"""Seconds between two scans of one loop: the servers that end meanwhile share the next one."""


_subreaper = False
"""Set by ``become_subreaper``: every process the servers start then stays in this process's tree."""

_servers: dict[int, int] = {}
"""The pids of the servers running (``started``, ``stopped``), each with how many relays hold it: what is below them is theirs."""


def become_subreaper() -> bool:
    """Make this process adopt its descendants' orphans (Linux 3.4+): True if it now does."""
    global _subreaper
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # only here: the command line's start-up does not pay for it elsewhere

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _subreaper = int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False
    return _subreaper


def started(pid: int) -> None:
    """A server runs as ``pid``: scans leave what is below it alone until ``stopped``."""
    _servers[pid] = _servers.get(pid, 0) + 1


def stopped(pid: int) -> None:
    """The server ``pid`` ended: what it left is looked for from now on."""
    if _servers.get(pid, 0) > 1:
        _servers[pid] -= 1
    else:
        _servers.pop(pid, None)


def _read(path: str) -> bytes | None:
    """A ``/proc`` file whole, by the system calls alone (a third cheaper than ``open``); None if it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # ended, or another user's
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _head(pid: int | str) -> tuple[bytes, int, int, int] | None:
    """(state, parent pid, process group, start time) of a process (its leading thread's state); None if it is gone."""
    stat = _read(f"/proc/{pid}/stat")
    if stat is None:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()  # after "(command name)", which may hold anything: field 3 on
    return (fields[0], int(fields[1]), int(fields[2]), int(fields[19])) if len(fields) >= 20 else None


def _stat(pid: int | str) -> tuple[int, int] | None:
    """(parent pid, process group) of a live process; None if it ended or is a zombie (its parent reaps it)."""
    head = _head(pid)
    return None if head is None or head[0] in (b"Z", b"X") else head[1:3]


def _processes() -> list[tuple[int, int, int]]:
    """(pid, parent pid, process group) of every live process ``/proc`` shows; [] where there is no ``/proc``."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    return [(int(entry), *stat) for entry in entries if entry.isdigit() and (stat := _stat(entry)) is not None]


def _children(pid: int | str = "self") -> list[int] | None:
    """A process's children from its threads' ``/proc/PID/task/TID/children`` (Linux 3.5+), not every
    process on the machine (~1 ms per 80); None where the files are missing."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    found: set[int] = set()
    complete = False
    for thread in threads:
        children = _thread_children(pid, thread)
        if children is not None:  # else a thread that ended meanwhile, or no such file in this kernel
            found.update(children)
            complete = True
    return sorted(found) if complete else None


def _thread_children(pid: int | str, thread: int | str) -> list[int] | None:
    children = _read(f"/proc/{pid}/task/{thread}/children")
    return None if children is None else [int(child) for child in children.split()]


def _walk(roots: Iterable[tuple[int, bool]], skip: Iterable[int],
          keep: Callable[[int, int, int], bool]) -> list[tuple[int, int, int]]:
    """(pid, parent pid, process group) of each live process from ``roots`` (pid, whether all below it is walked)
    down, each told to ``keep(pid, group, start time)``: below one only if walked whole or kept; ``skip`` and what
    is below them aside."""
    pending = list(roots)
    seen = set(skip)
    found = []
    while pending:
        pid, whole = pending.pop()
        if pid in seen or (head := _head(pid)) is None or head[0] in (b"Z", b"X"):
            continue
        seen.add(pid)
        found.append((pid, head[1], head[2]))
        if keep(pid, head[2], head[3]) or whole:
            pending.extend((child, whole) for child in _children(pid) or ())
    return found


_me: tuple[int, int] = (0, 0)
"""(pid, start time) of this process, read once (a forked child reads its own)."""


def _born() -> int:
    """This process's start time in clock ticks since boot: every process a server of it started is younger."""
    global _me
    if _me[0] != os.getpid():
        head = _head(os.getpid())
        _me = (os.getpid(), head[3] if head is not None else 0)
    return _me[1]


def _reapers() -> list[tuple[int, bool]] | None:
    """Where the kernel hands a server's orphans: this process and, unless it is a subreaper, its
    ancestors and init; each with whether its leading thread lives (``find_new_reaper`` hands
    them to a process's first live thread: that one while it lives). None if one cannot be read
    (``/proc`` mounted with ``hidepid``, or none at all)."""
    found: list[tuple[int, bool]] = []
    pid = os.getpid()
    while True:
        head = _head(pid)
        if head is None:
            return None
        found.append((pid, head[0] not in (b"Z", b"X")))
        pid = head[1]
        if _subreaper or pid <= 0 or any(pid == reaper for reaper, _ in found):
            break
    if not _subreaper and all(reaper != 1 for reaper, _ in found):  # beyond this pid namespace: its init
        if (head := _head(1)) is None:
            return None
        found.append((1, head[0] not in (b"Z", b"X")))
    return found


def _roots(reapers: list[tuple[int, bool]] | None) -> list[tuple[int, bool]] | None:
    """The children of each reaper (pid, whether all below it is to be looked at: below a subreaper's
    own, yes); None where a reaper or its children cannot be read."""
    if reapers is None:
        return None
    roots: list[tuple[int, bool]] = []
    me = os.getpid()
    for pid, leading in reapers:
        children = _thread_children(pid, pid) if leading else None
        if children is None and (children := _children(pid)) is None:
            return None
        roots.extend((child, _subreaper and pid == me) for child in children)
    return roots


def _carried(pid: int, marks: dict[bytes, int]) -> int | None:
    """The index in ``marks`` of the mark ``pid``'s environment carries, if any of them."""
    environ = _read(f"/proc/{pid}/environ")
    if environ is None or MARK.encode() not in environ:
        return None
    return next((marks[entry] for entry in environ.split(b"\0") if entry in marks), None)


def _find(ending: Sequence[tuple[int, str]]) -> list[list[int]]:
    """For each (group, token) of ``ending``, the pids alive in that group or marked with that token, its leader aside."""
    me = os.getpid()
    groups = {group: at for at, (group, _) in enumerate(ending)}
    marks = {f"{MARK}={token}".encode(): at for at, (_, token) in enumerate(ending)}
    owner: dict[int, int] = {}
    born = _born()

    def theirs(pid: int, group: int, started: int) -> bool:
        at = groups.get(group)
        if at is None and started >= born:  # one older than this process is no server's
            at = _carried(pid, marks)
        if at is not None:
            owner[pid] = at
        return at is not None

    reapers = _reapers()
    roots = _roots(reapers)
    if reapers is None or roots is None:  # no children files, or a reaper hidden: every process is read
        for pid, _, group in _processes():
            if pid != me:
                theirs(pid, group, born)  # of unknown age
    else:
        roots.extend((group, _subreaper) for group in groups)  # a server still running (its relay was cancelled)
        running = (pid for pid in tuple(_servers) if pid not in groups)  # what is below them is theirs
        _walk(roots, [*(pid for pid, _ in reapers), *running], theirs)
    found: list[list[int]] = [[] for _ in ending]
    for pid, at in owner.items():
        if pid != ending[at][0]:
            found[at].append(pid)
    return found


def _end(ending: Sequence[tuple[int, str]]) -> list[list[int]]:
    found = _find(ending)
    for group, _ in ending:
        _kill(group, os.killpg)
    for pids in found:
        for pid in pids:
            _kill(pid, os.kill)
    return found


def end_leftovers(group: int, token: str) -> list[int]:
    """SIGKILL the group ``group`` and every process marked with ``token``: the pids found alive, its leader aside."""
    return _end([(group, token)])[0]


class _Scans:
    """One loop's servers waiting for a scan, and when it last scanned."""

    def __init__(self) -> None:
        self.waiting: list[tuple[int, str, asyncio.Future[list[int]]]] = []
        self.last = float("-inf")
        self.handle: asyncio.Handle | None = None

    def run(self, loop: asyncio.AbstractEventLoop) -> None:
        waiting, self.waiting, self.handle = self.waiting, [], None
        if not waiting:  # each was cancelled, and ended then
            return
        self.last = loop.time()
        try:
            found = _end([(group, token) for group, token, _ in waiting])
        except Exception as error:  # none expected (what /proc refuses is skipped): each waiter gets it
            for *_, future in waiting:
                if not future.done():
                    future.set_exception(error)
            return
        for (*_, future), pids in zip(waiting, found):
            if not future.done():
                future.set_result(pids)


_scans: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Scans] = weakref.WeakKeyDictionary()


async def ended(group: int, token: str) -> list[int]:
    """``end_leftovers``, in one scan with every server of this loop that ends in the same turn or
    within ``SCAN_EVERY`` of the loop's last scan: the pids found alive, the group's leader aside."""
    loop = asyncio.get_running_loop()
    scans = _scans.get(loop)
    if scans is None:
        scans = _scans[loop] = _Scans()
    future: asyncio.Future[list[int]] = loop.create_future()
    waiting = (group, token, future)
    scans.waiting.append(waiting)
    if scans.handle is None:
        delay = scans.last + SCAN_EVERY - loop.time()
        scans.handle = loop.call_later(delay, scans.run, loop) if delay > 0 else loop.call_soon(scans.run, loop)
    try:
        return await future
    except asyncio.CancelledError:
        if waiting in scans.waiting:  # before its scan, which a closing loop may never run: ended now
            scans.waiting.remove(waiting)
            end_leftovers(group, token)
        raise


def end_children(exclude: frozenset[int] = frozenset()) -> list[int]:
    """SIGKILL every child of this process but ``exclude``: what a subreaper adopted and nobody ended."""
    children = _children()
    if children is None:
        me = os.getpid()
        children = [pid for pid, parent, _ in _processes() if parent == me]
    found = [pid for pid in children if pid not in exclude and _stat(pid) is not None]
    for pid in found:
        _kill(pid, os.kill)
    return found


async def reap(pids: list[int]) -> None:
    """Wait (``REAP_WITHIN`` at most) until each of ``pids`` is dead, and collect the exit of
    those that are this process's children, so none stays a zombie."""
    waiting = set(pids)
    deadline = asyncio.get_running_loop().time() + REAP_WITHIN
    while waiting:
        for pid in list(waiting):
            try:
                done = os.waitpid(pid, os.WNOHANG)[0] != 0
            except ChildProcessError:  # not ours: its parent reaps it; dead is enough
                done = not _running(pid)
            if done:
                waiting.discard(pid)
        if not waiting or asyncio.get_running_loop().time() > deadline:
            return
        await asyncio.sleep(0.01)


def _running(pid: int) -> bool:
    return _stat(pid) is not None


def _kill(pid: int, kill: Callable[[int, int], None]) -> None:
    try:
        kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def end_adopted() -> int:
    """At a subreaper's end, once its relays ended: every child still there is an orphan it adopted that no mark
    found (a server's own children were ended with it). Each is killed and reaped: how many."""
    adopted = end_children()
    await reap(adopted)
    return len(adopted)

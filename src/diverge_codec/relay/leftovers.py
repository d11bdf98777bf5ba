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

__all__ = ["MARK", "Group", "become_subreaper", "end_adopted", "end_children", "end_leftovers", "ended", "reap", "started",
           "stopped"]

MARK = "DIVERGE_CODEC_RELAY"
"""The environment variable that marks every process a relayed server starts."""

PR_SET_CHILD_SUBREAPER = 36
REAP_WITHIN = 1.0
"""Seconds to wait for a killed child to be reapable: SIGKILL is not refused, only slow in the kernel."""
SCAN_EVERY = 0.02
"""Seconds between two scans of one loop: the servers that end meanwhile share the next one."""
PROC = "/proc"
"""Where the process table is read (a test points it at a directory of its own: ``/proc`` as hostile as it can be)."""
PIDFD_SIGNAL_PROCESS_GROUP = 4
"""``pidfd_send_signal``'s flag (Linux 6.9+): the signal goes to the process group the pidfd's process leads."""
_DEAD = (b"Z", b"X", b"x")
"""A /proc state that is no live process: a zombie, or dead (``x`` in Linux 3.9-3.13, ``X`` since)."""


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


class Group:
    """A server's process group, signalled only while its number cannot name another group.

    Once its leader is reaped (asyncio's child watcher reaps a server as soon as it exits) and its
    last member has ended, a group's number is free, and an unrelated process may lead a group of
    that number: ``os.killpg`` would signal that one. Where the kernel signals a group through a
    pidfd (Linux 6.9+, ``PIDFD_SIGNAL_PROCESS_GROUP``), the group is held by a pidfd of its leader,
    opened while the leader is this process's unreaped child (none but this process can reap it,
    so the number is still its own), and signalled through it: the kernel sends the signal to the
    group the leader led, its members left after the reap included, and to no other, whatever
    the number has become. A leader already reaped when the group is made (it exited at once) is
    not trusted by its number: its group is signalled no more, and what it left is found by its
    mark. Where the kernel has no such pidfd (Linux before 6.9, macOS, the BSDs) the group is
    signalled by its number, as before: docs/relay.md, "What is guaranteed", says what that leaves.
    """

    def __init__(self, leader: int, *, by_number: bool = False) -> None:
        self.number: int = leader
        self.held: bool = not by_number and _group_pidfds()
        """Whether the group is held by a pidfd (signalled through it, or not at all), rather than by its number."""
        self._pidfd: int | None = _child_pidfd(leader) if self.held else None

    def __repr__(self) -> str:
        return f"<Group {self.number} {'by number' if not self.held else 'held' if self._pidfd is not None else 'let go'}>"

    def signal(self, signum: int) -> bool:
        """Send ``signum`` to the group: False if it has no member left, it is let go, or is not this user's."""
        if not self.held:
            return _kill(self.number, os.killpg, signum)
        if self._pidfd is None:
            return False
        try:
            signal.pidfd_send_signal(self._pidfd, signum, None, PIDFD_SIGNAL_PROCESS_GROUP)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def alive(self) -> bool:
        """Whether the group has a member, so that its number is still its own (by its number: assumed)."""
        return self.signal(0) if self.held else True

    def close(self) -> None:
        """Let go of the pidfd once the group's ends are done: it is signalled no more."""
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


_group_pidfds_here: bool | None = None


def _group_pidfds() -> bool:
    """Whether this kernel signals a process group through a pidfd (asked once, of this process's own pidfd)."""
    global _group_pidfds_here
    if _group_pidfds_here is None:
        _group_pidfds_here = False
        if hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal"):
            try:
                fd = os.pidfd_open(os.getpid())
            except OSError:  # ENOSYS: no pidfds (Linux before 5.3)
                return False
            try:
                signal.pidfd_send_signal(fd, 0, None, PIDFD_SIGNAL_PROCESS_GROUP)  # signal 0: nothing is sent
                _group_pidfds_here = True
            except ProcessLookupError:  # understood: this process leads no group
                _group_pidfds_here = True
            except OSError:  # EINVAL: the flag is unknown (Linux before 6.9)
                pass
            finally:
                os.close(fd)
    return _group_pidfds_here


def _child_pidfd(leader: int) -> int | None:
    """A pidfd of ``leader`` if it is this process's unreaped child (a zombie too); None if it was reaped already
    (then its number may be another's: nothing is trusted by it)."""
    try:
        fd = os.pidfd_open(leader)
    except OSError:  # ESRCH: reaped, and no process has the number now
        return None
    try:
        os.waitid(os.P_PIDFD, fd, os.WEXITED | os.WNOHANG | os.WNOWAIT)  # ECHILD unless our child, unreaped
    except OSError:
        os.close(fd)
        return None
    return fd


def _as_group(group: int | Group) -> Group:
    """A group given by its number (``end_leftovers`` called with one): signalled by that number."""
    return group if isinstance(group, Group) else Group(group, by_number=True)


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
    """(state, parent pid, process group, start time) of a process (its leading thread's state); None if it is gone
    or its line is not one the kernel writes."""
    stat = _read(f"{PROC}/{pid}/stat")
    if stat is None:
        return None
    # After "(command name)", which may hold anything, ")" and newlines included: field 3 on, from the last ")".
    fields = stat[stat.rfind(b")") + 1:].split()
    try:
        return (fields[0], int(fields[1]), int(fields[2]), int(fields[19])) if len(fields) >= 20 else None
    except ValueError:
        return None


def _stat(pid: int | str) -> tuple[int, int] | None:
    """(parent pid, process group) of a live process; None if it ended or is a zombie (its parent reaps it)."""
    head = _head(pid)
    return None if head is None or head[0] in _DEAD else head[1:3]


def _processes() -> list[tuple[int, int, int]]:
    """(pid, parent pid, process group) of every live process ``/proc`` shows; [] where there is no ``/proc``."""
    try:
        entries = os.listdir(PROC)
    except OSError:
        return []
    return [(int(entry), *stat) for entry in entries if entry.isdigit() and (stat := _stat(entry)) is not None]


def _children(pid: int | str = "self") -> list[int] | None:
    """A process's children from its threads' ``/proc/PID/task/TID/children`` (Linux 3.5+), not every
    process on the machine (~1 ms per 80); None where the files are missing."""
    try:
        threads = os.listdir(f"{PROC}/{pid}/task")
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
    children = _read(f"{PROC}/{pid}/task/{thread}/children")
    if children is None:
        return None
    try:
        return [int(child) for child in children.split()]
    except ValueError:  # not what the kernel writes: as if it could not be read
        return None


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
        if pid in seen or (head := _head(pid)) is None or head[0] in _DEAD:
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
        found.append((pid, head[0] not in _DEAD))
        pid = head[1]
        if _subreaper or pid <= 0 or any(pid == reaper for reaper, _ in found):
            break
    if not _subreaper and all(reaper != 1 for reaper, _ in found):  # beyond this pid namespace: its init
        if (head := _head(1)) is None:
            return None
        found.append((1, head[0] not in _DEAD))
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
    environ = _read(f"{PROC}/{pid}/environ")
    if environ is None or MARK.encode() not in environ:
        return None
    return next((marks[entry] for entry in environ.split(b"\0") if entry in marks), None)


def _find(ending: Sequence[tuple[int | Group, str]]) -> list[list[int]]:
    """For each (group, token) of ``ending``, the pids alive in that group or marked with that token, its leader aside.
    A group held by a pidfd with no member left is looked for by its mark alone: its number may be another's."""
    me = os.getpid()
    leaders = [_as_group(group) for group, _ in ending]
    groups = {group.number: at for at, group in enumerate(leaders) if group.alive()}
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
        if pid != leaders[at].number:
            found[at].append(pid)
    return found


def _end(ending: Sequence[tuple[int | Group, str]]) -> list[list[int]]:
    found = _find(ending)
    for group, _ in ending:
        _as_group(group).signal(signal.SIGKILL)  # held: to its own members alone, the number reused or not
    for pids in found:
        for pid in pids:
            _kill(pid, os.kill)
    return found


def end_leftovers(group: int | Group, token: str) -> list[int]:
    """SIGKILL the group ``group`` and every process marked with ``token``: the pids found alive, its leader aside."""
    return _end([(group, token)])[0]


class _Scans:
    """One loop's servers waiting for a scan, and when it last scanned."""

    def __init__(self) -> None:
        self.waiting: list[tuple[int | Group, str, asyncio.Future[list[int]]]] = []
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


async def ended(group: int | Group, token: str) -> list[int]:
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


def _kill(pid: int, kill: Callable[[int, int], None], signum: int = signal.SIGKILL) -> bool:
    """``kill(pid, signum)``: False if there is no such process (or group), or it is not this user's."""
    try:
        kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def end_adopted() -> int:
    """At a subreaper's end, once its relays ended: every child still there is an orphan it adopted that no mark
    found (a server's own children were ended with it). Each is killed and reaped: how many."""
    adopted = end_children()
    await reap(adopted)
    return len(adopted)

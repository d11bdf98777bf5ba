"""What a server leaves behind, found and ended: its process group, and on Linux whatever it started.

The relay's process driver runs each server in its own process group and puts a token in
its environment (``MARK=token``), which every process it starts inherits, a daemon that
calls ``setsid`` included, unless it clears its environment. ``end_leftovers`` SIGKILLs
the group and every process carrying the token (read from ``/proc/PID/environ``), and
reaps those that had become this process's children: a process that is a child
subreaper (``become_subreaper``, what the command line does) adopts the orphans of its
servers, so a process that cleared its environment and left the group is still its
child and still ended (``end_children``). Where there is no ``/proc`` (macOS, the BSDs),
only the group is ended: docs/relay.md, "What is guaranteed", says so.

This is the driver's floor: it reads ``/proc`` and sends signals; nothing below it does.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Callable

__all__ = ["MARK", "become_subreaper", "end_children", "end_leftovers", "reap"]

MARK = "DIVERGE_CODEC_RELAY"
"""The environment variable that marks every process a relayed server starts."""

PR_SET_CHILD_SUBREAPER = 36
REAP_WITHIN = 1.0
"""Seconds to wait for a killed child to be reapable: SIGKILL is not refused, only slow in the kernel."""


_subreaper = False
"""Set by ``become_subreaper``: every process the servers start then stays in this process's tree."""


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


def _stat(pid: int | str) -> tuple[int, int] | None:
    """(parent pid, process group) of a live process; None if it ended or is a zombie (its parent reaps it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()  # after "(command name)", which may hold anything
    if len(fields) < 3 or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), int(fields[2])


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
        try:
            with open(f"/proc/{pid}/task/{thread}/children", "rb") as file:
                found.update(int(child) for child in file.read().split())
            complete = True
        except OSError:  # a thread that ended meanwhile, or no such file in this kernel
            continue
    return sorted(found) if complete else None


def _descendants() -> list[tuple[int, int, int]] | None:
    """(pid, parent pid, process group) of this process's live descendants; None without children files."""
    pending = _children()
    if pending is None:
        return None
    found: dict[int, tuple[int, int, int]] = {}
    while pending:
        pid = pending.pop()
        if pid in found or (stat := _stat(pid)) is None:
            continue
        found[pid] = (pid, *stat)
        pending.extend(_children(pid) or ())
    return list(found.values())


def _carries(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            return needle in file.read().split(b"\0")
    except OSError:  # ended, or another user's
        return False


def end_leftovers(group: int, token: str) -> list[int]:
    """SIGKILL the group ``group`` and every process marked with ``token``: the pids found alive, its leader aside.
    A subreaper reads its own tree; any other process every process, as a marked one may be anywhere."""
    me = os.getpid()
    needle = f"{MARK}={token}".encode()
    processes = _descendants() if _subreaper else None
    found = [pid for pid, _, pgid in (_processes() if processes is None else processes)
             if pid not in (me, group) and (pgid == group or _carries(pid, needle))]
    _kill(group, os.killpg)
    for pid in found:
        _kill(pid, os.kill)
    return found


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

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


def become_subreaper() -> bool:
    """Make this process adopt its descendants' orphans (Linux 3.4+): True if it now does."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # only here: the command line's start-up does not pay for it elsewhere

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _processes() -> list[tuple[int, int, int]]:
    """(pid, parent pid, process group) of every live process ``/proc`` shows (zombies are dead
    already, their parents reap them); [] where there is no ``/proc``."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                stat = file.read()
        except OSError:  # it ended meanwhile
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # after "(command name)", which may hold anything
        if len(fields) >= 3 and fields[0] not in (b"Z", b"X"):
            found.append((int(entry), int(fields[1]), int(fields[2])))
    return found


def _carries(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            return needle in file.read().split(b"\0")
    except OSError:  # ended, or another user's
        return False


def end_leftovers(group: int, token: str) -> list[int]:
    """SIGKILL the group ``group`` and every process marked with ``token``: the pids found alive, its leader aside."""
    me = os.getpid()
    needle = f"{MARK}={token}".encode()
    found = [pid for pid, _, pgid in _processes()
             if pid not in (me, group) and (pgid == group or _carries(pid, needle))]
    _kill(group, os.killpg)
    for pid in found:
        _kill(pid, os.kill)
    return found


def end_children(exclude: frozenset[int] = frozenset()) -> list[int]:
    """SIGKILL every child of this process but ``exclude``: what a subreaper adopted and nobody ended."""
    me = os.getpid()
    found = [pid for pid, parent, _ in _processes() if parent == me and pid not in exclude]
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
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:].split()[0] not in (b"Z", b"X")


def _kill(pid: int, kill: Callable[[int, int], None]) -> None:
    try:
        kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass

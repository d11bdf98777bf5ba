"""An event loop on virtual time: a 30 s reconnect window runs in milliseconds, each wait exactly as asked.

``run(main)`` runs a coroutine function on a ``VirtualTimeLoop``: the loop's ``time()`` is virtual, and
whenever nothing is ready it jumps to the next timer instead of sleeping (real I/O is still polled, without
waiting). Every loop turn also moves the clock by ``TICK`` (a microsecond), as a real clock moves, so code
that waits 0 s until time has passed ends. The relay's drivers take ``clock=loop.time`` (and a recording
``sleep``): their timing rules, ``asyncio.timeout`` and ``call_later`` all read the one virtual clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

TICK = 1e-6
"""Virtual seconds each loop turn takes: far below any rule's step (the tests round to 1 ms)."""
START = 1000.0
"""The clock's first reading: not 0, as a monotonic clock is not (a rule adding two moments must show)."""
MAX_TURNS = 10_000
"""Loop turns a run may take (the busiest test here takes under 100): past it the code under test spins without
end (a planted bug's busy loop), and the run fails at once instead of at pytest's timeout."""

T = TypeVar("T")


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector loop whose clock jumps to the next timer where a real one would sleep."""

    def __init__(self) -> None:
        super().__init__()
        self._now = START
        self.turns = 0
        real_select = self._selector.select  # type: ignore[attr-defined]

        def select(timeout: float | None = None) -> Any:
            events = real_select(0)
            self.turns += 1
            if self.turns > MAX_TURNS:
                raise RuntimeError(f"more than {MAX_TURNS} loop turns: a busy loop")
            self._now += TICK
            if not events and timeout is not None and timeout > 0:
                self._now += timeout
            return events

        self._selector.select = select  # type: ignore[attr-defined]

    def time(self) -> float:
        return self._now


def run(main: Callable[[], Awaitable[T]]) -> T:
    """``main()`` on a fresh virtual-time loop; its result."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


class Waits:
    """A ``sleep`` for the drivers that keeps each wait asked (rounded to 1 ms) and waits it on the loop."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(round(seconds, 3))
        await asyncio.sleep(seconds)

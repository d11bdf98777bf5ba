"""The cycle collector paused while modules load: what an import makes (modules, classes, functions) lives
as long as the process, so a collection during it walks them all for nothing, about 3 ms of a command's start-up."""

from __future__ import annotations

import gc
from types import TracebackType


class paused_collector:  # noqa: N801  (used as a statement: ``with paused_collector():``)
    """``gc.disable()`` for the block, and the collector back as it was found (on) when it ends."""

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        if self.was_enabled:
            gc.enable()

"""The cycle collector paused while modules load: what they make lives as long as the process (~3 ms of start-up)."""

from __future__ import annotations

import gc
from types import TracebackType


class paused_collector:  # noqa: N801  (used as a statement: ``with paused_collector():``)

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        if self.was_enabled:
            gc.enable()

"""TEMPORARY: the new event-parser API over the old parser, until eventstream's rewrite lands."""

from __future__ import annotations

import collections
from typing import Any

from .eventstream import EventParser as _OldParser

MAX_RETRY_MS = 600_000
NAMED_LIMIT = 16


class RecentIds:
    def __init__(self, capacity: int = 65536) -> None:
        self.capacity = capacity
        self._set: set[int] = set()
        self._order: collections.deque[int] = collections.deque()

    def __contains__(self, event_id: bytes) -> bool:
        return hash(event_id) in self._set

    def add(self, event_id: bytes) -> None:
        key = hash(event_id)
        if key in self._set:
            return
        self._set.add(key)
        self._order.append(key)
        if len(self._order) > self.capacity:
            self._set.discard(self._order.popleft())

    def clear(self) -> None:
        self._set.clear()
        self._order.clear()


class EventParser:
    def __init__(self, max_data: int, seen: RecentIds | None = None) -> None:
        self._old = _OldParser(max_data)
        self.seen = seen
        self.replayed = 0
        self.named: list[tuple[bytes, bytes]] = []
        self.named_dropped = 0

    last_event_id = property(lambda self: self._old.last_event_id)
    too_large = property(lambda self: self._old.too_large, lambda self, value: setattr(self._old, "too_large", value))

    @property
    def retry_ms(self) -> int | None:
        value = self._old.retry_ms
        return None if value is None else min(value, MAX_RETRY_MS)

    def feed(self, chunk: bytes) -> list[bytes]:
        return self._keep(self._old.feed(bytes(chunk)))

    def close(self) -> list[bytes]:
        return self._keep(self._old.close())

    def _keep(self, events: list[Any]) -> list[bytes]:
        kept = []
        for event in events:
            if event.event not in (b"", b"message"):
                if len(self.named) < NAMED_LIMIT:
                    self.named.append((event.event, event.data[:4096]))
                else:
                    self.named_dropped += 1
                continue
            if event.id is not None and self.seen is not None:
                if event.id in self.seen:
                    self.replayed += 1
                    continue
                self.seen.add(event.id)
            kept.append(event.data)
        return kept

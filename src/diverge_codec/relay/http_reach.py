"""Whether a remote server can be reached, on the server's word alone, and the operator's words for it.

A session is lost only when the server says so (``streamable_http``'s 404, or the 400 that says the session
is unknown). The server is *unreachable* when a request cannot connect on a fresh connection, or is answered
502, 503 or 504 (a proxy or load balancer with no server behind it: nginx answers 502, haproxy 503), or 429
with a ``Retry-After`` in seconds: from the first such answer (``down_since``) the relay tries again with
backoff (never sooner than ``Retry-After``) until ``reconnect_window`` has passed, then gives up naming the
last status or error. Any other answer means it is reached again. One request that fails in another way
fails alone.

The words go to ``logging.getLogger("diverge_codec.relay")`` (INFO: an operator reads them as they happen;
DEBUG: each exchange, its method, path, status and time, never a header value, a body or a query). A mixin
of ``http_driver.HttpDriver``, which holds the options and the report.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

__all__ = ["UNREACHABLE_STATUSES", "Reach", "log", "retry_after", "unreachable_status"]

log: logging.Logger = logging.getLogger("diverge_codec.relay")

UNREACHABLE_STATUSES = (502, 503, 504)
"""A gateway with no server behind it (and 429 with ``Retry-After``): "cannot be reached", never "refused"."""
RETRY_AFTER_DIGITS = 6
"""The longest ``Retry-After`` read (seconds, all digits: a date is not read); past it, the window decides."""
PATH_CHARS = 120
"""The most of a URL's path a DEBUG line shows (a server's ``endpoint`` names it, so it is cut)."""


def retry_after(headers: Any) -> float | None:
    """``Retry-After`` in seconds (delta-seconds, RFC 9110 §10.2.3), or None where it is absent or a date."""
    value = (headers.get("retry-after") or "").strip()
    if not value or len(value) > RETRY_AFTER_DIGITS or not (value.isascii() and value.isdigit()):
        return None
    return float(value)


def unreachable_status(status: int, headers: Any) -> bool:
    """502, 503, 504, or 429 with a ``Retry-After``: the server cannot be reached now, try again later."""
    return status in UNREACHABLE_STATUSES or (status == 429 and retry_after(headers) is not None)


def path_of(url: str) -> str:
    """A URL's path alone, cut to ``PATH_CHARS``: no query, no user, no host (for a DEBUG line)."""
    path = urlsplit(url).path or "/"
    return path if len(path) <= PATH_CHARS else path[:PATH_CHARS] + "..."


def clock_text(monotonic: float) -> str:
    """A moment on the monotonic clock as the wall clock's UTC time of day (``21:50:03Z``)."""
    return time.strftime("%H:%M:%SZ", time.gmtime(time.time() + monotonic - time.monotonic()))


class Reach:
    """The outage's bookkeeping: since when the server cannot be reached, until when the relay tries."""

    _down_since: float | None = None
    """The first failure to reach the server, while it lasts."""
    _outage_began: float | None = None
    """When the outage that just ended began (a session found lost on coming back counts from there)."""
    _wait_at_least: float = 0.0
    """The server's last ``Retry-After``: the least wait before the next try."""
    _error_seen: str | None = None
    """Why the server could not be reached, the last time it could not."""
    _clock: Callable[[], float] = staticmethod(time.monotonic)
    """The clock every timing rule reads (the outage, the window, a stream's age): a test gives a fake one."""
    _sleep: Callable[[float], Awaitable[None]] = staticmethod(asyncio.sleep)
    """The wait before each try again (backoff, ``Retry-After``, a stream's ``retry``): a test records them."""

    def _unreachable_now(self: Any, why: str, wait: float | None = None) -> bool:
        """The server cannot be reached (``why`` names the status or the error): True while the relay goes on
        trying, False once ``reconnect_window`` is spent since the first failure (then it has ended)."""
        now = self._clock()
        self._error_seen = why
        self._wait_at_least = wait or 0.0
        window = self.options.reconnect_window
        if self._down_since is None:
            self._down_since = now
            log.info("the server cannot be reached (%s) since %s; trying again until %s (--reconnect-window %g s)",
                     why, clock_text(now), clock_text(now + window), window)
        if now - self._down_since + self._wait_at_least > window:
            self._fail(why, "connection lost")
            return False
        return True

    def _answered_status(self, status: int) -> None:
        """A response that is no outage's: the server is reached (again)."""
        if self._down_since is not None:
            log.info("the server answers again (HTTP %d), %.1f s after it could first not be reached",
                     status, self._clock() - self._down_since)
            self._outage_began, self._down_since = self._down_since, None
        elif status < 300:
            self._outage_began = None
        self._wait_at_least = 0.0

    def _backoff_delay(self: Any, delay: float) -> float:
        """The wait before the next try: the backoff's, or the server's ``Retry-After`` where it is longer; while
        the server is away, never past the window's end (the last try is made there)."""
        delay = max(delay, self._wait_at_least)
        if self._down_since is not None:
            left = self._down_since + self.options.reconnect_window - self._clock()
            delay = min(delay, max(left, 0.0))
        return delay

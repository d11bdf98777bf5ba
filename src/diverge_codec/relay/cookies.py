"""The cookies a server sets, kept for its host and sent back (a load balancer's session affinity), as httpx
keeps them for the MCP SDKs.

RFC 6265 section 5 at its simplest: a cookie is kept by name for the host that set it and sent back on every
path (``Domain`` and ``Path`` are not read: the relay speaks to one server), over https only where it says
``Secure``. Its end is ``Max-Age`` (section 5.2.2: ASCII digits, an optional ``-``; zero or less ends it now)
or else ``Expires`` (section 5.2.1, read with section 5.1.1's date algorithm), the last of each winning; one
that has ended is removed (the usual way to delete a cookie is an ``Expires`` in the past). An attribute that
cannot be read is ignored, as the RFC says; a cookie that cannot be sent back as it came (no ``=``, no name,
a byte outside printable ASCII, past ``COOKIE_BYTES``) is dropped. Nothing a server sends makes an error:
every step is a linear scan of a bounded header.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable

__all__ = ["COOKIE_BYTES", "MAX_COOKIES", "CookieJar", "cookie_date"]

MAX_COOKIES = 50
"""Cookies kept for one host (a load balancer's session affinity needs one or two); more are ignored."""
COOKIE_BYTES = 4096
"""The longest ``Set-Cookie`` read (RFC 6265's floor for what a client keeps); a longer one is dropped."""

# Patterns, not compiled ones: ``re`` compiles each at its first use and keeps it, so a relay whose server sets
# no dated cookie compiles none at start-up (issue 44: start-up unchanged).
_DELIMITERS = r"[\x09\x20-\x2f\x3b-\x40\x5b-\x60\x7b-\x7e]+"
_TIME = r"([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:[^0-9]|$)"
_DAY = r"([0-9]{1,2})(?:[^0-9]|$)"
_YEAR = r"([0-9]{2,4})(?:[^0-9]|$)"
_MAX_AGE = r"-?[0-9]+"
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def cookie_date(text: str) -> float | None:
    """An ``Expires`` value as seconds since the epoch (RFC 6265 section 5.1.1), or None where it is no date."""
    clock = day = month = year = None
    for token in re.split(_DELIMITERS, text[:256]):
        if clock is None and (found := re.match(_TIME, token, re.ASCII)):
            clock = tuple(int(part) for part in found.groups())
        elif day is None and (found := re.match(_DAY, token, re.ASCII)):
            day = int(found.group(1))
        elif month is None and token[:3].lower() in _MONTHS:
            month = _MONTHS.index(token[:3].lower()) + 1
        elif year is None and (found := re.match(_YEAR, token, re.ASCII)):
            year = int(found.group(1))
    if clock is None or day is None or month is None or year is None:
        return None
    year += 1900 if 70 <= year <= 99 else 2000 if year <= 69 else 0
    hour, minute, second = clock
    if not 1 <= day <= 31 or year < 1601 or hour > 23 or minute > 59 or second > 59:
        return None
    import calendar  # here, not at start-up: only a dated cookie needs it

    if day > calendar.monthrange(year, month)[1]:  # February 30th: no such day
        return None
    return float(calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)))


def _ends_at(attributes: list[str], now: float) -> tuple[float | None, bool]:
    """When the cookie ends (None: with the session) and whether it says ``Secure``; unreadable attributes ignored."""
    max_age: float | None = None
    expires: float | None = None
    secure = False
    for attribute in attributes:
        name, _, value = attribute.partition("=")
        name, value = name.strip(" \t").lower(), value.strip(" \t")
        if name == "max-age" and re.fullmatch(_MAX_AGE, value, re.ASCII):
            seconds = int(value[:20])  # more digits than a clock can hold: as good as for ever
            max_age = float("-inf") if seconds <= 0 else now + seconds
        elif name == "expires":
            date = cookie_date(value)
            expires = date if date is not None else expires
        elif name == "secure":
            secure = True
    return (max_age if max_age is not None else expires), secure


class CookieJar:
    """The cookies of each host the client spoke to: ``keep`` a response's, ``header`` for the next request."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._kept: dict[str, dict[str, tuple[str, bool, float | None]]] = {}  # host -> name -> (value, secure, end)

    def header(self, host: str, scheme: str) -> list[tuple[str, str]]:
        """The ``Cookie`` header for a request to ``host``, or none: the cookies not ended, Secure ones over https."""
        kept = self._kept.get(host)
        if not kept:
            return []
        now = self._clock()
        for name in [name for name, (_, _, end) in kept.items() if end is not None and end <= now]:
            del kept[name]
        pairs = [f"{name}={value}" for name, (value, secure, _) in kept.items() if scheme == "https" or not secure]
        return [("Cookie", "; ".join(pairs))] if pairs else []

    def keep(self, host: str, raw: Iterable[tuple[bytes, bytes]]) -> None:
        """Keep the ``Set-Cookie`` headers among ``raw`` (lower-case names, as h11 gives them) for ``host``."""
        for name, value in raw:
            if name == b"set-cookie" and len(value) <= COOKIE_BYTES:
                self._keep_one(host, value.decode("latin-1"))

    def _keep_one(self, host: str, line: str) -> None:
        pair, *attributes = line.split(";")
        name, equals, value = pair.partition("=")
        name, value = name.strip(" \t"), value.strip(" \t")
        if not equals or not name or not all(0x20 < ord(char) < 0x7F for char in name + value.replace(" ", "!")):
            return  # a cookie that cannot go back as it came
        end, secure = _ends_at(attributes, self._clock())
        kept = self._kept.setdefault(host, {})
        if end is not None and end <= self._clock():
            kept.pop(name, None)
        elif name in kept or len(kept) < MAX_COOKIES:
            kept[name] = (value, secure, end)

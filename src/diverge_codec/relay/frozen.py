"""The relay's value classes' shared half: frozen, compared and hashed by their fields, shown without secrets.

``Command``, ``Remote`` and ``NetworkPolicy`` are dataclasses (``dataclasses.fields`` and ``replace`` work)
declared with nothing generated (``init=False, repr=False, eq=False``): ``@dataclass(frozen=True)`` writes
six methods a class as source and compiles each at import, 10.8 million instructions for the three, a
relay's start-up's whole growth since 43bf8bf (issue 44). Here they are written once and compiled with the
module. Each class writes its ``__init__`` (through ``vars``, past the frozen ``__setattr__``) and its
``__repr__``: a header's, an environment variable's and an argument's value, and a URL's user, password and
query, can be credentials, so a repr shows names and counts for them, never the values.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, fields
from typing import Any

__all__ = ["Frozen", "url_shown"]


class Frozen:
    """==, hash and immutability by the dataclass's fields, as ``@dataclass(frozen=True)`` makes them."""

    __slots__ = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, field.name) for field in fields(self))  # type: ignore[arg-type]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


def url_shown(url: str | None) -> str | None:
    """A URL as a repr may show it: its user and password, query and fragment replaced by ``…``."""
    if url is None:
        return None
    from urllib.parse import urlsplit  # not at import: a stdio relay's start-up loads no urllib.parse (its six namedtuples)

    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
    except ValueError:
        return "<a URL that does not parse>"
    return (f"{parts.scheme}://" if parts.scheme else "") + ("…@" if "@" in parts.netloc else "") + host + parts.path \
        + ("?…" if parts.query else "") + ("#…" if parts.fragment else "")

"""The tools-begin cases of issue 15, each against bare orjson on the same payload, and msgspec typed where installed.

Shared by ``test_tools_begin.py`` (pytest-benchmark) and ``tools_begin_instructions.py``
(callgrind instruction counts). The checker's case is measured against decoding the
frames it checks, not against orjson: one checker fed 50 periods per call, since a
checker reads a Begun once and then a period after another.
"""

# No "from __future__ import annotations": msgspec reads the local Structs' annotations as objects.

import importlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Optional

import orjson

from diverge_codec import _bench

try:
    import msgspec
except ImportError:  # the peer is optional
    msgspec = None


def registration(count: int, prefix: str) -> dict[str, Any]:
    return {"secrets": {f"{prefix}{i}": ("fixed", "rotating")[i % 2] for i in range(count)}}


BEGUN_4 = registration(4, "SECRET_")
BEGUN_64 = registration(64, "SECRET_NUMBER_")
VALUES = _bench.VALUES


@dataclass(frozen=True)
class Case:
    """ours against baseline (what the ratio divides by), and msgspec where it is installed."""

    name: str
    baseline_name: str
    baseline: Callable[[], Any]
    ours: Callable[[], Any]
    msgspec: Optional[Callable[[], Any]]
    target: Optional[float]


def _msgspec() -> Optional[dict[str, Any]]:
    if msgspec is None:
        return None

    class Registration(msgspec.Struct):
        secrets: dict[str, Literal["fixed", "rotating"]] = {}

    return {"begun": msgspec.json.Decoder(Registration), "values": msgspec.json.Decoder(dict[str, Any]),
            "encoder": msgspec.json.Encoder(), "Registration": Registration}


def cases(implementation: str = "cython") -> list[Case]:
    suffix = "c" if implementation == "cython" else "py"
    tb = importlib.import_module(f"diverge_codec._tools_begin_{suffix}")
    sequence = importlib.import_module(f"diverge_codec._sequence_{suffix}")
    peer = _msgspec()
    cython = implementation == "cython"
    found = []
    for label, declared, target in (("4 secrets", BEGUN_4, 0.8), ("64 secrets", BEGUN_64, 0.9)):
        body = orjson.dumps(declared)
        payload = b"\x00" + body
        frame = tb.decode(payload)
        typed = None if peer is None else peer["Registration"](secrets=declared["secrets"])
        found.append(Case(f"Begun decode, {label}", "orjson.loads", lambda body=body: orjson.loads(body),
                          lambda payload=payload: tb.decode(payload),
                          None if peer is None else (lambda body=body: peer["begun"].decode(body)), target if cython else None))
        found.append(Case(f"Begun encode, {label}", "orjson.dumps", lambda declared=declared: orjson.dumps(declared),
                          lambda frame=frame: tb.encode(frame),
                          None if peer is None else (lambda typed=typed: peer["encoder"].encode(typed)), 0.9 if cython else None))
    values = orjson.dumps(VALUES)
    inactive_payload = b"\x03" + values
    found.append(Case("Inactive decode", "orjson.loads", lambda: orjson.loads(values), lambda: tb.decode(inactive_payload),
                      None if peer is None else (lambda: peer["values"].decode(values)), 1.05 if cython else None))
    inactive = tb.decode(inactive_payload)
    checker = sequence.ToolsBeginChecker(tb)
    checker.frame(tb.Begun({"session": "rotating", "cursor": "rotating"}))
    frames, payloads = [tb.ACTIVE, inactive] * 50, [b"\x02", inactive_payload] * 50
    # Driven from C (map into a deque of no length), so the figure is the checker's and the
    # decoder's own cost, not that of a Python loop around each.
    found.append(Case("check 50 periods: Active, Inactive", "decode them",
                      lambda: deque(map(tb.decode, payloads), 0), lambda: deque(map(checker.frame, frames), 0),
                      None, 0.3 if cython else None))
    return found

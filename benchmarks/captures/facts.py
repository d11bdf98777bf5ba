"""What each committed capture shows about how its SDK writes messages (stdlib only).

``python benchmarks/captures/facts.py`` prints the facts of every capture as a
Markdown table; ``tests/test_peers.py`` pins them. The facts are read from the bytes,
not assumed: where ``jsonrpc`` stands among the members, whether a line is exactly
the compact serialization of its own members in their own order, whether ``params``
is absent or ``{}``, ``_meta``, lone surrogate escapes, how non-ASCII is written.
"""

from __future__ import annotations

import collections
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

CAPTURES = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "captures"
FAMILIES = ("ts-sdk-everything", "ts-sdk", "mcp-v1", "mcp-v2", "fastmcp")

_SURROGATE = re.compile("[\ud800-\udfff]")  # a pair decodes to one astral character: what is left is lone


@dataclass
class Facts:
    """The facts of one capture; ``notifications`` are messages with ``method`` and no ``id``."""

    notifications: int = 0
    responses: int = 0  # answers to the capture client's requests
    server_requests: int = 0  # the server's own requests (roots, sampling, elicitation)
    jsonrpc_position: collections.Counter[str] = field(default_factory=collections.Counter)  # notifications only
    response_jsonrpc_position: collections.Counter[str] = field(default_factory=collections.Counter)
    member_orders: collections.Counter[str] = field(default_factory=collections.Counter)  # notifications only
    compact: int = 0  # notification lines that are exactly their compact re-serialization
    params_absent: int = 0
    params_empty: int = 0
    meta: int = 0  # notifications whose params hold ``_meta``
    lone_surrogates: int = 0  # notification lines with a lone surrogate escape
    unicode_escapes: int = 0  # notification lines with any ``\\u`` escape
    raw_non_ascii: int = 0  # notification lines with raw UTF-8 beyond ASCII
    methods: collections.Counter[str] = field(default_factory=collections.Counter)
    max_line: int = 0


def _position(keys: list[str]) -> str:
    if "jsonrpc" not in keys:
        return "absent"
    index = keys.index("jsonrpc")
    return "first" if index == 0 else "last" if index == len(keys) - 1 else "middle"


def facts(path: Path) -> Facts:
    """Read one capture line by line, each as the bytes the server wrote."""
    result = Facts()
    for line in path.read_bytes().splitlines():
        result.max_line = max(result.max_line, len(line))
        message = json.loads(line, object_pairs_hook=lambda pairs: pairs)
        members = dict(message)
        keys = [key for key, _ in message]
        if "method" in members and "id" in members:
            result.server_requests += 1
            continue
        if "method" not in members:
            result.responses += 1
            result.response_jsonrpc_position[_position(keys)] += 1
            continue
        result.notifications += 1
        result.methods[members["method"]] += 1
        result.jsonrpc_position[_position(keys)] += 1
        result.member_orders[",".join(keys)] += 1
        params = dict(members["params"]) if "params" in members else None
        result.params_absent += params is None
        result.params_empty += params == {}
        result.meta += params is not None and "_meta" in params
        result.lone_surrogates += _SURROGATE.search(json.dumps(json.loads(line), ensure_ascii=False)) is not None
        result.unicode_escapes += b"\\u" in line
        result.raw_non_ascii += any(byte >= 0x80 for byte in line)
        result.compact += _compact(line)
    return result


def _compact(line: bytes) -> bool:
    """Whether ``line`` is the compact JSON of its own members, in its own order (no whitespace added).

    A lone surrogate has no UTF-8 form: it is compared as the ``\\udXXX`` escape JavaScript writes.
    """
    again = json.dumps(json.loads(line), separators=(",", ":"), ensure_ascii=False)
    return again.encode("utf-8", "backslashreplace") == line


def table() -> str:
    """The facts of every committed capture, as a Markdown table."""
    rows = {family: facts(CAPTURES / f"{family}.jsonl") for family in FAMILIES}
    lines = ["| fact | " + " | ".join(f"`{family}`" for family in FAMILIES) + " |",
             "| --- |" + " --- |" * len(FAMILIES)]

    def row(name: str, value) -> None:  # noqa: ANN001  (a callable of Facts)
        lines.append(f"| {name} | " + " | ".join(str(value(f)) for f in rows.values()) + " |")

    row("notifications / responses / server requests", lambda f: f"{f.notifications} / {f.responses} / {f.server_requests}")
    row("`jsonrpc` in notifications", lambda f: ", ".join(f"{k} {v}" for k, v in sorted(f.jsonrpc_position.items())))
    row("`jsonrpc` in responses", lambda f: ", ".join(f"{k} {v}" for k, v in sorted(f.response_jsonrpc_position.items())))
    row("member orders (notifications)", lambda f: "<br>".join(f"`{k}` {v}" for k, v in sorted(f.member_orders.items())))
    row("compact (no whitespace), own order", lambda f: f"{f.compact}/{f.notifications}")
    row("`params` absent / `{}`", lambda f: f"{f.params_absent} / {f.params_empty}")
    row("`_meta` in params", lambda f: f.meta)
    row("lone surrogate escapes", lambda f: f.lone_surrogates)
    row("lines with `\\u` escapes / raw non-ASCII UTF-8", lambda f: f"{f.unicode_escapes} / {f.raw_non_ascii}")
    row("methods", lambda f: "<br>".join(f"`{k}` {v}" for k, v in sorted(f.methods.items())))
    row("longest line (bytes)", lambda f: f.max_line)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(table() + "\n")

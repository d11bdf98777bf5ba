"""The benchmark cases, shared by ``benchmarks/`` (pytest-benchmark) and ``diverge-codec bench``.

Each case times one codec call against the bare JSON call it wraps, on the same
body, so a figure is a ratio measured in one run rather than a time that depends
on the machine. Requires orjson, which is the baseline.
"""

from __future__ import annotations

import importlib
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson


PROGRESS: dict[str, Any] = {
    "jsonrpc": "2.0",
    "method": "notifications/progress",
    "params": {"progressToken": "tok-1234567890", "progress": 512, "total": 1024, "message": "Downloading layer sha256:abcdef0123456789"},
}
LOGGING: dict[str, Any] = {
    "jsonrpc": "2.0",
    "method": "notifications/message",
    "params": {"level": "info", "logger": "app", "data": {"lines": [f"line {i} of the log, with some words in it" for i in range(38)]}},
}
VALUES: dict[str, Any] = {"session": {"token": "t" * 40, "refresh": "r" * 40, "expires": 1767225600}, "cursor": 42}
RAW_200 = orjson.dumps(PROGRESS).ljust(200)
RAW_64K = orjson.dumps({"method": "x", "params": {"blob": "b" * 65_500}})


@dataclass(frozen=True)
class Case:
    """One measurement: ``run`` of an implementation against ``baseline``, in the same run."""

    name: str
    baseline_name: str
    baseline: Callable[[], Any]
    run: Callable[[], Any]
    target: float | None = None
    """The ratio the issue asks for, where it sets one."""


def modules(implementation: str) -> tuple[Any, Any]:
    suffix = "c" if implementation == "cython" else "py"
    return (
        importlib.import_module(f"diverge_codec._mcp_notifications_{suffix}"),
        importlib.import_module(f"diverge_codec._tools_begin_{suffix}"),
    )


def cases(implementation: str) -> list[Case]:
    mn, tb = modules(implementation)
    cython = implementation == "cython"
    progress, logging, values = orjson.dumps(PROGRESS), orjson.dumps(LOGGING), orjson.dumps(VALUES)
    progress_payload, logging_payload, values_payload = b"\x00" + progress, b"\x00" + logging, b"\x03" + values
    progress_frame, inactive_frame = mn.decode(progress_payload), tb.decode(values_payload)
    batch = [progress_payload] * 100
    bodies = [progress] * 100
    view_64k = memoryview(RAW_64K)
    checkers = importlib.import_module(f"diverge_codec._sequence_{'c' if cython else 'py'}")
    streaming = checkers.McpNotificationsChecker(mn)
    idle = checkers.ToolsBeginChecker(tb)
    idle.frame(tb.Begun({"session": "rotating", "cursor": "rotating"}))
    return [
        Case("decode progress notification (~180 B)", "orjson.loads",
             lambda: orjson.loads(progress), lambda: mn.decode(progress_payload), 1.25 if cython else 2.3),
        Case("decode logging notification (~2 KB)", "orjson.loads",
             lambda: orjson.loads(logging), lambda: mn.decode(logging_payload), 1.08 if cython else None),
        Case("encode progress notification", "orjson.dumps",
             lambda: orjson.dumps(PROGRESS), lambda: mn.encode(progress_frame), 1.3 if cython else None),
        Case("decode tools-begin Inactive", "orjson.loads",
             lambda: orjson.loads(values), lambda: tb.decode(values_payload)),
        Case("encode tools-begin Inactive", "orjson.dumps",
             lambda: orjson.dumps(VALUES), lambda: tb.encode(inactive_frame)),
        Case("decode_many, 100 notifications", "orjson.loads x100",
             lambda: [orjson.loads(body) for body in bodies], lambda: mn.decode_many(batch)),
        Case("frame_notification 64 KB", "copy 64 KB",
             view_64k.tobytes, lambda: mn.frame_notification(RAW_64K), 1.25 if cython else None),
        Case("check a notification (sequence)", "decode it",
             lambda: mn.decode(progress_payload), lambda: streaming.frame(progress_frame)),
        Case("check a period: Active and Inactive (sequence)", "decode them",
             lambda: (tb.decode(b"\x02"), tb.decode(values_payload)),
             lambda: (idle.frame(tb.ACTIVE), idle.frame(inactive_frame))),
    ]


def paired_ns(baseline: Callable[[], Any], candidate: Callable[[], Any], budget_s: float = 0.2, rounds: int = 15) -> tuple[float, float]:
    """Nanoseconds a call for each, the best of rounds that alternate between the two.

    Alternating keeps a slow spell of the machine from landing on one side only;
    the best round is the one the machine disturbed least.
    """
    timers = [timeit.Timer(baseline), timeit.Timer(candidate)]
    numbers = [max(1, int(budget_s / rounds / max(timer.timeit(20) / 20, 1e-9))) for timer in timers]
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for side in (0, 1):
            best[side] = min(best[side], timers[side].timeit(numbers[side]) / numbers[side] * 1e9)
    return best[0], best[1]


def frame_200_ns(implementation: str, repeat: int = 7) -> float:
    """frame_notification of a 200-byte body, timed as the statement itself, without a wrapper call."""
    mn, _ = modules(implementation)
    timer = timeit.Timer("frame(raw)", globals={"frame": mn.frame_notification, "raw": RAW_200})
    number = 200_000
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e9


def ratio_table(implementations: tuple[str, ...] = ("cython", "python"), budget_s: float = 0.2) -> list[dict[str, Any]]:
    rows = []
    for implementation in implementations:
        for case in cases(implementation):
            baseline, ours = paired_ns(case.baseline, case.run, budget_s)
            rows.append({
                "implementation": implementation, "case": case.name, "baseline": case.baseline_name,
                "baseline_ns": baseline, "ns": ours, "ratio": ours / baseline, "target": case.target,
            })
        rows.append({
            "implementation": implementation, "case": "frame_notification 200 B", "baseline": "(absolute)",
            "baseline_ns": None, "ns": frame_200_ns(implementation), "ratio": None,
            "target": 60.0 if implementation == "cython" else None,
        })
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of the ratios."""
    lines = ["| implementation | case | against | ns | ratio | target |", "|---|---|---|---:|---:|---:|"]
    for row in rows:
        ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}x"
        if row["ratio"] is None and row["target"] is not None:
            target = f"< {row['target']:.0f} ns"
        else:
            target = "" if row["target"] is None else f"<= {row['target']:.2f}x"
        lines.append(f"| {row['implementation']} | {row['case']} | {row['baseline']} | {row['ns']:.0f} | {ratio} | {target} |")
    return "\n".join(lines)

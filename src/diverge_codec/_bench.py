"""The benchmark cases, shared by ``benchmarks/`` (pytest-benchmark) and ``diverge-codec bench``.

Each case times one codec call against the bare JSON call it wraps, on the same
body, so a figure is a ratio measured in one run rather than a time that depends
on the machine. The cases require orjson, which is the baseline; the table of targets
(``TARGETS``) does not, so its rendering is checked wherever the tests run.
"""

from __future__ import annotations

import importlib
import json
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

try:
    import orjson
except ImportError:  # cases() says so; the targets need no orjson
    orjson = None  # type: ignore[assignment]


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
RAW_200 = json.dumps(PROGRESS, separators=(",", ":")).encode().ljust(200)  # orjson.dumps' bytes, ASCII alike
RAW_64K = json.dumps({"method": "x", "params": {"blob": "b" * 65_500}}, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Case:
    """One measurement: ``run`` of an implementation against ``baseline``, in the same run."""

    name: str
    baseline_name: str
    baseline: Callable[[], Any]
    run: Callable[[], Any]


@dataclass(frozen=True)
class Target:
    """What a case of ``diverge-codec bench`` should measure at most, on one core."""

    case: str
    implementation: str
    limit: float
    unit: str = "x"
    """``x``: a ratio to the case's baseline; ``ns``: an absolute time a call."""
    strict: bool = False
    """Under the limit, not at it."""

    def met(self, value: float) -> bool:
        return value < self.limit if self.strict else value <= self.limit

    def __str__(self) -> str:
        sign = "<" if self.strict else "<="
        return f"{sign} {self.limit:.0f} ns" if self.unit == "ns" else f"{sign} {self.limit:.2f}x"


FRAME_200 = "frame_notification 200 B"
TARGETS: tuple[Target, ...] = (
    Target("decode progress notification (~180 B)", "cython", 1.25),
    Target("decode progress notification (~180 B)", "python", 2.30),
    Target("decode logging notification (~2 KB)", "cython", 1.08),
    Target("encode progress notification", "cython", 1.45),
    Target("frame_notification 64 KB", "cython", 1.25),
    Target("check a notification (sequence)", "cython", 1.0, strict=True),
    Target("check a period: Active and Inactive (sequence)", "cython", 1.0, strict=True),
    Target(FRAME_200, "cython", 60.0, unit="ns", strict=True),
)
"""The one table of targets: ``bench`` marks each case met or missed by it, and
``docs/bench_targets.md`` is its rendering (a test holds the two together).

The compiled encode's is 1.45x, not the 1.30x this module had: the encode contract's
walk (a refusal of what decode would not read back) raised its cost, and docs/performance.md's
table moved the target with it later. A sequence check's is "well under 1" in words:
checked here as under the time of decoding the same frames.
"""


def target(case: str, implementation: str) -> Target | None:
    """The target a case sets on an implementation, if any."""
    return next((t for t in TARGETS if t.case == case and t.implementation == implementation), None)


def render_targets() -> str:
    """The targets as a Markdown table, as ``docs/bench_targets.md`` holds them."""
    lines = [
        "Targets of `diverge-codec bench`, which marks each case met or missed: a ratio is the time of a call",
        "over its baseline's in the same run (lower is better). Generated from `diverge_codec._bench.TARGETS`;",
        "a test fails when this file differs.", "",
        "| case | implementation | target |", "|---|---|---:|",
    ]
    lines += [f"| {t.case} | {t.implementation} | {t} |" for t in TARGETS]
    return "\n".join(lines) + "\n"


def modules(implementation: str) -> tuple[Any, Any]:
    suffix = "c" if implementation == "cython" else "py"
    return (
        importlib.import_module(f"diverge_codec._mcp_notifications_{suffix}"),
        importlib.import_module(f"diverge_codec._tools_begin_{suffix}"),
    )


def cases(implementation: str) -> list[Case]:
    if orjson is None:
        raise ImportError("the benchmark cases need orjson, their baseline")
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
             lambda: orjson.loads(progress), lambda: mn.decode(progress_payload)),
        Case("decode logging notification (~2 KB)", "orjson.loads",
             lambda: orjson.loads(logging), lambda: mn.decode(logging_payload)),
        Case("encode progress notification", "orjson.dumps",
             lambda: orjson.dumps(PROGRESS), lambda: mn.encode(progress_frame)),
        Case("decode tools-begin Inactive", "orjson.loads",
             lambda: orjson.loads(values), lambda: tb.decode(values_payload)),
        Case("encode tools-begin Inactive", "orjson.dumps",
             lambda: orjson.dumps(VALUES), lambda: tb.encode(inactive_frame)),
        Case("decode_many, 100 notifications", "orjson.loads x100",
             lambda: [orjson.loads(body) for body in bodies], lambda: mn.decode_many(batch)),
        Case("frame_notification 64 KB", "copy 64 KB",
             view_64k.tobytes, lambda: mn.frame_notification(RAW_64K)),
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
    """A row a case and implementation: the times, the ratio, the target (None where none) and whether it was met."""
    rows = []
    for implementation in implementations:
        for case in cases(implementation):
            baseline, ours = paired_ns(case.baseline, case.run, budget_s)
            rows.append(_row(implementation, case.name, case.baseline_name, baseline, ours, ours / baseline))
        rows.append(_row(implementation, FRAME_200, "(absolute)", None, frame_200_ns(implementation), None))
    return rows


def _row(implementation: str, case: str, against: str, baseline_ns: float | None, ns: float, ratio: float | None) -> dict[str, Any]:
    goal = target(case, implementation)
    met = None
    if goal is not None:
        value = ns if goal.unit == "ns" else ratio
        met = value is not None and goal.met(value)
    return {
        "implementation": implementation, "case": case, "baseline": against, "baseline_ns": baseline_ns, "ns": ns,
        "ratio": ratio, "target": None if goal is None else goal.limit, "met": met,
    }


def render(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of the ratios, each against its target: met, missed, or none set."""
    lines = ["| implementation | case | against | ns | ratio | target | met |", "|---|---|---|---:|---:|---:|---|"]
    for row in rows:
        ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}x"
        goal = target(row["case"], row["implementation"])
        met = "" if row.get("met") is None else "met" if row["met"] else "MISSED"
        lines.append(f"| {row['implementation']} | {row['case']} | {row['baseline']} | {row['ns']:.0f} | {ratio} "
                     f"| {'' if goal is None else goal} | {met} |")
    return "\n".join(lines)

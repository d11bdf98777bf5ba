"""diverge-codec bench: the main benchmarks, as ratios against bare orjson."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .. import IMPLEMENTATION
from ._safe import UsageError, escape

TITLE = "diverge-codec: time per call relative to its baseline (lower is better)"


def cmd_bench(args: argparse.Namespace) -> int:
    plt = _pyplot(args.plot) if args.plot else None  # before the run: a missing dependency is known at once
    from .. import _bench

    if getattr(_bench, "orjson", None) is None:
        raise UsageError("bench needs orjson, the baseline it measures against")
    implementations = ("cython", "python") if IMPLEMENTATION == "cython" else ("python",)
    rows = _bench.ratio_table(implementations, budget_s=0.05 if args.quick else 0.2)
    print(_bench.render(rows), flush=True)
    missed = [row for row in rows if row["met"] is False]
    print(f"targets: {sum(row['met'] is True for row in rows)} met, {len(missed)} missed"
          + (" (timings depend on the machine's load: run again before reading much into it)" if missed else ""))
    if plt is not None:
        plot(plt, rows, args.plot)
        print(f"plot written to {escape(args.plot)}")
    return 0


def _pyplot(path: str) -> Any:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"--plot: no folder {escape(folder)} to write into")
    try:
        import matplotlib  # type: ignore[import-not-found,unused-ignore]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'diverge-codec[plot]'") from None
    return plt


def plot(plt: Any, rows: list[dict[str, Any]], path: str) -> None:
    """Bars of the ratios, a tick at each target of _bench.TARGETS (docs/bench_targets.md), the baseline at 1."""
    rated = [row for row in rows if row["ratio"] is not None]
    cases = list(dict.fromkeys(row["case"] for row in rated))
    implementations = list(dict.fromkeys(row["implementation"] for row in rated))
    figure, axes = plt.subplots(figsize=(10, 0.6 * len(cases) + 2.2))
    height = 0.8 / len(implementations)
    targets_drawn = False
    for offset, implementation in enumerate(implementations):
        mine = {row["case"]: row for row in rated if row["implementation"] == implementation}
        ys = [i + offset * height for i in range(len(cases))]
        axes.barh(ys, [mine[c]["ratio"] if c in mine else 0 for c in cases], height, label=implementation)
        for y, case in zip(ys, cases):
            target = mine.get(case, {}).get("target")
            if target is not None:
                axes.plot([target, target], [y - height / 2, y + height / 2], color="red", linewidth=2,
                          label=None if targets_drawn else "target (docs/bench_targets.md)")
                targets_drawn = True
    axes.axvline(1.0, color="black", linewidth=0.8, linestyle="--", label="baseline (1.0 = the same time)")
    axes.set_yticks([i + height * (len(implementations) - 1) / 2 for i in range(len(cases))], cases)
    axes.invert_yaxis()
    axes.set_xlabel("time relative to the bare baseline (lower is better)")
    axes.set_title(TITLE)
    absolute = [f"frame_notification 200 B, {row['implementation']}: {row['ns']:.0f} ns"
                + (f" (target < {row['target']:.0f} ns)" if row["target"] is not None else "")
                for row in rows if row["ratio"] is None]
    if absolute:
        figure.text(0.01, 0.01, "; ".join(absolute), fontsize=8)
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    try:
        figure.savefig(path)
    except OSError as error:
        raise UsageError(f"cannot write {escape(path)}: {error.strerror or type(error).__name__}") from None
    finally:
        plt.close(figure)


EPILOG = """\
Each case times a codec call and the bare JSON call it wraps, alternating, in the same
run: a ratio of 1.00x is the same time as the baseline, lower is better. "target" is
the case's target (_bench.TARGETS, rendered as docs/bench_targets.md) and "met" says
whether this run met it (MISSED if not). Timings depend on the machine's load. Exit
status 0 whatever the figures: a benchmark reports, it does not gate.

examples:
  diverge-codec bench --quick
  diverge-codec bench --plot ratios.png      (needs: pip install 'diverge-codec[plot]')
"""


def register(commands: Any) -> None:
    bench = commands.add_parser("bench", help="the main benchmarks, as ratios against bare orjson",
                                description="The main benchmarks, as ratios against bare orjson.", epilog=EPILOG)
    bench.add_argument("--quick", action="store_true", help="shorter timing loops")
    bench.add_argument("--plot", metavar="FILE.png", help="also draw the ratios and targets as a chart (needs the plot extra)")
    bench.set_defaults(run=cmd_bench)

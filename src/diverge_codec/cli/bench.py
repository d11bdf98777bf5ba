"""``diverge-codec bench``: the main benchmarks, as ratios against bare orjson."""

from __future__ import annotations

import argparse
from typing import Any

from .. import IMPLEMENTATION
from ._common import UsageError


def cmd_bench(args: argparse.Namespace) -> int:
    try:
        from .. import _bench
    except ImportError:
        raise UsageError("bench needs orjson, the baseline it measures against") from None
    implementations = ("cython", "python") if IMPLEMENTATION == "cython" else ("python",)
    rows = _bench.ratio_table(implementations, budget_s=0.05 if args.quick else 0.2)
    print(_bench.render(rows))
    if args.plot:
        plot(rows, args.plot)
        print(f"plot written to {args.plot}")
    return 0


def plot(rows: list[dict[str, Any]], path: str) -> None:
    try:
        import matplotlib  # type: ignore[import-not-found,unused-ignore]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'diverge-codec[plot]'") from None
    rated = [row for row in rows if row["ratio"] is not None]
    cases = list(dict.fromkeys(row["case"] for row in rated))
    figure, axes = plt.subplots(figsize=(9, 0.5 * len(cases) + 1.5))
    height = 0.38
    for offset, implementation in enumerate(dict.fromkeys(row["implementation"] for row in rated)):
        ratios = {row["case"]: row["ratio"] for row in rated if row["implementation"] == implementation}
        axes.barh([i + offset * height for i in range(len(cases))], [ratios.get(c, 0) for c in cases], height, label=implementation)
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.set_yticks([i + height / 2 for i in range(len(cases))], cases)
    axes.invert_yaxis()
    axes.set_xlabel("time relative to the bare baseline (1.0 = the same)")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path)


def register(commands: Any) -> None:
    bench = commands.add_parser("bench", help="the main benchmarks, as ratios against bare orjson")
    bench.add_argument("--quick", action="store_true", help="shorter timing loops")
    bench.add_argument("--plot", metavar="FILE.png", help="draw the ratios (needs the plot extra)")
    bench.set_defaults(run=cmd_bench)

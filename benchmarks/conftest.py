"""Writes the ratio table at the end of a benchmark run: each codec call against its baseline, same run.

The baseline is bare orjson for the codec cases and the parse-and-reserialize relay for
the relay cases; where a case counts items (notifications), a per-second figure too.
"""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    by_group: dict[str, dict[str, tuple[float, int | None]]] = {}
    for bench in session.benchmarks:
        entry = (bench.stats.min * 1e9, bench.extra_info.get("items"))
        by_group.setdefault(bench.group, {})[bench.extra_info.get("who", bench.name)] = entry
    lines = ["| case | implementation | ns (min) | ratio to baseline | per second |", "|---|---|---:|---:|---:|"]
    for group, entries in by_group.items():
        baseline = entries.get("baseline")
        for label, (ns, items) in entries.items():
            ratio = f"{ns / baseline[0]:.2f}x" if baseline and label != "baseline" else ""
            if label == "baseline" and not items:
                continue  # a bare orjson call: only its ratio is of interest
            rate = f"{items / (ns * 1e-9):,.0f}" if items else ""
            lines.append(f"| {group} | {label} | {ns:.0f} | {ratio} | {rate} |")
    table = "\n".join(lines)
    RESULTS.write_text("Ratios from one pytest-benchmark run (min of rounds), baseline measured in the same run.\n\n" + table + "\n")
    terminalreporter.write_sep("=", "ratios against bare orjson (written to benchmarks/RESULTS.md)")
    terminalreporter.write_line(table)

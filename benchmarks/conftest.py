"""Writes the ratio table at the end of a benchmark run: each codec call against bare orjson, same run."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    by_group: dict[str, dict[str, float]] = {}
    for bench in session.benchmarks:
        by_group.setdefault(bench.group, {})[bench.extra_info.get("who", bench.name)] = bench.stats.min * 1e9
    lines = ["| case | implementation | ns (min) | ratio to baseline |", "|---|---|---:|---:|"]
    for group, entries in by_group.items():
        baseline = entries.get("baseline")
        for label, ns in entries.items():
            if label == "baseline":
                continue
            ratio = f"{ns / baseline:.2f}x" if baseline else ""
            lines.append(f"| {group} | {label} | {ns:.0f} | {ratio} |")
    table = "\n".join(lines)
    RESULTS.write_text("Ratios from one pytest-benchmark run (min of rounds), baseline measured in the same run.\n\n" + table + "\n")
    terminalreporter.write_sep("=", "ratios against bare orjson (written to benchmarks/RESULTS.md)")
    terminalreporter.write_line(table)

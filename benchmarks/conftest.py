"""Writes the ratio table at the end of a benchmark run: each codec call against its baseline, same run.

The baseline is bare orjson for the codec cases and the parse-and-reserialize relay for
the relay cases; where a case counts items (notifications), a per-second figure too.
"ratio to baseline" divides pytest-benchmark's minimums, which are measured one after
the other; "interleaved" is the same ratio measured with the two calls alternating
(``_bench.paired_ns``), which a slow spell of a shared machine cannot tilt.
"""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    by_group: dict[str, dict[str, tuple[float, int | None, float | None]]] = {}
    for bench in session.benchmarks:
        entry = (bench.stats.min * 1e9, bench.extra_info.get("items"), bench.extra_info.get("interleaved"))
        by_group.setdefault(bench.group, {})[bench.extra_info.get("who", bench.name)] = entry
    lines = ["| case | implementation | ns (min) | ratio to baseline | interleaved | per second |",
             "|---|---|---:|---:|---:|---:|"]
    for group, entries in by_group.items():
        baseline = entries.get("baseline")
        for label, (ns, items, interleaved) in entries.items():
            ratio = f"{ns / baseline[0]:.2f}x" if baseline and label != "baseline" else ""
            if label == "baseline" and not items:
                continue  # a bare orjson call: only its ratio is of interest
            alternating = f"{interleaved:.2f}x" if interleaved else ""
            rate = f"{items / (ns * 1e-9):,.0f}" if items else ""
            lines.append(f"| {group} | {label} | {ns:.0f} | {ratio} | {alternating} | {rate} |")
    table = "\n".join(lines)
    RESULTS.write_text("Ratios from one pytest-benchmark run (min of rounds), baseline measured in the same run;\n"
                       "interleaved: the same ratio with the two calls alternating.\n\n" + table + "\n")
    terminalreporter.write_sep("=", "ratios against bare orjson (written to benchmarks/RESULTS.md)")
    terminalreporter.write_line(table)

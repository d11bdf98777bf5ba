"""pytest-benchmark of the tools-begin cases (issue 15): the baseline, msgspec typed where installed, both cores.

Nothing asserts a time. Instruction counts, which a loaded machine does not tilt:
``tools_begin_instructions.py``.
"""

from __future__ import annotations

import pytest
from tools_begin_cases import cases, msgspec

from diverge_codec import _bench

pytestmark = pytest.mark.benchmark(min_time=0.0002, warmup=True)

CASES = {case.name: case for case in cases("cython")}
PURE = {case.name: case for case in cases("python")}


@pytest.mark.parametrize("who", ["baseline", "msgspec", "cython", "python"])
@pytest.mark.parametrize("name", list(CASES))
def test_tools_begin(benchmark, name, who):
    case = PURE[name] if who == "python" else CASES[name]
    if who == "msgspec" and case.msgspec is None:
        pytest.skip("msgspec is not installed (the bench extra)" if msgspec is None else "no msgspec peer for this case")
    benchmark.group = f"tools-begin {name}"
    benchmark.extra_info["who"] = who
    benchmark.name = who
    function = {"baseline": case.baseline, "msgspec": case.msgspec}.get(who, case.ours)
    result = benchmark(function)
    if who in ("cython", "python"):
        assert repr(result) == repr(function())  # the timed call did the work it names
    if who != "baseline":
        baseline_ns, ours_ns = _bench.paired_ns(case.baseline, function)
        benchmark.extra_info["interleaved"] = ours_ns / baseline_ns

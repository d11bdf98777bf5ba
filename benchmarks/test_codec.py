"""pytest-benchmark over the shared cases: each case's baseline and both cores, grouped so ratios come from one run.

Run: ``pytest benchmarks/`` (after installing the test extra). Nothing here asserts a time.
"""

from __future__ import annotations

import pytest

from diverge_codec import _bench

# A round is a batch of calls lasting at least 200 us, not one call: the minimum of single
# calls is an extreme value that a lucky call sets (seen: a baseline 15% below its usual
# minimum in one run and not the next), while a batch's mean is steady from run to run.
pytestmark = pytest.mark.benchmark(min_time=0.0002, warmup=True)

CASES = {case.name: case for case in _bench.cases("cython")}
PURE = {case.name: case for case in _bench.cases("python")}


# "who" is the inner loop, so each case's three runs are adjacent: a process that has
# run for longer (more memory held, other pools in use) does not time one side only.
@pytest.mark.parametrize("who", ["baseline", "cython", "python"])
@pytest.mark.parametrize("name", list(CASES))
def test_case(benchmark, name, who):
    benchmark.group = name
    case = CASES[name] if who != "python" else PURE[name]
    benchmark.extra_info["who"] = who
    benchmark.name = who
    function = case.baseline if who == "baseline" else case.run
    result = benchmark(function)
    assert repr(result) == repr(function())  # the timed call did the work it names
    if who != "baseline":  # the ratio again, the two calls alternating: a drift of the machine hits both
        baseline_ns, ours_ns = _bench.paired_ns(case.baseline, case.run)
        benchmark.extra_info["interleaved"] = ours_ns / baseline_ns


@pytest.mark.parametrize("who", ["cython", "python"])
def test_frame_notification_200(benchmark, who):
    mn, _ = _bench.modules(who)
    benchmark.group = "frame_notification 200 B"
    benchmark.extra_info["who"] = who
    framed = benchmark(mn.frame_notification, _bench.RAW_200)
    assert framed == b"\x00" + _bench.RAW_200

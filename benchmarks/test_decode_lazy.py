"""pytest-benchmark of decode_lazy, routing by method, against bare orjson.loads of the body, in one run.

Issue 15's targets (compiled): at most 0.35x at ~180 B, at most 0.2x at 64 KB; issue 25's: the
same 0.2x on every shape (numbers, escaped text, base64, a deep tree), and the pure core at most
1.2x at 64 KB. Issue 35's, in CPU time (benchmarks/cpu_time.py, which prints them met or missed):
0.5x on escape-dense text, 0.35x on every other 64 KB shape, and no slower than msgspec's Raw
routing on numbers. The msgspec side of the same groups is in test_peers.py. Nothing here asserts a time.
"""

from __future__ import annotations

import pytest
from peer_cases import peer_cases

from diverge_codec import _bench

pytestmark = pytest.mark.benchmark(min_time=0.0002, warmup=True)

CASES = {case.name: case for case in peer_cases("cython") if "decode_lazy" in case.name}
PURE = {case.name: case for case in peer_cases("python") if "decode_lazy" in case.name}


@pytest.mark.parametrize("who", ["baseline", "cython", "python"])
@pytest.mark.parametrize("name", list(CASES))
def test_route(benchmark, name, who):
    benchmark.group = name
    case = PURE[name] if who == "python" else CASES[name]
    benchmark.extra_info["who"] = who
    benchmark.name = who
    function = case.orjson if who == "baseline" else case.ours
    result = benchmark(function)
    assert repr(result) == repr(function())  # the timed call did the work it names
    if who != "baseline":
        baseline_ns, ours_ns = _bench.paired_ns(case.orjson, case.ours)
        benchmark.extra_info["interleaved"] = ours_ns / baseline_ns
        benchmark.extra_info["target"] = case.target

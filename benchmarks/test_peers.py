"""pytest-benchmark against the peers on the same payloads: bare orjson (the baseline), msgspec, both cores.

msgspec is optional (the ``bench`` extra): without it its runs are skipped, not faked.
The routing groups' orjson and own runs are in test_decode_lazy.py; run both files
together for the whole table. Ratios to msgspec: ``peers_table.py``.
"""

from __future__ import annotations

import pytest
from peer_cases import msgspec, peer_cases

from diverge_codec import _bench

pytestmark = pytest.mark.benchmark(min_time=0.0002, warmup=True)

CASES = {case.name: case for case in peer_cases("cython")}
PURE = {case.name: case for case in peer_cases("python")}
OWN = [name for name in CASES if "decode_lazy" not in name]  # decode_lazy's own runs: test_decode_lazy.py


@pytest.mark.parametrize("who", ["baseline", "msgspec", "cython", "python"])
@pytest.mark.parametrize("name", list(CASES))
def test_peer(benchmark, name, who):
    if who == "msgspec" and msgspec is None:
        pytest.skip("msgspec is not installed (the bench extra)")
    if who != "msgspec" and name not in OWN:
        pytest.skip("measured in test_decode_lazy.py")
    benchmark.group = name
    case = PURE[name] if who == "python" else CASES[name]
    benchmark.extra_info["who"] = who
    benchmark.name = who
    function = {"baseline": case.orjson, "msgspec": case.msgspec}.get(who, case.ours)
    result = benchmark(function)
    assert repr(result) == repr(function()) or who == "msgspec"  # msgspec's Structs repr by value too, but Raw does not
    if who != "baseline":
        baseline_ns, ours_ns = _bench.paired_ns(case.orjson, function)
        benchmark.extra_info["interleaved"] = ours_ns / baseline_ns

"""The backend differential (``fuzz/backend_targets.py``) over the committed corpus, and over hypothesis' inputs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import ALLOW_NO_EXTENSION
from strategies import dump, json_values, mutated

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
CORPUS = sorted((FUZZ / "corpus").glob("*"))

pytest.importorskip("orjson", reason="the differential is orjson against the stdlib path")
if ALLOW_NO_EXTENSION:
    pytest.importorskip("diverge_codec._tools_begin_c", reason="the target compares the compiled core")
sys.path.insert(0, str(FUZZ))
import backend_targets  # noqa: E402


@pytest.mark.parametrize("seed", CORPUS, ids=lambda path: path.name)
def test_every_seed_passes_the_backend_target(seed):
    backend_targets.check(seed.read_bytes()[1:])


@given(body=st.one_of(json_values.map(dump), mutated(json_values.map(dump)), st.binary(max_size=30)), tail=st.binary(max_size=8))
def test_any_input_passes_the_backend_target(body, tail):
    backend_targets.check(body + tail)


def test_the_target_catches_a_backend_that_writes_nan(monkeypatch):
    import orjson

    from diverge_codec import _json

    monkeypatch.setattr(_json, "_orjson_dumps", orjson.dumps)  # what main did: NaN written as null
    with pytest.raises(AssertionError, match="write this value differently"):
        backend_targets.check(b"[1]\x00")

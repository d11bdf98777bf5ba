"""The fuzzer's committed corpus, replayed through its targets (``fuzz/targets.py``) on every test run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import ALLOW_NO_EXTENSION

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
CORPUS = sorted((FUZZ / "corpus").glob("*"))

pytest.importorskip("orjson", reason="the differential against the stdlib path needs orjson")
if ALLOW_NO_EXTENSION:
    pytest.importorskip("diverge_codec._tools_begin_c", reason="the targets compare the compiled core")
sys.path.insert(0, str(FUZZ))
import targets  # noqa: E402


def test_the_corpus_is_there():
    assert len(CORPUS) >= 50, f"fuzz/corpus beside the tests holds {len(CORPUS)} seeds"


@pytest.mark.parametrize("seed", CORPUS, ids=lambda path: path.name)
def test_every_seed_passes_every_target(seed):
    targets.check(seed.read_bytes())


def test_the_targets_catch_a_disagreement(monkeypatch):
    import diverge_codec._tools_begin_py as pure

    monkeypatch.setattr(pure, "decode", lambda data: pure.ACTIVE)
    with pytest.raises(AssertionError, match="_tools_begin_c and diverge_codec._tools_begin_py differ"):
        targets.check(b'\x03{"s":1}')


def test_the_targets_let_only_frame_errors_out(monkeypatch):
    import diverge_codec._mcp_notifications_c as compiled

    def broken(data):
        raise KeyError("not a FrameError")

    monkeypatch.setattr(compiled, "decode", broken)
    with pytest.raises(KeyError):
        targets.check(b"\x00{}")

"""Edges of the sequence checkers that planted bugs survived (docs/mutation.md): a payload the codec
refuses raises the codec's error and leaves the checker as it was; the public module picks the core
the install chose."""

from __future__ import annotations

import importlib

import pytest

from diverge_codec import _implementation, errors, sequence
from diverge_codec.sequence import State


@pytest.mark.parametrize("payload, error", [(b"", errors.ToolsBeginEmptyFrameError), (b"\x00{", errors.ToolsBeginFrameError)])
def test_a_payload_the_codec_refuses_raises_its_error_and_changes_nothing(seq, payload, error):
    checker = seq.ToolsBeginChecker()
    with pytest.raises(error):
        checker.payload(payload)
    assert (checker.frames, checker.state, checker.violation) == (0, State.NOT_BEGUN, None)
    assert checker.payload(b'\x00{"secrets":{}}').secrets == {} and checker.frames == 1


@pytest.mark.parametrize("implementation, core", [("python", "_sequence_py"), ("cython", "_sequence_c")])
def test_the_public_module_takes_the_checkers_of_the_core_the_install_chose(monkeypatch, implementation, core):
    pytest.importorskip(f"diverge_codec.{core}")
    monkeypatch.setattr(_implementation, "IMPLEMENTATION", implementation)
    try:
        reloaded = importlib.reload(sequence)
        assert reloaded.ToolsBeginChecker.__module__ == reloaded.McpNotificationsChecker.__module__ == f"diverge_codec.{core}"
    finally:
        monkeypatch.undo()
        importlib.reload(sequence)

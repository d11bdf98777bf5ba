"""Edges of the sequence checkers that planted bugs survived (docs/mutation.md): a payload the codec
refuses raises the codec's error and leaves the checker as it was; the public module picks the core
the install chose."""

from __future__ import annotations

import importlib

import pytest

from diverge_codec import _implementation, errors, sequence
from diverge_codec.errors import RemoteProtocolError
from diverge_codec.sequence import Rule, State


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


def test_an_inactive_of_as_many_names_but_another_is_refused(seq, tb):
    """The same count is not the same names: a size test alone would pass it."""
    checker = seq.ToolsBeginChecker(tb)
    for frame in (tb.Begun({"session": "rotating", "refresh": "rotating", "api": "fixed"}), tb.ACTIVE):
        checker.frame(frame)
    with pytest.raises(RemoteProtocolError) as caught:
        checker.frame(tb.Inactive({"session": 1, "api": 2}))
    assert caught.value.rule is Rule.INACTIVE_CARRIES_ROTATING and caught.value.index == 2
    assert str(caught.value).endswith("(1 missing, 1 not declared rotating)")

"""Each sequence rule of both channels, pinned by a sequence that breaks it and one that keeps it, on both cores."""

from __future__ import annotations

import pytest

from diverge_codec import ErrorData, ProviderError
from diverge_codec.errors import LocalProtocolError, RemoteProtocolError
from diverge_codec.sequence import McpNotificationsChecker, Rule, State, ToolsBeginChecker, check

SECRETS = {"api": "fixed", "session": "rotating", "refresh": "rotating"}


def tb_frames(tb, script):
    """A script like "B A I A E" into frames: B Begun, E Error, A Active, I Inactive (all rotating names)."""
    make = {
        "B": lambda: tb.Begun(SECRETS),
        "E": lambda: tb.Error(ProviderError("x")),
        "A": lambda: tb.ACTIVE,
        "I": lambda: tb.Inactive({"session": 1, "refresh": 2}),
    }
    return [make[letter]() for letter in script.split()]


def run_tb(tb, script, finish=True):
    checker = ToolsBeginChecker(tb)
    for frame in tb_frames(tb, script):
        checker.frame(frame)
    if finish:
        checker.finish()
    return checker


KEEPS = [
    ("B", State.FINISHED),
    ("B A I", State.FINISHED),
    ("B A I A I A I", State.FINISHED),
    ("E", State.ENDED_WITH_ERROR),
    ("B A E", State.ENDED_WITH_ERROR),
    ("B A I A E", State.ENDED_WITH_ERROR),
]


@pytest.mark.parametrize(("script", "final"), KEEPS)
def test_tools_begin_sequences_that_keep_the_rules(tb, script, final):
    checker = run_tb(tb, script)
    assert checker.state is final and checker.finished
    assert checker.periods == script.split().count("I")
    assert checker.frames == len(script.split())


BREAKS = [
    ("A", Rule.BEGUN_FIRST, 0, "Active"),
    ("I", Rule.BEGUN_FIRST, 0, "Inactive"),
    ("B B", Rule.ONE_BEGUN, 1, "Begun"),
    ("B A B", Rule.ONE_BEGUN, 2, "Begun"),
    ("B A A", Rule.NO_ACTIVE_IN_PERIOD, 2, "Active"),
    ("B I", Rule.NO_INACTIVE_OUTSIDE_PERIOD, 1, "Inactive"),
    ("B A I I", Rule.NO_INACTIVE_OUTSIDE_PERIOD, 3, "Inactive"),
    ("B E", Rule.ERROR_IN_PLACE_OF_INACTIVE, 1, "Error"),
    ("B A I E", Rule.ERROR_IN_PLACE_OF_INACTIVE, 3, "Error"),
    ("E E", Rule.NOTHING_AFTER_ERROR, 1, "Error"),
    ("E B", Rule.NOTHING_AFTER_ERROR, 1, "Begun"),
    ("B A E I", Rule.NOTHING_AFTER_ERROR, 3, "Inactive"),
]


@pytest.mark.parametrize(("script", "rule", "index", "variant"), BREAKS)
def test_tools_begin_sequences_that_break_a_rule(tb, script, rule, index, variant):
    with pytest.raises(RemoteProtocolError) as caught:
        run_tb(tb, script, finish=False)
    error = caught.value
    assert (error.rule, error.index, error.variant) == (rule, index, variant)
    assert str(error) == f"tools-begin: frame {index} ({variant}) breaks the rule: {rule.value}"


def test_finish_inside_a_period_breaks_a_rule(tb):
    checker = run_tb(tb, "B A", finish=False)
    with pytest.raises(RemoteProtocolError) as caught:
        checker.finish()
    assert caught.value.rule is Rule.PERIOD_CLOSED_BEFORE_FINISH and caught.value.index is None
    assert str(caught.value) == f"tools-begin: the finish breaks the rule: {Rule.PERIOD_CLOSED_BEFORE_FINISH.value}"


def test_nothing_after_the_finish(tb):
    checker = run_tb(tb, "B A I")
    with pytest.raises(RemoteProtocolError) as caught:
        checker.frame(tb.ACTIVE)
    assert caught.value.rule is Rule.NOTHING_AFTER_FINISH and caught.value.index == 3
    again = run_tb(tb, "B")
    with pytest.raises(RemoteProtocolError):
        again.finish()


def test_finish_with_nothing_is_unreadable_not_a_violation(tb):
    checker = ToolsBeginChecker(tb)
    assert checker.finish() is State.UNREADABLE
    assert checker.unreadable and checker.violation is None


def test_inactive_must_carry_exactly_the_rotating_names(tb):
    for values, detail in (({"session": 1}, "1 missing, 0 not declared rotating"),
                           ({"session": 1, "refresh": 2, "api": 3}, "0 missing, 1 not declared rotating"),
                           ({}, "2 missing, 0 not declared rotating")):
        checker = ToolsBeginChecker(tb)
        checker.frame(tb.Begun(SECRETS))
        checker.frame(tb.ACTIVE)
        with pytest.raises(RemoteProtocolError) as caught:
            checker.frame(tb.Inactive(values))
        assert caught.value.rule is Rule.INACTIVE_CARRIES_ROTATING and caught.value.index == 2
        assert str(caught.value).endswith(f"({detail})")
    keeps = ToolsBeginChecker(tb)
    for frame in (tb.Begun({"api": "fixed"}), tb.ACTIVE, tb.Inactive({})):
        keeps.frame(frame)
    assert keeps.state is State.IDLE and keeps.periods == 1


def test_checker_exposes_what_it_learned(tb):
    checker = ToolsBeginChecker(tb)
    assert checker.state is State.NOT_BEGUN and checker.declaration is None
    checker.payload(b'\x00{"secrets":{"a":"fixed","b":"rotating"}}')
    assert checker.state is State.IDLE
    assert list(checker.declaration) == ["a", "b"] and checker.rotating == {"b"}
    checker.payload(b"\x02")
    assert checker.state is State.ACTIVE
    frame = checker.payload(b'\x03{"b":"v"}')
    assert frame == tb.Inactive({"b": "v"}) and checker.periods == 1


def test_checker_refuses_use_after_a_violation(tb):
    checker = ToolsBeginChecker(tb)
    with pytest.raises(RemoteProtocolError):
        checker.frame(tb.ACTIVE)
    with pytest.raises(LocalProtocolError, match="already reported a violation"):
        checker.frame(tb.Begun())
    with pytest.raises(LocalProtocolError):
        checker.finish()


def test_violations_never_quote_values(tb):
    checker = ToolsBeginChecker(tb)
    checker.frame(tb.Begun({"s": "rotating"}))
    checker.frame(tb.ACTIVE)
    with pytest.raises(RemoteProtocolError) as caught:
        checker.frame(tb.Inactive({"s": "MARKER-1", "MARKER-2": "MARKER-3"}))
    assert "MARKER" not in str(caught.value) and "MARKER" not in repr(caught.value.args)
    assert "MARKER" not in repr(checker)


# ---- mcp-notifications -------------------------------------------------------


def mn_frames(mn, script):
    make = {"N": lambda: mn.Notification({"method": "m"}), "E": lambda: mn.Error(ErrorData(1, "gone"))}
    return [make[letter]() for letter in script.split()]


@pytest.mark.parametrize(("script", "final"), [("N", State.FINISHED), ("N N N", State.FINISHED), ("E", State.ENDED_WITH_ERROR)])
def test_notifications_sequences_that_keep_the_rules(mn, script, final):
    checker = McpNotificationsChecker(mn)
    for frame in mn_frames(mn, script):
        checker.frame(frame)
    assert checker.state in (State.STREAMING, State.ENDED_WITH_ERROR)
    assert checker.finish() is final
    assert checker.notifications == script.split().count("N")


@pytest.mark.parametrize(
    ("script", "rule", "index", "variant"),
    [
        ("N E", Rule.ERROR_BEFORE_NOTIFICATIONS, 1, "Error"),
        ("E N", Rule.NOTHING_AFTER_ERROR, 1, "Notification"),
        ("E E", Rule.NOTHING_AFTER_ERROR, 1, "Error"),
    ],
)
def test_notifications_sequences_that_break_a_rule(mn, script, rule, index, variant):
    checker = McpNotificationsChecker(mn)
    with pytest.raises(RemoteProtocolError) as caught:
        for frame in mn_frames(mn, script):
            checker.frame(frame)
    assert (caught.value.rule, caught.value.index, caught.value.variant) == (rule, index, variant)
    assert str(caught.value).startswith("mcp-notifications: frame")


def test_notifications_late_error_option(mn):
    checker = McpNotificationsChecker(mn, allow_error_after_notifications=True)
    for frame in mn_frames(mn, "N N E"):
        checker.frame(frame)
    assert checker.state is State.ENDED_WITH_ERROR
    with pytest.raises(RemoteProtocolError) as caught:
        checker.frame(mn.Notification({"method": "m"}))
    assert caught.value.rule is Rule.NOTHING_AFTER_ERROR


def test_notifications_finish_with_nothing_and_after_finish(mn):
    assert McpNotificationsChecker(mn).finish() is State.UNREADABLE
    checker = McpNotificationsChecker(mn)
    assert check(checker, [b'\x00{"method":"a"}']) is State.FINISHED
    with pytest.raises(RemoteProtocolError) as caught:
        checker.payload(b'\x00{"method":"a"}')
    assert caught.value.rule is Rule.NOTHING_AFTER_FINISH


def test_check_helper_leaves_open_when_asked(mn):
    checker = McpNotificationsChecker(mn)
    assert check(checker, [b'\x00{"method":"a"}'], finished=False) is State.STREAMING
    assert not checker.finished

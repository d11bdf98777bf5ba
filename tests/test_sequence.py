"""Each sequence rule of both channels, pinned by a sequence that breaks it and one that keeps it, on both cores."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diverge_codec import ErrorData, ProviderError
from diverge_codec.errors import LocalProtocolError, RemoteProtocolError
from diverge_codec.sequence import Rule, State, check

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


def run_tb(seq, tb, script, finish=True):
    checker = seq.ToolsBeginChecker(tb)
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
def test_tools_begin_sequences_that_keep_the_rules(seq, tb, script, final):
    checker = run_tb(seq, tb, script)
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
def test_tools_begin_sequences_that_break_a_rule(seq, tb, script, rule, index, variant):
    with pytest.raises(RemoteProtocolError) as caught:
        run_tb(seq, tb, script, finish=False)
    error = caught.value
    assert (error.rule, error.index, error.variant) == (rule, index, variant)
    assert str(error) == f"tools-begin: frame {index} ({variant}) breaks the rule: {rule.value}"


def test_finish_inside_a_period_breaks_a_rule(seq, tb):
    checker = run_tb(seq, tb, "B A", finish=False)
    with pytest.raises(RemoteProtocolError) as caught:
        checker.finish()
    assert caught.value.rule is Rule.PERIOD_CLOSED_BEFORE_FINISH and caught.value.index is None
    assert str(caught.value) == f"tools-begin: the finish breaks the rule: {Rule.PERIOD_CLOSED_BEFORE_FINISH.value}"


def test_nothing_after_the_finish(seq, tb):
    checker = run_tb(seq, tb, "B A I")
    with pytest.raises(RemoteProtocolError) as caught:
        checker.frame(tb.ACTIVE)
    assert caught.value.rule is Rule.NOTHING_AFTER_FINISH and caught.value.index == 3
    again = run_tb(seq, tb, "B")
    with pytest.raises(RemoteProtocolError):
        again.finish()


def test_finish_with_nothing_is_unreadable_not_a_violation(seq, tb):
    checker = seq.ToolsBeginChecker(tb)
    assert checker.finish() is State.UNREADABLE
    assert checker.unreadable and checker.violation is None


def test_inactive_must_carry_exactly_the_rotating_names(seq, tb):
    for values, detail in (({"session": 1}, "1 missing, 0 not declared rotating"),
                           ({"session": 1, "refresh": 2, "api": 3}, "0 missing, 1 not declared rotating"),
                           ({}, "2 missing, 0 not declared rotating")):
        checker = seq.ToolsBeginChecker(tb)
        checker.frame(tb.Begun(SECRETS))
        checker.frame(tb.ACTIVE)
        with pytest.raises(RemoteProtocolError) as caught:
            checker.frame(tb.Inactive(values))
        assert caught.value.rule is Rule.INACTIVE_CARRIES_ROTATING and caught.value.index == 2
        assert str(caught.value).endswith(f"({detail})")
    keeps = seq.ToolsBeginChecker(tb)
    for frame in (tb.Begun({"api": "fixed"}), tb.ACTIVE, tb.Inactive({})):
        keeps.frame(frame)
    assert keeps.state is State.IDLE and keeps.periods == 1


def test_names_matched_once_do_not_vouch_for_other_names(seq, tb):
    """The compiled checker keeps the name objects of the last Inactive that matched, and the
    decoder hands out the same name objects again: an Inactive with a name fewer, one more, or
    the same names in another order must still be held to the rotating names, by any checker."""
    begun_ab, begun_a = b'\x00{"secrets":{"a":"rotating","b":"rotating"}}', b'\x00{"secrets":{"a":"rotating"}}'
    for begun, later, detail in ((begun_ab, b'\x03{"a":1}', "1 missing, 0 not declared rotating"),
                                 (begun_a, b'\x03{"a":5,"b":6}', "0 missing, 1 not declared rotating")):
        learned = seq.ToolsBeginChecker(tb)
        for payload in (begun_ab, b"\x02", b'\x03{"a":1,"b":2}', b"\x02", b'\x03{"a":3,"b":4}'):
            learned.payload(payload)
        checker = learned if begun == begun_ab else seq.ToolsBeginChecker(tb)
        for payload in (b"\x02",) if checker is learned else (begun, b"\x02"):
            checker.payload(payload)
        with pytest.raises(RemoteProtocolError) as caught:
            checker.payload(later)
        assert caught.value.rule is Rule.INACTIVE_CARRIES_ROTATING and str(caught.value).endswith(f"({detail})")
    reordered = seq.ToolsBeginChecker(tb)
    for payload in (begun_ab, b"\x02", b'\x03{"a":1,"b":2}', b"\x02", b'\x03{"b":1,"a":2}', b"\x02", b'\x03{"a":1,"b":2}'):
        reordered.payload(payload)
    assert reordered.periods == 3 and reordered.state is State.IDLE


def test_checker_exposes_what_it_learned(seq, tb):
    checker = seq.ToolsBeginChecker(tb)
    assert checker.state is State.NOT_BEGUN and checker.declaration is None
    checker.payload(b'\x00{"secrets":{"a":"fixed","b":"rotating"}}')
    assert checker.state is State.IDLE
    assert list(checker.declaration) == ["a", "b"] and checker.rotating == {"b"}
    checker.payload(b"\x02")
    assert checker.state is State.ACTIVE
    frame = checker.payload(b'\x03{"b":"v"}')
    assert frame == tb.Inactive({"b": "v"}) and checker.periods == 1


def test_checker_refuses_use_after_a_violation(seq, tb):
    checker = seq.ToolsBeginChecker(tb)
    with pytest.raises(RemoteProtocolError):
        checker.frame(tb.ACTIVE)
    with pytest.raises(LocalProtocolError, match="already reported a violation"):
        checker.frame(tb.Begun())
    with pytest.raises(LocalProtocolError):
        checker.finish()


def test_violations_never_quote_values(seq, tb):
    checker = seq.ToolsBeginChecker(tb)
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
def test_notifications_sequences_that_keep_the_rules(seq, mn, script, final):
    checker = seq.McpNotificationsChecker(mn)
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
def test_notifications_sequences_that_break_a_rule(seq, mn, script, rule, index, variant):
    checker = seq.McpNotificationsChecker(mn)
    with pytest.raises(RemoteProtocolError) as caught:
        for frame in mn_frames(mn, script):
            checker.frame(frame)
    assert (caught.value.rule, caught.value.index, caught.value.variant) == (rule, index, variant)
    assert str(caught.value).startswith("mcp-notifications: frame")


def test_notifications_late_error_option(seq, mn):
    checker = seq.McpNotificationsChecker(mn, allow_error_after_notifications=True)
    for frame in mn_frames(mn, "N N E"):
        checker.frame(frame)
    assert checker.state is State.ENDED_WITH_ERROR
    with pytest.raises(RemoteProtocolError) as caught:
        checker.frame(mn.Notification({"method": "m"}))
    assert caught.value.rule is Rule.NOTHING_AFTER_ERROR


def test_notifications_finish_with_nothing_and_after_finish(seq, mn):
    assert seq.McpNotificationsChecker(mn).finish() is State.UNREADABLE
    checker = seq.McpNotificationsChecker(mn)
    assert check(checker, [b'\x00{"method":"a"}']) is State.FINISHED
    with pytest.raises(RemoteProtocolError) as caught:
        checker.payload(b'\x00{"method":"a"}')
    assert caught.value.rule is Rule.NOTHING_AFTER_FINISH


def test_check_helper_leaves_open_when_asked(seq, mn):
    checker = seq.McpNotificationsChecker(mn)
    assert check(checker, [b'\x00{"method":"a"}'], finished=False) is State.STREAMING
    assert not checker.finished


class _Odd:
    """Something fed as a frame that is none: its tag is whatever the test says."""

    def __init__(self, tag):
        self.tag = tag


_NAMES = st.sampled_from(["a", "b", "c"])
_TB_EVENTS = st.one_of(
    st.builds(lambda secrets: ("frame", "Begun", secrets), st.dictionaries(_NAMES, st.sampled_from(["fixed", "rotating"]))),
    st.just(("frame", "Active", None)),
    st.builds(lambda values: ("frame", "Inactive", values), st.dictionaries(_NAMES, st.integers(0, 3))),
    st.just(("frame", "Error", None)),
    st.just(("finish", None, None)),
    st.builds(lambda tag: ("odd", None, tag), st.sampled_from([7, -1, 2**70, 1.0, True, "x", None])),
)


def _outcome(call):
    try:
        result = call()
    except Exception as error:  # noqa: BLE001 - the class and message are what is compared
        return ("raised", type(error), str(error))
    return ("returned", result)


def _observed(checker, extra):
    seen = (checker.state, checker.frames, checker.finished, checker.unreadable, str(checker.violation), repr(checker))
    return seen + tuple(getattr(checker, name) for name in extra)


def _feed(checker, tb, event):
    kind, variant, data = event
    if kind == "finish":
        return _outcome(checker.finish)
    if kind == "odd":
        return _outcome(lambda: checker.frame(_Odd(data)))
    frame = {"Begun": lambda: tb.Begun(data), "Active": lambda: tb.ACTIVE, "Inactive": lambda: tb.Inactive(data),
             "Error": lambda: tb.Error(ProviderError("m"))}[variant]()
    return _outcome(lambda: checker.frame(frame))


@given(st.lists(_TB_EVENTS, max_size=12))
def test_both_tools_begin_checkers_agree_step_by_step(both_seq, tb, events):
    compiled, pure = (seq.ToolsBeginChecker(tb) for seq in both_seq)
    extra = ("periods", "declaration", "rotating")
    for event in events:
        assert _feed(compiled, tb, event) == _feed(pure, tb, event)
        assert _observed(compiled, extra) == _observed(pure, extra)


@given(st.lists(st.sampled_from(["N", "E", "finish", 7, 1.0, "x"]), max_size=10), st.booleans())
def test_both_notification_checkers_agree_step_by_step(both_seq, mn, events, late):
    compiled, pure = (seq.McpNotificationsChecker(mn, allow_error_after_notifications=late) for seq in both_seq)
    frames = {"N": mn.Notification({"method": "m"}), "E": mn.Error(ErrorData(1, "m"))}
    for event in events:
        if event == "finish":
            outcomes = [_outcome(checker.finish) for checker in (compiled, pure)]
        else:
            frame = frames.get(event) or _Odd(event)
            outcomes = [_outcome(lambda c=checker: c.frame(frame)) for checker in (compiled, pure)]
        assert outcomes[0] == outcomes[1]
        assert _observed(compiled, ("notifications",)) == _observed(pure, ("notifications",))


def test_the_compiled_checkers_are_the_public_ones_where_built(seq):
    from diverge_codec import IMPLEMENTATION, sequence

    expected = "_sequence_c" if IMPLEMENTATION == "cython" else "_sequence_py"
    assert sequence.ToolsBeginChecker.__module__ == f"diverge_codec.{expected}"
    assert seq.ToolsBeginChecker().codec is __import__("diverge_codec.tools_begin").tools_begin
    assert seq.McpNotificationsChecker().codec is __import__("diverge_codec.mcp_notifications").mcp_notifications


@pytest.mark.parametrize("name", ["state", "finished", "frames", "violation", "codec", "declaration", "rotating", "periods"])
def test_where_a_checker_stands_is_read_only(seq, name):
    checker = seq.ToolsBeginChecker()
    with pytest.raises(AttributeError):
        setattr(checker, name, None)
    with pytest.raises(AttributeError):
        seq.McpNotificationsChecker().notifications = 3

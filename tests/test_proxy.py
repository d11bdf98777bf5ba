"""The proxy machine: its rules one by one, and a stateful proof that the checker accepts all it produces."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from diverge_codec import ProviderError, tools_begin
from diverge_codec.errors import LocalProtocolError
from diverge_codec.proxy import ExchangeKind, Phase, ToolContainerProxy
from diverge_codec.sequence import State, ToolsBeginChecker
from conftest import load

CALL = ExchangeKind.MCP_CALL_TOOL


def test_no_secrets_never_held_and_inactive_is_empty(tb):
    proxy = ToolContainerProxy(tb)
    assert proxy.begun({}).send == [tb.Begun()]
    step = proxy.open_exchange("x", CALL)
    assert step.send == [tb.ACTIVE] and step.deliver == ["x"]
    step = proxy.open_exchange("y", "mcp-list-tools")
    assert step.send == [] and step.deliver == ["y"]
    assert proxy.answer_exchange("x").send == []
    step = proxy.answer_exchange("y")
    assert step.send == [tb.Inactive({})] and not step.collect
    assert proxy.phase is Phase.IDLE and proxy.periods == 1


def test_declared_secrets_hold_until_fed(tb):
    proxy = ToolContainerProxy(tb)
    proxy.begun({"key": "fixed"})
    step = proxy.open_exchange("x", CALL)
    assert step.send == [tb.ACTIVE] and step.deliver == []
    assert proxy.held == ["x"]
    with pytest.raises(LocalProtocolError, match="never delivered"):
        proxy.answer_exchange("x")
    assert proxy.fed().deliver == ["x"]
    step = proxy.answer_exchange("x")
    assert step.send == [tb.Inactive({})]
    assert proxy.open_exchange("z", CALL).deliver == []  # held again after the Inactive
    assert proxy.fed().deliver == ["z"]


def test_rotating_values_are_collected_and_ride_the_inactive(tb):
    proxy = ToolContainerProxy(tb)
    proxy.begun({"a": "rotating", "f": "fixed", "b": "rotating"})
    proxy.fed()
    proxy.open_exchange(1, CALL)
    step = proxy.answer_exchange(1)
    assert step.collect and step.send == [] and proxy.phase is Phase.COLLECTING
    step = proxy.collected({"b": "B2", "f": "ignored", "a": "A2", "extra": 1})
    assert step.send == [tb.Inactive({"a": "A2", "b": "B2"})]
    assert list(step.send[0].values) == ["a", "b"]


def test_a_missing_rotating_value_ends_with_an_error_naming_it(tb):
    proxy = ToolContainerProxy(tb)
    proxy.begun({"a": "rotating", "b": "rotating"})
    proxy.fed()
    proxy.open_exchange(1, CALL)
    proxy.answer_exchange(1)
    step = proxy.collected({"a": "VALUE"})
    (frame,) = step.send
    assert type(frame) is tb.Error and step.finish
    assert frame.error == ProviderError("the program did not hand back the rotating secret 'b'", secret="b")
    assert "VALUE" not in tb.encode(frame).decode()
    with pytest.raises(LocalProtocolError, match="finished"):
        proxy.open_exchange(2, CALL)
    with pytest.raises(LocalProtocolError):
        proxy.end()


def test_exchange_during_collection_opens_the_next_period(tb):
    proxy = ToolContainerProxy(tb)
    proxy.begun({"a": "rotating"})
    proxy.fed()
    proxy.open_exchange(1, CALL)
    proxy.answer_exchange(1)
    step = proxy.open_exchange(2, CALL)
    assert step.send == [] and step.deliver == []
    step = proxy.collected({"a": 1})
    assert step.send == [tb.Inactive({"a": 1}), tb.ACTIVE] and step.deliver == []
    assert proxy.fed().deliver == [2]


def test_ending_inside_a_period_sends_an_error_first(tb):
    proxy = ToolContainerProxy(tb)
    proxy.begun({})
    proxy.open_exchange(1, CALL)
    step = proxy.end()
    assert [type(frame) for frame in step.send] == [tb.Error] and step.finish and step.dropped == [1]
    idle = ToolContainerProxy(tb)
    idle.begun({})
    assert idle.end().send == [] and idle.phase is Phase.ENDED


def test_refusals(tb):
    proxy = ToolContainerProxy(tb)
    with pytest.raises(LocalProtocolError, match="before Begun"):
        proxy.open_exchange(1, CALL)
    with pytest.raises(LocalProtocolError, match="before Begun"):
        proxy.fed()
    proxy.begun({})
    with pytest.raises(LocalProtocolError, match="mcp-notifications channel is no exchange"):
        proxy.open_exchange(1, "mcp-notifications")
    with pytest.raises(LocalProtocolError, match="not an exchange kind"):
        proxy.open_exchange(1, "volumes-list")
    proxy.open_exchange(1, CALL)
    with pytest.raises(LocalProtocolError, match="already open"):
        proxy.open_exchange(1, CALL)
    with pytest.raises(LocalProtocolError, match="not in flight"):
        proxy.answer_exchange(2)
    with pytest.raises(LocalProtocolError, match="collected is not allowed now"):
        proxy.collected({})
    with pytest.raises(LocalProtocolError, match="begun is not allowed now"):
        proxy.begun({})


def test_a_refused_begin_is_an_error_then_the_finish(tb):
    proxy = ToolContainerProxy(tb)
    step = proxy.refused(ProviderError("arguments refused"))
    assert step.send == [tb.Error(ProviderError("arguments refused"))] and step.finish


# ---- the proof ---------------------------------------------------------------


class ProxyAgainstChecker(RuleBasedStateMachine):
    """Arbitrary interleavings of proxy events; every frame the proxy sends goes through the checker."""

    def __init__(self) -> None:
        super().__init__()
        self.tb = load("tools_begin", "py")
        self.proxy: ToolContainerProxy
        self.checker: ToolsBeginChecker
        self.delivered: set[int] = set()
        self.answered: set[int] = set()
        self.next_id = 0
        self.ended = False

    @initialize(implementation=st.sampled_from(["c", "py"]),
                secrets=st.dictionaries(st.sampled_from("abcd"), st.sampled_from(["fixed", "rotating"]), max_size=3))
    def begin(self, implementation, secrets):
        self.tb = load("tools_begin", implementation)
        self.proxy = ToolContainerProxy(self.tb)
        self.checker = ToolsBeginChecker(self.tb)
        self.apply(self.proxy.begun(secrets))

    def apply(self, step):
        for frame in step.send:
            self.checker.payload(self.tb.encode(frame))
        for exchange in step.deliver:
            assert exchange not in self.delivered, "delivered twice"
            assert not self.ended, "delivered after the end"
            assert self.checker.state is State.ACTIVE, "delivered outside a period"
            self.delivered.add(exchange)
        if step.finish:
            assert self.checker.finish() in (State.FINISHED, State.ENDED_WITH_ERROR)
            self.ended = True
        for exchange in step.dropped:
            assert exchange not in self.answered

    @precondition(lambda self: not self.ended)
    @rule(kind=st.sampled_from(list(ExchangeKind)))
    def open(self, kind):
        self.next_id += 1
        self.apply(self.proxy.open_exchange(self.next_id, kind))

    @precondition(lambda self: not self.ended and self.proxy.in_flight)
    @rule(data=st.data())
    def answer(self, data):
        exchange = data.draw(st.sampled_from(sorted(self.proxy.in_flight)))
        assert exchange in self.delivered
        self.answered.add(exchange)
        self.apply(self.proxy.answer_exchange(exchange))

    @precondition(lambda self: not self.ended)
    @rule()
    def feed(self):
        self.apply(self.proxy.fed())

    @precondition(lambda self: not self.ended and self.proxy.phase is Phase.COLLECTING)
    @rule(hand_back_all=st.booleans())
    def collect(self, hand_back_all):
        names = list(self.proxy.rotating) if hand_back_all else list(self.proxy.rotating)[1:]
        self.apply(self.proxy.collected({name: f"value-{name}" for name in names}))

    @precondition(lambda self: not self.ended)
    @rule()
    def end(self):
        self.apply(self.proxy.end())

    @precondition(lambda self: self.ended)
    @rule(event=st.sampled_from(["open", "answer", "feed", "collect", "end"]))
    def after_the_end_everything_is_refused(self, event):
        calls = {
            "open": lambda: self.proxy.open_exchange(-1, ExchangeKind.MCP_LIST_TOOLS),
            "answer": lambda: self.proxy.answer_exchange(1),
            "feed": self.proxy.fed,
            "collect": lambda: self.proxy.collected({}),
            "end": self.proxy.end,
        }
        with pytest.raises(LocalProtocolError):
            calls[event]()

    @invariant()
    def never_delivered_while_held(self):
        if not self.ended:
            assert not (set(self.proxy.held) & self.delivered)
            assert not (self.proxy.gated and self.proxy.held and self.proxy.in_flight - self.delivered)

    @invariant()
    def checker_and_proxy_agree(self):
        if self.ended:
            return
        phase = self.proxy.phase
        expected = State.ACTIVE if phase in (Phase.ACTIVE, Phase.COLLECTING) else State.IDLE
        assert self.checker.state is expected
        assert self.checker.periods == self.proxy.periods


TestProxyAgainstChecker = ProxyAgainstChecker.TestCase
TestProxyAgainstChecker.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def test_public_default_codec_is_the_chosen_implementation():
    proxy = ToolContainerProxy()
    assert type(proxy.begun({}).send[0]) is tools_begin.Begun

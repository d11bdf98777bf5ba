"""The proxy's side of tools-begin: which frames to send and which exchanges to deliver, for each event (sans-IO).

The machine counts the exchanges in flight and produces Active and Inactive itself:
Active when the count goes from none to one, before that exchange is delivered;
Inactive when it goes from one to none, after the last is answered and the program
has handed back its rotating secrets, which ride on it. After Begun, and after every
Inactive, a program that declared any secret gets nothing until the secrets channel
is answered Fed: an exchange opened meanwhile is held (its Active already sent) and
released by the feed.

Each event method returns a :class:`Step`: the frames to send, in order, the exchanges
to deliver, in order, whether to ask the program for its rotating values now, and
whether the response finishes. Misuse raises
:class:`~diverge_codec.errors.LocalProtocolError` and changes nothing.

Two choices the page leaves to the proxy, made here:

* An exchange opened while the values are being collected (the last exchange was
  answered, the program asked for its rotating values) waits: the period that is
  closing closes with its Inactive, and the waiting exchange opens the next period
  with a new Active, held until the next feed where the program declared a secret.
  So no second Active is ever sent inside an open period.
* Ending while a period is open (exchanges in flight, or values not yet collected)
  cannot close it with an Inactive, since the values are not collected: the machine
  sends an Error saying so, then the finish. Exchanges not yet answered are listed
  as dropped.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from . import tools_begin
from ._model import Mode, ProviderError
from .errors import LocalProtocolError


class ExchangeKind(str, enum.Enum):
    """The four channels that are exchanges. An mcp-notifications channel is none."""

    MCP_LIST_TOOLS = "mcp-list-tools"
    MCP_LIST_RESOURCES = "mcp-list-resources"
    MCP_CALL_TOOL = "mcp-call-tool"
    MCP_READ_RESOURCE = "mcp-read-resource"


NOT_EXCHANGES = frozenset({"mcp-notifications"})


class Phase(enum.Enum):
    """Where the proxy's tools-begin response stands."""

    NOT_BEGUN = "not begun"
    IDLE = "begun, no exchange in flight"
    ACTIVE = "exchanges in flight"
    COLLECTING = "the last exchange answered, collecting the rotating values"
    ENDED = "finished"


@dataclass
class Step:
    """What one event asks of the proxy, in this order: send, deliver, ask for values, finish."""

    send: list[tools_begin.Frame] = field(default_factory=list)
    """Frames to send on the tools-begin response, in order."""
    deliver: list[Hashable] = field(default_factory=list)
    """Exchanges to deliver to the program now, in order."""
    collect: bool = False
    """Ask the program for its rotating values; answer with ``collected``."""
    finish: bool = False
    """Finish the tools-begin response after sending."""
    dropped: list[Hashable] = field(default_factory=list)
    """Exchanges that will never be delivered or answered: fail them on their channels."""

    def __repr__(self) -> str:
        try:
            return (f"Step(send={self.send!r}, deliver={self.deliver!r}, collect={self.collect!r}, "
                    f"finish={self.finish!r}, dropped={self.dropped!r})")
        except AttributeError:  # made by __new__, never initialised: a traceback's locals may still show it
            return "<Step (not initialised)>"


class ToolContainerProxy:
    """The sans-IO state machine of a proxy serving one tool container's tools-begin response."""

    def __init__(self, codec: ModuleType = tools_begin) -> None:
        self._codec = codec
        self.phase: Phase = Phase.NOT_BEGUN
        """Where the response stands."""
        self.declaration: dict[str, Mode] = {}
        self.rotating: tuple[str, ...] = ()
        self.gated: bool = False
        """Deliveries wait for a feed: after Begun and after every Inactive, where a secret was declared."""
        self.in_flight: set[Hashable] = set()
        """Exchanges delivered and not yet answered."""
        self.held: list[Hashable] = []
        """Exchanges counted in this period but waiting for a feed."""
        self.waiting: list[Hashable] = []
        """Exchanges opened while collecting: they open the next period."""
        self.periods: int = 0
        """How many periods an Inactive has closed."""

    def __repr__(self) -> str:
        try:
            return (
                f"<ToolContainerProxy phase={self.phase.name} in_flight={len(self.in_flight)} "
                f"held={len(self.held)} waiting={len(self.waiting)} gated={self.gated}>"
            )
        except AttributeError:  # made by __new__, never initialised
            return "<ToolContainerProxy (not initialised)>"

    # -- the begin ---------------------------------------------------------

    def begun(self, secrets: Mapping[str, Mode | str]) -> Step:
        """The container took its arguments and its program declared these secrets: send Begun."""
        self._require(Phase.NOT_BEGUN, "begun")
        frame = self._codec.Begun(secrets)
        self.declaration = dict(frame.secrets)
        self.rotating = tuple(name for name, mode in self.declaration.items() if mode is Mode.ROTATING)
        self.gated = bool(self.declaration)
        self.phase = Phase.IDLE
        return Step(send=[frame])

    def refused(self, error: ProviderError) -> Step:
        """The begin failed (a second begin, or refused arguments): send the Error, then finish."""
        self._require(Phase.NOT_BEGUN, "refused")
        frame = self._codec.Error(error)
        self.phase = Phase.ENDED
        return Step(send=[frame], finish=True)

    # -- exchanges ---------------------------------------------------------

    def open_exchange(self, exchange: Hashable, kind: ExchangeKind | str) -> Step:
        """An exchange channel opened: Active if none was in flight; deliver it unless held."""
        self._require_live("open_exchange")
        if self.phase is Phase.NOT_BEGUN:
            raise LocalProtocolError("no exchange is opened before Begun")
        if str(getattr(kind, "value", kind)) in NOT_EXCHANGES:
            raise LocalProtocolError("an mcp-notifications channel is no exchange: it is never counted in flight")
        try:
            ExchangeKind(kind)
        except ValueError:
            raise LocalProtocolError("not an exchange kind: expected one of " + ", ".join(k.value for k in ExchangeKind)) from None
        if exchange in self.in_flight or exchange in self.held or exchange in self.waiting:
            raise LocalProtocolError("that exchange is already open")
        if self.phase is Phase.COLLECTING:
            self.waiting.append(exchange)
            return Step()
        step = Step()
        if self.phase is Phase.IDLE:
            step.send.append(self._codec.ACTIVE)
            self.phase = Phase.ACTIVE
        self._admit(exchange, step)
        return step

    def answer_exchange(self, exchange: Hashable) -> Step:
        """A delivered exchange was answered; the last one in flight closes the period."""
        self._require_live("answer_exchange")
        if exchange not in self.in_flight:
            held = exchange in self.held or exchange in self.waiting
            raise LocalProtocolError("that exchange was never delivered" if held else "that exchange is not in flight")
        self.in_flight.discard(exchange)
        if self.in_flight or self.held:
            return Step()
        if self.rotating:
            self.phase = Phase.COLLECTING
            return Step(collect=True)
        return self._close_period({})

    def collected(self, values: Mapping[str, Any]) -> Step:
        """The program handed back its values: Inactive with exactly the rotating names, or Error and finish."""
        self._require(Phase.COLLECTING, "collected")
        missing = [name for name in self.rotating if name not in values]
        if missing:
            error = ProviderError(
                f"the program did not hand back the rotating secret {missing[0]!r}", secret=missing[0]
            )
            return self._end_with(error)
        return self._close_period({name: values[name] for name in self.rotating})

    def fed(self) -> Step:
        """The secrets channel was answered Fed: release the held exchanges, in order."""
        self._require_live("fed")
        if self.phase is Phase.NOT_BEGUN:
            raise LocalProtocolError("no feed comes before Begun")
        self.gated = False
        step = Step(deliver=self.held)
        self.in_flight.update(self.held)
        self.held = []
        return step

    def end(self) -> Step:
        """The server ends: the finish, after an Error where a period is open."""
        self._require_live("end")
        if self.phase in (Phase.ACTIVE, Phase.COLLECTING):
            return self._end_with(ProviderError("the server ended with exchanges in flight; the rotating secrets were not collected"))
        self.phase = Phase.ENDED
        return Step(finish=True)

    # -- inside ------------------------------------------------------------

    def _admit(self, exchange: Hashable, step: Step) -> None:
        if self.gated:
            self.held.append(exchange)
        else:
            self.in_flight.add(exchange)
            step.deliver.append(exchange)

    def _close_period(self, values: dict[str, Any]) -> Step:
        step = Step(send=[self._codec.Inactive(values)])
        self.periods += 1
        self.gated = bool(self.declaration)
        self.phase = Phase.IDLE
        waiting, self.waiting = self.waiting, []
        if waiting:
            step.send.append(self._codec.ACTIVE)
            self.phase = Phase.ACTIVE
            for exchange in waiting:
                self._admit(exchange, step)
        return step

    def _end_with(self, error: ProviderError) -> Step:
        dropped = [*self.in_flight, *self.held, *self.waiting]
        self.in_flight, self.held, self.waiting = set(), [], []
        self.phase = Phase.ENDED
        return Step(send=[self._codec.Error(error)], finish=True, dropped=dropped)

    def _require(self, phase: Phase, event: str) -> None:
        if self.phase is not phase:
            raise LocalProtocolError(f"{event} is not allowed now: the response is {self.phase.value}")

    def _require_live(self, event: str) -> None:
        if self.phase is Phase.ENDED:
            raise LocalProtocolError(f"{event} is not allowed now: the response is finished")


__all__ = ["ExchangeKind", "NOT_EXCHANGES", "Phase", "Step", "ToolContainerProxy"]

"""Every timing rule of the HTTP relay, on virtual time (issue #45): a 30 s window in milliseconds, each try's
moment pinned to the millisecond, so a rule off by one step (a doubling, a cap, a floor, a window's end, a
``Retry-After``, a silence limit, a stream's age) moves a moment and fails.

``HttpRelay`` takes ``clock`` and ``sleep`` (``http_reach.Reach``); here they are the ``virtual_time`` loop's
clock and a ``Waits`` that records each wait asked. The scripted server (``test_http_driver.Server``) stamps
each request with the loop's time. No process, no socket: quick. The rules as written:

- the GET stream's tries while the server cannot be reached: the wait doubles from ``RETRY_FLOOR * 5`` to
  ``BACKOFF_CAP``, never below the stream's ``retry`` (``RECONNECT_DELAY`` without one) nor the server's
  ``Retry-After``, the last try at ``reconnect_window`` after the first failure, then the end;
- a stream that ends before ``QUICK_END`` having relayed nothing doubles the wait; one that relayed
  something is opened again after its ``retry``, at least ``RETRY_FLOOR``;
- a stream silent for ``stream_timeout`` is dropped then and opened again after its ``retry``;
- a lost session's new ``initialize`` is tried with the same backoff until ``reconnect_window`` since the loss;
- a call's stream resumed after ``retry``, the wait doubling, ``RECONNECT_ATTEMPTS`` times;
- ``--token-command`` again at once after a token that served, else not before ``TOKEN_REFRESH_EVERY``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from diverge_codec.relay import http_streams, remote_auth
from diverge_codec.relay.channel import FileWriter, RelayOptions

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from diverge_codec.relay.streamable_http import HttpRelay  # noqa: E402
from scripted_http import HandlerBackend, Response, serving  # noqa: E402
from test_http_driver import SSE, URL, Server, _Kept, _events, _log  # noqa: E402
from test_relay_auth import Clock, Counted  # noqa: E402
from virtual_time import START, Waits, run  # noqa: E402


def now() -> float:
    return asyncio.get_running_loop().time()


def timed_relay(handle: Any, *, to_the_ms: bool = False, **options: Any) -> tuple[dict[str, Any], Waits]:
    """One relay on virtual time against ``handle``: (its report, the waits it asked for). ``to_the_ms``: the
    relay's clock reads whole milliseconds, so a rule's boundary (``QUICK_END``) is met exactly, not a few loop
    ticks past it."""
    waits = Waits()
    settings = {"grace": 0.5, "request_timeout": 5.0, "reconnect_window": 30.0, "duration": 200.0,
                "protocol": "2025-11-25", **options}  # the 2025 era's drivers (the probe's: test_http_stateless.py)

    async def main() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        clock = (lambda: round(loop.time(), 3)) if to_the_ms else loop.time
        driver = HttpRelay(URL, FileWriter(_Kept()), RelayOptions(**settings), clock=clock,
                           sleep=waits)
        with serving(handle):  # the scripted server, under the client
            return (await asyncio.wait_for(driver.run(), 1000)).as_dict()

    return run(main), waits


def moments(stamps: list[float]) -> list[float]:
    """Each moment after the first, to the millisecond."""
    return [round(stamp - stamps[0], 3) for stamp in stamps]


class AwayAfterInitialize(Server):
    """``initialize`` answered; then every GET answered ``status`` (with ``headers``), stamped in ``gets``."""

    def __init__(self, status: int = 502, headers: dict[str, str] | None = None) -> None:
        super().__init__()
        self.status, self.away_headers = status, headers or {}
        self.gets: list[float] = []

    def handle(self, request: Any) -> Any:
        if request.method == "GET":
            self.gets.append(now())
            return Response(self.status, headers={"content-type": "text/html", **self.away_headers}, content=b"<p>away")
        return super().handle(request)


# --- the GET stream while the server cannot be reached -----------------------------------------------------


def test_a_window_longer_than_the_cap_doubles_the_wait_to_the_cap_and_makes_the_last_try_at_its_end():
    server = AwayAfterInitialize()
    report, waits = timed_relay(server.handle, reconnect_window=30.0)
    # waits: max(RECONNECT_DELAY 1, backoff 0.5, 1, 2, 4, 8, 8 ...), the last cut to the window's end
    assert moments(server.gets) == [0, 1, 2, 4, 8, 16, 24, 30]
    assert waits.asked == [1.0, 1.0, 2.0, 4.0, 8.0, 8.0, 6.0]
    assert report["server"]["ended_by"] == "connection lost" and report["server"]["error"] == "HTTP 502 on the event stream"


def test_a_window_shorter_than_the_cap_ends_at_the_window_not_at_the_cap():
    server = AwayAfterInitialize()
    report, waits = timed_relay(server.handle, reconnect_window=3.0)
    assert moments(server.gets) == [0, 1, 2, 3]
    assert waits.asked == [1.0, 1.0, 1.0]
    assert report["server"]["ended_by"] == "connection lost"


@pytest.mark.parametrize(("window", "tries"), [(8.0, [0, 1, 2, 4, 8]), (9.0, [0, 1, 2, 4, 8, 9]),
                                                (17.0, [0, 1, 2, 4, 8, 16, 17])])
def test_the_window_s_end_is_a_try_of_its_own_wherever_it_falls(window, tries):
    server = AwayAfterInitialize()
    timed_relay(server.handle, reconnect_window=window)
    assert moments(server.gets) == tries


def test_retry_after_is_the_least_wait_even_past_the_cap_and_ends_where_it_would_pass_the_window():
    server = AwayAfterInitialize(503, {"retry-after": "12"})
    report, waits = timed_relay(server.handle, reconnect_window=30.0)
    # at 24 the next try would be at 36, past the window: the relay ends there instead of waiting in vain
    assert moments(server.gets) == [0, 12, 24] and waits.asked == [12.0, 12.0]
    assert report["server"]["error"] == "HTTP 503 on the event stream"


def test_a_retry_after_that_ends_exactly_at_the_window_s_end_is_still_waited_for():
    server = AwayAfterInitialize(503, {"retry-after": "10"})
    timed_relay(server.handle, reconnect_window=20.0, to_the_ms=True)
    assert moments(server.gets) == [0, 10, 20]  # 10 s in and 10 s to wait: the last try at 20, not the end at 10


def test_a_429_s_retry_after_shorter_than_the_backoff_does_not_shorten_it():
    server = AwayAfterInitialize(429, {"retry-after": "3"})
    timed_relay(server.handle, reconnect_window=20.0)
    assert moments(server.gets) == [0, 3, 6, 9, 13, 20]  # 3, 3, 3, then the backoff's 4 and 8 (cut to 7)


def test_an_answer_ends_the_outage_its_retry_after_and_its_window_a_later_outage_counts_afresh():
    server = Server()
    gets: list[float] = []

    def handle(request: Any) -> Any:
        if request.method != "GET":
            return server.handle(request)
        gets.append(now())
        if len(gets) == 1:
            return Response(503, headers={"retry-after": "5"})
        if len(gets) == 2:  # back: one event, the stream ends (its wait is the default, not the old Retry-After)
            return Response(200, headers=SSE, content=_events(_log("back")))
        return Response(502)  # away again: a window of its own from here

    report, _ = timed_relay(handle, reconnect_window=6.0)
    assert moments(gets) == [0, 5, 6, 7, 8, 10, 12]  # the second outage: from 6 to 12
    assert report["server"]["error"] == "HTTP 502 on the event stream"


# --- a stream that ends, and a silent one -------------------------------------------------------------------


class EndingStream(Server):
    """Every GET a stream that ends after ``lasts`` seconds, with one event (``relays``) or none, ``retry`` ms."""

    def __init__(self, lasts: float = 0.0, relays: bool = False, retry: int | None = None) -> None:
        super().__init__()
        self.lasts, self.relays, self.retry = lasts, relays, retry
        self.gets: list[float] = []

    def handle(self, request: Any) -> Any:
        if request.method != "GET":
            return super().handle(request)
        self.gets.append(now())

        async def body() -> Any:
            if self.retry is not None:
                yield f"retry: {self.retry}\n\n".encode()
            if self.relays:
                yield b"data: " + _log(len(self.gets)) + b"\n\n"
            await asyncio.sleep(self.lasts)
        return Response(200, headers=SSE, content=body())


def test_a_stream_that_ends_at_once_having_relayed_nothing_doubles_the_wait_to_the_cap():
    server = EndingStream(retry=0)
    timed_relay(server.handle, duration=40.0)
    assert moments(server.gets)[:8] == [0, 0.5, 1.5, 3.5, 7.5, 15.5, 23.5, 31.5]


def test_a_stream_that_relayed_something_is_opened_again_after_its_retry_at_least_the_floor():
    server = EndingStream(relays=True, retry=0)
    timed_relay(server.handle, duration=0.45)
    assert moments(server.gets) == [0, 0.1, 0.2, 0.3, 0.4]  # RETRY_FLOOR, never sooner


def test_a_stream_without_retry_is_opened_again_after_the_default_delay():
    server = EndingStream(relays=True)
    timed_relay(server.handle, duration=3.5)
    assert moments(server.gets) == [0, 1, 2, 3]  # RECONNECT_DELAY


@pytest.mark.parametrize(("lasts", "second"), [(0.999, 0.999 + 0.5), (1.0, 1.0 + 0.1)])
def test_a_stream_that_ends_within_quick_end_counts_as_ending_at_once(lasts, second):
    server = EndingStream(lasts=lasts, retry=0)
    timed_relay(server.handle, duration=2.0, to_the_ms=True)
    assert moments(server.gets)[:2] == [0, second]


def test_a_stream_silent_for_the_limit_is_dropped_then_and_opened_again_after_its_retry():
    server = Server()
    gets: list[float] = []
    last_ids: list[str | None] = []

    def handle(request: Any) -> Any:
        if request.method != "GET":
            return server.handle(request)
        gets.append(now())
        last_ids.append(request.headers.get("last-event-id"))

        async def talk_then_fall_silent() -> Any:
            for beat in range(3):  # a byte every 29 s keeps it: the limit counts from the last byte
                yield f"retry: 2000\nid: e{len(gets)}-{beat}\ndata: ".encode() + _log(beat) + b"\n\n"
                await asyncio.sleep(29.0)
            await asyncio.Event().wait()
            yield b""
        return Response(200, headers=SSE, content=talk_then_fall_silent())

    report, _ = timed_relay(handle, stream_timeout=30.0, duration=200.0)
    # silent from 58 (its last byte) to 88: dropped at 88, opened again 2 s later (its retry)
    assert moments(gets)[:3] == [0, 90, 180]
    assert last_ids[:3] == [None, "e1-2", "e2-2"] and report["server"]["stream_silences"] == 2


# --- a lost session's new initialize ------------------------------------------------------------------------


@pytest.mark.parametrize("away", ["HTTP 502", "connection refused"])
def test_a_lost_session_s_initialize_backs_off_to_the_cap_until_the_window_since_the_loss(away):
    server = Server()
    initializes: list[float] = []
    lost: list[float] = []

    def handle(request: Any) -> Any:
        body = json.loads(request.content) if request.content else None
        if body and body.get("method") == "initialize" and server.requests:
            initializes.append(now())
            server.record(request)
            return Response(502, headers={"content-type": "text/html"}, content=b"<p>away")
        if request.method == "GET":
            lost.append(now())
            if away == "connection refused":
                network.go_down()  # this 404 its last answer: every initialize after it is a connection refused
            return Response(404)  # the session is forgotten: a new one
        return server.handle(request)

    network = HandlerBackend(handle)
    report, waits = timed_relay(network, reconnect_window=20.0)
    initializes += network.refused
    start = lost[0]
    assert [round(stamp - start, 3) for stamp in initializes] == [0, 0.5, 1.5, 3.5, 7.5, 15.5, 20]
    assert waits.asked == [0.5, 1.0, 2.0, 4.0, 8.0, 4.5]
    error = "HTTP 502 on initialize" if away == "HTTP 502" else away
    assert report["server"]["ended_by"] == "connection lost" and report["server"]["error"] == error


def test_a_server_not_reached_at_the_first_initialize_ends_the_relay_at_once_not_after_a_window():
    network = HandlerBackend(Server().handle)
    network.go_down()
    report, waits = timed_relay(network, reconnect_window=30.0)
    assert len(network.refused) == 1 and not network.opened
    assert report["server"]["error"] == "connection refused" and report["server"]["ended_by"] == "unreachable"
    assert waits.asked == []


def test_a_session_lost_after_an_outage_that_ended_counts_its_window_from_the_loss():
    server = Server()
    gets: list[float] = []
    initializes: list[float] = []

    def handle(request: Any) -> Any:
        body = json.loads(request.content) if request.content else None
        if body and body.get("method") == "initialize" and server.requests:
            initializes.append(now())
            return Response(502)
        if request.method != "GET":
            return server.handle(request)
        gets.append(now())
        if len(gets) == 1:
            return Response(502)  # an outage, at 0
        if len(gets) <= 3:  # back at 1: streams of one event each (a 2xx ends the outage's account)
            return Response(200, headers=SSE, content=_events(_log(len(gets))))
        return Response(404)  # at 3 the session is forgotten: the window counts from here, not from 0

    report, _ = timed_relay(handle, reconnect_window=6.0)
    assert moments(gets) == [0, 1, 2, 3]
    assert [round(stamp - gets[3], 3) for stamp in initializes] == [0, 0.5, 1.5, 3.5, 6]
    assert report["server"]["error"] == "HTTP 502 on initialize"


@pytest.mark.parametrize(("kept", "sessions"), [(0.999, 3), (1.0, 4)])
def test_a_server_that_forgets_each_session_within_quick_end_three_times_ends_the_relay(kept, sessions):
    server = Server()
    made: list[float] = []

    def handle(request: Any) -> Any:
        body = json.loads(request.content) if request.content else None
        if body and body.get("method") == "initialize":
            made.append(now())
            server.session = f"s-{len(made)}"
        if request.method == "GET":
            async def forgotten_after_a_while() -> Any:  # the session's stream answered 404 ``kept`` s after it was made
                await asyncio.sleep(kept)
                return Response(404)
            return forgotten_after_a_while()
        return server.handle(request)

    report, _ = timed_relay(handle, to_the_ms=True, duration=4.5)
    assert len(made) >= sessions
    quick = report["server"].get("error") == "the server forgot each new session at once"
    assert quick is (kept < 1.0)


# --- a call's stream resumed ---------------------------------------------------------------------------------


def resuming(call_stream: Any, resumes: list[float]) -> Any:
    """A server whose call's stream is ``call_stream()`` and breaks off before the answer; each resumption (a GET
    with ``Last-Event-ID``) stamped in ``resumes`` and answered with one more event and no answer."""
    server = Server()

    def handle(request: Any) -> Any:
        body = json.loads(request.content) if request.content else None
        if request.method == "GET" and request.headers.get("last-event-id"):
            resumes.append(now())
            return Response(200, headers=SSE, content=_events(b"{}", ids=[f"r{len(resumes)}"]))
        if request.method == "GET":
            return Response(405)
        if body and body.get("method") == "tools/call":
            server.record(request)
            return Response(200, headers=SSE, content=call_stream())
        return server.handle(request)
    return handle


def _stream(retry: str) -> Any:
    async def pieces() -> Any:
        yield retry.encode() + b"id: c1\ndata: " + _log("start") + b"\n\n"
    return lambda: pieces()


def test_a_call_s_stream_is_resumed_after_its_retry_the_wait_doubling_then_counted_unrecovered():
    resumes: list[float] = []
    report, waits = timed_relay(resuming(_stream(""), resumes), calls=[("slow", {})], duration=30.0,
                                request_timeout=60.0)
    assert len(resumes) == http_streams.RECONNECT_ATTEMPTS == 3
    assert waits.asked == [1.0, 1.0, 1.0]  # max(RECONNECT_DELAY, 0.5, 1, 2): the backoff under the delay
    assert report["server"]["unrecovered"] == 1 and report["server"]["reconnects"] == 3


def test_a_call_s_stream_resumed_with_a_short_retry_shows_the_doubling():
    resumes: list[float] = []
    timed_relay(resuming(_stream("retry: 0\n"), resumes), calls=[("slow", {})], duration=30.0, request_timeout=60.0)
    assert moments(resumes) == [0, 0.5, 1.5]  # waits 0.1 (the floor over retry 0), then 0.5 and 1.0


def test_a_call_answered_202_with_nothing_fails_at_once_not_at_its_timeout():
    server = Server()

    def handle(request: Any) -> Any:
        body = json.loads(request.content) if request.content else None
        if body and body.get("method") == "tools/call":
            server.record(request)
            return Response(202)  # accepted, as for a notification: no answer will ever come on it
        return server.handle(request)

    report, _ = timed_relay(handle, calls=[("go", {})], request_timeout=60.0, until_answered=True)
    assert report["calls"] == {"sent": 1, "answered": 0, "failed": 1, "timed_out": 0}


# --- the token command's rate ---------------------------------------------------------------------------------


def test_a_refused_token_is_asked_for_again_at_exactly_the_interval_not_a_tick_sooner():
    clock = Clock()
    tokens = Counted("unused", clock=clock)
    assert remote_auth.TOKEN_REFRESH_EVERY == 10.0

    async def main() -> list[bool]:
        await tokens.refresh(0)
        said = []
        for after in (0.0, 9.999, 10.0):
            clock.now = 1000.0 + after
            said.append(tokens.may_refresh(tokens.version))
        return said

    assert run(main) == [False, False, True]


def test_the_relay_s_token_source_reads_the_relay_s_clock():
    ticks = Clock()
    driver = HttpRelay(URL, FileWriter(_Kept()), RelayOptions(), token_command="true", clock=ticks)
    assert driver.tokens is not None and driver.tokens._clock is ticks


def test_a_relay_answered_401_after_a_token_that_served_runs_the_command_at_once_and_then_not_again():
    runs: list[float] = []
    server = Server()

    def handle(request: Any) -> Any:
        body = json.loads(request.content) if request.content else None
        if request.method == "POST" and body and body.get("method") == "tools/call":
            server.record(request)
            return Response(401)
        return server.handle(request)

    class Tokens(Counted):
        async def _run(self) -> str:
            runs.append(round(now() - START, 3))
            return await super()._run()

    calls = [("refused", {})] * 4
    waits = Waits()

    async def main() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        options = RelayOptions(grace=0.5, request_timeout=5.0, duration=30.0, calls=calls)
        driver = HttpRelay(URL, FileWriter(_Kept()), options, clock=loop.time, sleep=waits)
        driver.tokens = Tokens("unused", clock=loop.time)
        with serving(handle):  # the scripted server, under the client
            return (await driver.run()).as_dict()

    report = run(main)
    # initialize's 200 says the first token served: the first 401 runs the command at once; the new token,
    # refused from the start, is not run again within TOKEN_REFRESH_EVERY (the four calls are all at 0 s)
    assert runs == [0.0, 0.0]
    assert report["server"]["refused"] == 4


# --- the stdio era's probe (sans-IO, a driven clock) ----------------------------------------------------------


def test_server_discover_is_given_up_at_one_second_exactly_not_a_tick_sooner():
    from diverge_codec.relay import eras
    from test_relay_session_eras import messages, session

    relay, clock = session(calls=[("echo", {})])
    started = clock.now
    relay.start()
    assert eras.DISCOVER_TIMEOUT == 1.0 and relay.next_deadline() == started + 1.0
    clock.now = started + 0.999
    assert relay.expire() == b""
    clock.now = started + 1.0
    assert [m["method"] for m in messages(relay.expire())] == ["initialize"]


def test_subscriptions_listen_unacknowledged_lets_the_calls_go_at_one_second_exactly():
    from diverge_codec.relay import eras
    from test_relay_session_eras import DISCOVERED, messages, session

    relay, clock = session(calls=[("echo", {})])
    relay.start()
    relay.receive(DISCOVERED)
    listened = clock.now
    assert eras.LISTEN_ACK_TIMEOUT == 1.0 and relay.next_deadline() == listened + 1.0
    clock.now = listened + 0.999
    assert relay.expire() == b""
    clock.now = listened + 1.0
    assert [m["method"] for m in messages(relay.expire())] == ["tools/call"]


def test_when_run_returns_every_task_it_started_has_ended():
    server = Server()

    def handle(request: Any) -> Any:
        if request.method == "GET":  # a stream that never ends: its reader is cancelled at the end, and awaited
            async def forever() -> Any:
                yield b": open\n\n"
                await asyncio.Event().wait()
                yield b""
            return Response(200, headers=SSE, content=forever())
        return server.handle(request)

    async def main() -> list[asyncio.Task[Any]]:
        options = RelayOptions(grace=0.5, request_timeout=5.0, duration=3.0, protocol="2025-11-25")
        driver = HttpRelay(URL, FileWriter(_Kept()), options)
        with serving(handle):  # the scripted server, under the client
            await driver.run()
        return [task for task in driver._tasks if not task.done()]  # a task's end takes it out of the set

    assert run(main) == []

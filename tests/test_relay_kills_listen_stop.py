"""A listen stream that cannot be opened again in the turn the program stops the relay announces no outage
(issue #45: the stop's check dropped from the listen stream's failure began an outage's bookkeeping, its INFO
line, during the end, and no scripted server timed a failure into the stop's own turn). On virtual time: the
first listen stream ends, the server goes down, and the connection the relay dials to listen again is refused in
the very turn the program calls ``shutdown()``."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from test_http_driver import URL, _Kept  # noqa: E402
from test_http_stateless import ACK, CHANGED, Modern  # noqa: E402

import virtual_time  # noqa: E402
from diverge_codec.relay.channel import FileWriter, RelayOptions  # noqa: E402
from diverge_codec.relay.streamable_http import HttpRelay  # noqa: E402
from scripted_http import HandlerBackend, serving  # noqa: E402


class StoppedWhileRefused(HandlerBackend):
    """Once down, a connection asked for is refused in the turn ``stop`` (the program's shutdown) is called."""

    stop: Any = None

    async def __call__(self, host: str, port: int) -> Any:
        if self.down:
            self.stop()
        return await super().__call__(host, port)


def _ends_then_down(backend: HandlerBackend) -> Any:
    """The first listen stream: acknowledged, one change, then it ends and the server goes down 10 ms after."""
    async def pieces() -> Any:
        yield b"data: " + ACK + b"\n\ndata: " + CHANGED + b"\n\n"
        asyncio.get_running_loop().call_later(0.01, backend.go_down)
    return pieces()


def test_a_listen_stream_refused_in_the_stop_s_turn_announces_no_outage(caplog):
    caplog.set_level(logging.INFO, logger="diverge_codec.relay")
    backend = StoppedWhileRefused(lambda request: server.handle(request))
    server = Modern(listen_streams=[_ends_then_down(backend)])

    async def embed() -> dict[str, Any]:
        driver = HttpRelay(URL, FileWriter(_Kept()), RelayOptions(grace=0.5, request_timeout=5.0, reconnect_window=30.0,
                                                                  protocol="auto"), clock=asyncio.get_running_loop().time)
        backend.stop = driver.shutdown
        return (await driver.run()).as_dict()

    with serving(backend):
        report = virtual_time.run(embed)
    assert backend.refused, "the listen stream was not dialled again once the server was down"
    assert report["server"]["shutdown"] == "requested" and "error" not in report["server"]
    lines = [record.getMessage() for record in caplog.records]
    assert any("opened again" in line for line in lines)  # the listen stream was asked for again
    assert not [line for line in lines if "cannot be reached" in line]

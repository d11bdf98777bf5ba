"""The embedding API over a remote server scripted under the client (``scripted_http.serving``): quick.

What ``test_relay_api.py`` shows against real processes, here in milliseconds and with what a real server
cannot show: the frames byte-exact and the call's answer, then no task of the relay left and every
connection closed, also when the block is cancelled; two relays on one loop sharing nothing (each server
sees its own token, a 401 asks its own provider again); a policy that reads no environment dials the
server itself with ``HTTPS_PROXY`` set, one that reads it dials the proxy.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from diverge_codec.relay import NetworkPolicy, Relay, RelayOptions, Remote  # noqa: E402
from diverge_codec.relay.http_common import DELETE_TIMEOUT  # noqa: E402
from scripted_http import HandlerBackend, Response, serving  # noqa: E402
from test_http_driver import URL, Server  # noqa: E402
import virtual_time  # noqa: E402

OPTIONS = RelayOptions(calls=[("go", {})], until_answered=True, grace=0.5, protocol="2025-11-25")


def _others(before: set[asyncio.Task[Any]]) -> list[asyncio.Task[Any]]:
    """The tasks of this loop still running that were not there ``before`` (the test's own)."""
    return [task for task in asyncio.all_tasks() - before if not task.done()]


def test_a_remote_relay_gives_each_frame_byte_exact_and_the_answer_and_leaves_nothing_behind():
    server = Server()

    async def main() -> tuple[Relay, list[bytes], Any, list[Any]]:
        before = asyncio.all_tasks()
        with serving(server.handle) as network:
            async with Relay(Remote(URL), OPTIONS, payloads=True) as relay:
                payloads = [payload async for payload in relay]
                answer = await relay.answer("tools/call go")
            left = _others(before)
        assert network.opened and all(stream.aborted for stream in network.opened)  # every connection closed
        return relay, payloads, answer, left

    relay, payloads, answer, left = asyncio.run(asyncio.wait_for(main(), 30))
    assert left == []
    assert payloads == [b'\x00{"method":"notifications/message","params":{"level":"info","data":"tools/call"}}']
    assert answer.message == {"jsonrpc": "2.0", "id": answer.message["id"], "result": {}}
    assert relay.report.as_dict()["calls"] == {"sent": 1, "answered": 1, "failed": 0, "timed_out": 0}
    assert server.methods() == ["initialize", "notifications/initialized", "tools/call"]
    assert [method for method, *_ in server.requests][-1] == "DELETE"  # the session ended with the block


@pytest.mark.parametrize(("cancelled", "delete_answered"), [("in the block", True), ("in the block", False),
                                                            ("while it ends", False)])
def test_a_cancelled_block_over_a_remote_server_ends_every_task_and_connection_before_the_cancellation_goes_on(
        cancelled, delete_answered):
    """Cancelled in the block, the relay still deletes its session (no grace); a server that never answers the
    DELETE holds the cancellation no longer than ``DELETE_TIMEOUT`` (on virtual time: this test waits for
    nothing), also when the cancellation comes while the block's end waits on it; either way every task and
    connection is ended before the cancellation goes on."""
    server = Server()
    streaming, deleting = asyncio.Event(), asyncio.Event()

    async def handle(request: Any) -> Any:
        if request.method == "DELETE" and not delete_answered:
            server.record(request)
            deleting.set()
            await asyncio.Event().wait()
        if request.method == "GET":  # a listen stream held open until the client goes
            server.record(request)

            async def forever() -> Any:
                yield b": open\n\n"
                streaming.set()
                await asyncio.Event().wait()
            return Response(200, headers={"content-type": "text/event-stream"}, content=forever())
        return server.handle(request)

    async def main() -> tuple[list[Any], HandlerBackend]:
        async def body() -> None:
            async with Relay(Remote(URL), RelayOptions(grace=5, protocol="2025-11-25")) as relay:
                if cancelled == "while it ends":
                    await streaming.wait()
                    return
                async for _ in relay:
                    pass

        before = asyncio.all_tasks()
        loop = asyncio.get_running_loop()
        with serving(handle) as network:
            task = asyncio.create_task(body())
            await (streaming if cancelled == "in the block" else deleting).wait()
            task.cancel()
            at = loop.time()
            with pytest.raises(asyncio.CancelledError):
                await task
            waited = loop.time() - at
            assert waited < 0.1 if delete_answered else DELETE_TIMEOUT - 0.1 < waited < DELETE_TIMEOUT + 0.1
            return _others(before), network

    left, network = virtual_time.run(main)
    assert left == []
    assert len(network.opened) >= 2 and all(stream.aborted for stream in network.opened)
    assert [method for method, *_ in server.requests if method != "POST"] == ["GET", "DELETE"]


class TokenServer(Server):
    """``Server`` that wants ``Bearer tok-N`` of its own name; ``refuse_first`` answers 401 to a call once."""

    def __init__(self, name: str, refuse_first: bool = False) -> None:
        super().__init__()
        self.name, self.refuse_first = name, refuse_first

    def handle(self, request: Any) -> Any:
        token = request.headers.get("authorization", "")
        if not token.startswith(f"Bearer {self.name}-"):
            return Response(401, headers={"www-authenticate": "Bearer"})
        body = json.loads(request.content) if request.content else {}
        if self.refuse_first and body.get("method") == "tools/call" and token.endswith("-1"):
            self.record(request)
            return Response(401, headers={"www-authenticate": 'Bearer error="invalid_token"'})
        return super().handle(request)


def test_two_relays_on_one_loop_share_nothing_each_provider_asked_again_after_its_own_401():
    """Each relay's token provider and policy are its own: a's server sees only a's tokens, b's only b's; the
    401 b's server gives tok-1 makes b's provider alone give a new token, and the call goes through with it."""
    servers = {"a.test": TokenServer("a"), "b.test": TokenServer("b", refuse_first=True)}
    asked: dict[str, int] = {"a": 0, "b": 0}

    def provider(name: str) -> Any:
        async def token() -> str:
            asked[name] += 1
            return f"{name}-{asked[name]}"
        return token

    def handle(request: Any) -> Any:
        return servers[request.headers["host"]].handle(request)

    async def main() -> list[dict[str, Any]]:
        with serving(handle):
            relays = [Relay(Remote(f"http://{name}.test/mcp", token=provider(name),
                                   network=NetworkPolicy(environment=False)), OPTIONS) for name in ("a", "b")]
            async with relays[0], relays[1]:
                await asyncio.gather(*(relay.answer("tools/call go") for relay in relays))
        return [relay.report.as_dict() for relay in relays]

    reports = asyncio.run(asyncio.wait_for(main(), 30))
    assert asked == {"a": 1, "b": 2}
    assert [report["calls"]["answered"] for report in reports] == [1, 1]
    for name, server in servers.items():
        tokens = {headers["authorization"] for _, _, headers, _ in server.requests}
        assert tokens == ({"Bearer a-1"} if name == "a.test" else {"Bearer b-1", "Bearer b-2"})
    calls = [headers["authorization"] for _, _, headers, body in servers["b.test"].requests
             if body and body.get("method") == "tools/call"]
    assert calls == ["Bearer b-1", "Bearer b-2"]  # refused, then sent again with the new token


@pytest.mark.parametrize("environment", [False, True])
def test_a_policy_that_reads_no_environment_dials_the_server_with_https_proxy_set(monkeypatch, environment):
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.test:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.test:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    server = Server()

    async def main() -> tuple[dict[str, Any], list[tuple[str, int]]]:
        with serving(server.handle) as network:
            async with Relay(Remote(URL, network=NetworkPolicy(environment=environment)), OPTIONS) as relay:
                await relay.answer("tools/call go")
        return relay.report.as_dict(), [(stream.host, stream.port) for stream in network.opened]

    report, dialled = asyncio.run(asyncio.wait_for(main(), 30))
    assert report["calls"]["answered"] == 1 and report["server"]["proxy"] is environment
    assert set(dialled) == ({("proxy.test", 3128)} if environment else {("mcp.test", 80)})
    targets = {(method, path) for method, path, _, _ in server.requests}
    assert ("POST", "/mcp") in targets  # the path as the server reads it, the proxy's absolute form too

"""A remote server's authorization, in-process and without a process (``relay.remote_auth``): the challenge
read in linear time, RFC 9728 metadata used only for the URL asked, every server-given string cut, a token
as token tools print it, and ``--token-command`` run at most at its documented rate (a fake clock)."""

from __future__ import annotations

import asyncio
import io
import json
import time
from typing import Any

import pytest

from diverge_codec.relay import remote_auth
from diverge_codec.relay.remote_auth import (
    SHOWN_CHARS, TOKEN_BYTES, TokenSource, describe_challenge, parse_challenge, same_resource, usable_token,
)

URL = "http://mcp.test/mcp"


@pytest.mark.parametrize(("header", "scheme", "parameters"), [
    ('Bearer error="invalid_token", resource_metadata="http://x/.well-known/oauth-protected-resource"',
     "Bearer", {"error": "invalid_token", "resource_metadata": "http://x/.well-known/oauth-protected-resource"}),
    ('Bearer realm = "a \\"b\\"" ,scope=read', "Bearer", {"realm": 'a "b"', "scope": "read"}),
    ('Bearer error="x", Basic realm="other"', "Bearer", {"error": "x"}),  # the next challenge's parameters are not ours
    ("Bearer", "Bearer", {}),
    ('Bearer ERROR="a", error="b"', "Bearer", {"error": "a"}),
    ('Bearer error="unterminated', "Bearer", {"error": "unterminated"}),
    ("", "", {}),
    ("Negotiate abc==", "Negotiate", {"abc": ""}),
])
def test_a_challenge_is_read_as_rfc_9110_spells_it(header, scheme, parameters):
    assert parse_challenge(header) == (scheme, parameters)


@pytest.mark.parametrize("header", [
    "Bearer " + "a" * 64_000,                      # what took 62.9 s: a name that never meets its "="
    "Bearer " + "a=" * 32_000,
    'Bearer a="' + "\\" * 64_000,
    "Bearer " + "a " * 32_000,
    "Bearer " + "a-" * 32_000 + "=",
])
def test_a_hostile_challenge_is_read_in_linear_time(header):
    started = time.process_time()
    scheme, parameters = parse_challenge(header)
    words, found = describe_challenge(401, header, None)
    assert scheme == "Bearer" and len(words) < 100 and all(len(value) <= SHOWN_CHARS + 3 for value in found.values()
                                                          if isinstance(value, str))
    assert time.process_time() - started < 1.0  # quadratic took 1.75 s for 16,000 letters; this is milliseconds


def test_a_401_with_no_token_sent_says_so_and_one_with_a_token_says_it_was_refused():
    challenge = 'Bearer error="invalid_token"'
    assert describe_challenge(401, challenge, None, token_sent=False)[0] == "the server wants a token (Bearer); none was sent"
    assert describe_challenge(401, None, None, token_sent=False)[0] == "the server wants a token (Bearer); none was sent"
    assert describe_challenge(401, challenge, None, token_sent=True)[0] == "the token was refused (Bearer)"
    assert describe_challenge(403, challenge, None)[0] == "the credentials do not allow this (Bearer)"


def test_metadata_is_used_only_when_its_resource_is_the_url_asked():
    challenge = 'Bearer resource_metadata="http://mcp.test/.well-known/oauth-protected-resource"'
    ours = {"resource": "HTTP://MCP.test/mcp/", "authorization_servers": ["https://auth.example"]}
    words, found = describe_challenge(401, challenge, ours, url=URL)
    assert words == "the token was refused (Bearer); get a token from https://auth.example"
    assert found["authorization_servers"] == ["https://auth.example"]
    phish = {"resource": "https://other.example/mcp", "authorization_servers": ["https://phish.example"]}
    words, found = describe_challenge(401, challenge, phish, url=URL)
    assert words == "the token was refused (Bearer); its authorization metadata (RFC 9728) names another resource: not used"
    assert "phish" not in repr(found) and found["metadata"] == "names another resource: not used"
    for resource in (None, 7, "", "http://mcp.test/mcp2", "https://mcp.test/mcp", "http://mcp.test/"):
        words, found = describe_challenge(401, challenge, {"resource": resource, "authorization_servers": ["https://p"]},
                                          url=URL)
        assert "authorization_servers" not in found, resource


def test_same_resource_leaves_the_query_out_and_nothing_else():
    assert same_resource("http://mcp.test/mcp", "http://mcp.test/mcp?key=1")
    assert not same_resource("http://mcp.test:81/mcp", URL) and not same_resource("http://[::1/mcp", URL)


def test_every_server_given_string_is_cut():
    long_url = "https://auth.example/" + "a" * 60_000
    challenge = f'Bearer error="{"e" * 1000}", scope="{"s" * 1000}", resource_metadata="{long_url[:5000]}"'
    words, found = describe_challenge(401, challenge, {"resource": URL, "authorization_servers": [long_url] * 20}, url=URL)
    assert len(words) < 300 and words.endswith("a" * (SHOWN_CHARS - len("https://auth.example/")) + "...")
    assert len(found["authorization_servers"]) == 8 and all(len(url) == SHOWN_CHARS + 3 for url in found["authorization_servers"])
    assert all(len(found[key]) == SHOWN_CHARS + 3 for key in ("error", "scope", "resource_metadata"))
    assert describe_challenge(401, "B" * 100, None)[1]["scheme"] == "B" * 32 + "..."


@pytest.mark.parametrize(("output", "token"), [
    (b"tok-1\n", "tok-1"), (b"Bearer tok-1\n", "tok-1"), (b"bearer  abc.def-ghi_~+/==\r\n", "abc.def-ghi_~+/=="),
    (b"tok-firsttok-second", "tok-firsttok-second"),
    (b"", None), (b"not a token", None), (b"Bearer", "Bearer"), (b"Basic abc", None), (b"a=b", None),
    (b"x" * TOKEN_BYTES, "x" * TOKEN_BYTES), (b"x" * (TOKEN_BYTES + 100), None),
])
def test_a_token_as_token_tools_print_it(output, token):
    assert usable_token(output) == token


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Counted(TokenSource):
    """A token source whose command is a counter (the real command's run is tested with real commands)."""

    async def _run(self) -> str:
        self.runs += 1
        return f"tok-{self.runs}"


def test_a_new_token_is_had_at_most_once_in_the_documented_interval():
    clock = Clock()
    tokens = Counted("unused", clock=clock)

    async def main() -> list[object]:
        seen: list[object] = [await tokens.refresh(0)]
        for _ in range(40):  # a server that answers 401 to everything, 12 s long: each refusal asks
            version = tokens.version
            if tokens.may_refresh(version):
                seen.append(await tokens.refresh(version))
            clock.now += 0.3
        clock.now += remote_auth.TOKEN_REFRESH_EVERY
        seen.append(tokens.may_refresh(tokens.version))
        seen.append(tokens.may_refresh(tokens.version - 1))  # a request sent with an older token: the current one
        return seen

    seen = asyncio.run(main())
    assert tokens.runs == 2 and seen == ["Bearer tok-1", "Bearer tok-2", True, True]


def test_a_token_that_served_is_renewed_at_once_when_it_expires():
    clock = Clock()
    tokens = Counted("unused", clock=clock)

    async def main() -> list[bool]:
        await tokens.refresh(0)
        refused_from_the_start = tokens.may_refresh(1)
        tokens.accepted(0)  # an older token's answer says nothing of the current one
        still = tokens.may_refresh(1)
        tokens.accepted(1)
        expired = tokens.may_refresh(1)
        await tokens.refresh(1)
        return [refused_from_the_start, still, expired, tokens.may_refresh(2)]

    assert asyncio.run(main()) == [False, False, True, False] and tokens.runs == 2


def test_a_request_sent_with_an_older_token_gets_the_current_one_without_a_run():
    tokens = Counted("unused", clock=Clock())

    async def main() -> tuple[str, str]:
        await tokens.refresh(0)
        return await tokens.refresh(0), await tokens.refresh(0)

    assert asyncio.run(main()) == ("Bearer tok-1", "Bearer tok-1") and tokens.runs == 1


def test_a_token_command_failure_is_no_unreachable_server():
    from diverge_codec.cli._watch import unreachable_line

    error = "--token-command did not finish within 30 s (it was ended, with everything it started)"
    assert unreachable_line({"server": {"transport": "streamable-http", "started": False, "error": error}}) is None
    assert unreachable_line({"server": {"transport": "streamable-http", "started": False, "error": "refused"}}) == (
        "could not reach the server (refused): nothing is listening at that host and port: is the server running, "
        "on that port?")


# --- the driver's auth, against a scripted server (the client's transport: no process, no socket) ---------------------

h11 = pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from test_http_driver import INIT, SSE, Server, _answer, _events, relay  # noqa: E402

from diverge_codec.relay import streamable_http  # noqa: E402
from diverge_codec.relay.channel import FileWriter, RelayOptions  # noqa: E402
from scripted_http import Response, serving  # noqa: E402

METADATA_URL = "http://mcp.test/.well-known/oauth-protected-resource"


class RefusingAfterInitialize(Server):
    """``initialize`` answered; every other request (the DELETE less) 401: a server that refuses every token."""

    def handle(self, request: Any) -> Any:
        body = self.record(request)
        if request.method == "POST" and body and body.get("method") == "initialize":
            return Response(200, headers={**SSE, "mcp-session-id": self.session}, content=_events(_answer(body["id"], INIT)))
        if request.method == "DELETE":
            return Response(200)
        return Response(401, headers={"www-authenticate": 'Bearer error="invalid_token"'})


class Refusing(Server):
    """401 to ``initialize`` with ``challenge``; ``metadata`` (RFC 9728) served at ``METADATA_URL``."""

    def __init__(self, challenge: str, metadata: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.challenge, self.metadata = challenge, metadata

    def handle(self, request: Any) -> Any:
        if request.url == METADATA_URL and self.metadata is not None:
            return Response(200, headers={"content-type": "application/json"}, content=_streamed(json.dumps(self.metadata)))
        self.record(request)
        return Response(401, headers={"www-authenticate": self.challenge})


def _streamed(text: str) -> Any:
    async def pieces() -> Any:
        yield text.encode()
    return pieces()


def _relay_with_tokens(server: Server, **options: Any) -> dict[str, Any]:
    """The relay with ``--token-command`` (a ``Counted`` one) against ``server``: the report."""
    driver = streamable_http.HttpRelay(URL, FileWriter(io.BytesIO()), RelayOptions(grace=0.5, request_timeout=5.0, **{"protocol": "2025-11-25", **options}),
                                       token_command="unused")
    driver.tokens = Counted("unused")
    with serving(server.handle):
        return asyncio.run(asyncio.wait_for(driver.run(), 30)).as_dict()


def test_a_server_that_refuses_every_token_runs_the_command_once_and_every_call_is_refused():
    server = RefusingAfterInitialize()
    report = _relay_with_tokens(server, calls=[(f"t{index}", {}) for index in range(20)], until_answered=True)
    assert report["server"]["token_command_runs"] == 2  # 43bf8bf: 23, one a refusal; tok-1 served initialize
    assert report["calls"] == {"sent": 20, "answered": 0, "failed": 20, "timed_out": 0}
    assert report["server"]["refused"] == 22  # the 20 calls, notifications/initialized and the GET
    deletes = [headers for method, _, headers, _ in server.requests if method == "DELETE"]
    assert [headers.get("authorization") for headers in deletes] == ["Bearer tok-2"]  # 43bf8bf: None


def test_a_401_to_a_request_without_a_token_says_none_was_sent():
    report, _ = relay(Refusing("Bearer"), )
    assert report["server"]["error"] == "HTTP 401 on initialize: the server wants a token (Bearer); none was sent"


def test_metadata_for_another_resource_is_not_used_and_its_servers_not_shown():
    challenge = f'Bearer error="invalid_token", resource_metadata="{METADATA_URL}"'
    phish = {"resource": "https://phish.example/mcp", "authorization_servers": ["https://phish.example"]}
    report, _ = relay(Refusing(challenge, phish), [("Authorization", "Bearer SECRET")])
    assert report["server"]["error"] == ("HTTP 401 on initialize: the token was refused (Bearer); its authorization "
                                         "metadata (RFC 9728) names another resource: not used")
    assert "phish" not in json.dumps(report) and "SECRET" not in json.dumps(report)
    ours = {"resource": URL, "authorization_servers": ["https://auth.example/" + "a" * 60_000]}
    report, _ = relay(Refusing(challenge, ours), [("Authorization", "Bearer SECRET")])
    assert report["server"]["error"].endswith("get a token from https://auth.example/" + "a" * (SHOWN_CHARS - 21) + "...")
    assert len(json.dumps(report)) < 3000  # 43bf8bf: the 60 KB URL, twice


def test_a_64_kb_challenge_ends_the_relay_at_once():
    started = time.process_time()
    report, _ = relay(Refusing("Bearer " + "a" * 64_000))
    assert report["server"]["error"] == "HTTP 401 on initialize: the server wants a token (Bearer); none was sent"
    assert time.process_time() - started < 10  # 43bf8bf: about 60 s of CPU; now milliseconds

"""Regenerates ``benchmarks/data/captures/<family>.jsonl``: every line a real MCP server wrote on stdout.

Run from the repository root after ``.ci/peers``::

    python benchmarks/captures/capture.py [FAMILY ...]      # default: every family

For each family it starts the server (``tests/peers/servers.py``), reads its stdout
from the first byte, performs the handshake (``initialize`` at protocol 2025-11-25,
then ``notifications/initialized``; for the 2026-07-28 families ``server/discover`` and a
``subscriptions/listen`` stream instead, every request with the revision's ``_meta``), runs the family's scenario (tool calls with
progress tokens, ``logging/setLevel``, a resource subscription, ...), answers the
server's own requests (roots, sampling, elicitation, ping), then shuts the server
down as MCP's stdio transport says (close stdin, wait, SIGTERM, wait, SIGKILL) and
keeps what it wrote meanwhile. The lines are stored verbatim, one per line; beside
each capture ``<family>.meta.json`` says the versions, the counts, what the server
wrote on stderr and how it ended. Stdlib and asyncio only.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "data" / "captures"
sys.path.insert(0, str(ROOT / "tests" / "peers"))

from servers import NODE_MODULES, VENVS, command_for, missing  # noqa: E402

PROTOCOL_VERSION = "2025-11-25"
MODERN = "2026-07-28"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "diverge-codec-capture", "version": "1.0.0"},
               "io.modelcontextprotocol/logLevel": "debug"}
ACK_WAIT = 5.0
EOF_WAIT = 6.0  # longer than server-everything's 5 s timers, so one more tick shows
TERM_WAIT = 3.0
CALL_TIMEOUT = 60.0


class Peer:
    """One server process and the client side of its session, recording stdout verbatim."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[bytes] = []
        self.stderr = bytearray()
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._read_stderr())]
        self.server_requests: collections.Counter[str] = collections.Counter()
        self.unanswered: list[str] = []

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            self.lines.append(line)
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict) or "id" not in message:
                continue
            if "method" in message:
                self.server_requests[message["method"]] += 1
                await self._send({"jsonrpc": "2.0", "id": message["id"], **_answer(message)})
            elif (future := self._pending.pop(message["id"], None)) is not None and not future.done():
                future.set_result(message)

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        while chunk := await self.process.stderr.read(1 << 16):
            self.stderr += chunk

    async def _send(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        if stdin is None or stdin.is_closing():
            return
        stdin.write(json.dumps(message).encode() + b"\n")
        try:
            await stdin.drain()
        except ConnectionError:
            pass

    async def request(self, method: str, params: dict[str, Any] | None = None,
                      timeout: float = CALL_TIMEOUT) -> dict[str, Any]:
        """Send a request and wait for its answer (result or error)."""
        request_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)
        return await asyncio.wait_for(future, timeout)

    async def call(self, name: str, arguments: dict[str, Any] | None = None, token: str | int | None = None,
                   check: bool = True, timeout: float = CALL_TIMEOUT, meta: dict[str, Any] | None = None) -> dict[str, Any]:
        """``tools/call`` with a progress token (one of our own unless given); a failed call stops the capture.
        ``meta``: the 2026-07-28 era's ``_meta``, beside the token."""
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        params["_meta"] = {**(meta or {}), "progressToken": token if token is not None else f"capture-{next(self._ids)}"}
        answer = await self.request("tools/call", params, timeout)
        if check and ("error" in answer or answer["result"].get("isError")):
            raise SystemExit(f"tools/call {name} failed: {json.dumps(answer)[:400]}")
        return answer

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(message)

    async def handshake(self, capabilities: dict[str, Any]) -> dict[str, Any]:
        answer = await self.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION, "capabilities": capabilities,
            "clientInfo": {"name": "diverge-codec-capture", "version": "1.0.0"}})
        await self.notify("notifications/initialized")
        return answer

    async def discover_and_listen(self) -> dict[str, Any]:
        """The 2026-07-28 opening: ``server/discover``, then a ``subscriptions/listen`` stream (never answered while it
        lasts: sent, not awaited) for every list change and the report's updates, until its acknowledgement."""
        meta = {key: value for key, value in MODERN_META.items() if not key.endswith("logLevel")}
        answer = await self.request("server/discover", {"_meta": meta})
        await self._send({"jsonrpc": "2.0", "id": next(self._ids), "method": "subscriptions/listen", "params": {
            "_meta": meta, "notifications": {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True,
                                             "resourceSubscriptions": ["file:///srv/data/report.txt"]}}})
        for _ in range(int(ACK_WAIT / 0.05)):
            if any(b"notifications/subscriptions/acknowledged" in line for line in self.lines):
                break
            await asyncio.sleep(0.05)
        return answer

    async def shut_down(self) -> str:
        """MCP stdio shutdown: close stdin, wait, SIGTERM, wait, SIGKILL; says how the server ended."""
        assert self.process.stdin is not None
        await asyncio.sleep(0.2)  # lets an exit that already happened be seen
        how = "exited after stdin EOF" if self.process.returncode is None else "had exited before stdin was closed"
        self.process.stdin.close()
        for wait, then in ((EOF_WAIT, signal.SIGTERM), (TERM_WAIT, signal.SIGKILL), (None, None)):
            try:
                await asyncio.wait_for(self.process.wait(), wait)
                break
            except asyncio.TimeoutError:
                assert then is not None
                how = f"still running {wait:g} s after stdin EOF; ended by {then.name}"
                self.process.send_signal(then)
        await asyncio.gather(*self._tasks)
        return f"{how} (status {self.process.returncode})"


def _text(stderr: bytes) -> str:
    """Stderr as text, without this checkout's path."""
    return stderr.decode("utf-8", "replace").replace(str(ROOT), ".")


def _is_answer(line: bytes, request_id: int) -> bool:
    try:
        message = json.loads(line)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("id") == request_id and "method" not in message


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    """What a plain client answers to the server's own requests."""
    method = request["method"]
    if method == "roots/list":
        return {"result": {"roots": [{"uri": "file:///srv/data", "name": "data"}]}}
    if method == "sampling/createMessage":
        return {"result": {"role": "assistant", "content": {"type": "text", "text": "sampled"},
                           "model": "capture", "stopReason": "endTurn"}}
    if method == "elicitation/create":
        return {"result": {"action": "decline"}}
    if method == "ping":
        return {"result": {}}
    return {"error": {"code": -32601, "message": "Method not found"}}


CLIENT_CAPABILITIES = {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}, "url": {}}}


async def _everything(peer: Peer) -> None:
    """server-everything: long-running progress, logging, a subscription, tasks, elicitation, sampling."""
    await peer.request("logging/setLevel", {"level": "debug"})
    resources = (await peer.request("resources/list"))["result"]["resources"]
    await peer.request("resources/subscribe", {"uri": resources[0]["uri"]})
    await peer.call("toggle-subscriber-updates")
    await peer.call("toggle-simulated-logging")
    for tokens in (("long-1", 2, "long-3"), (4, "long-5", 6)):  # concurrent calls interleave their progress
        await asyncio.gather(*(peer.call("trigger-long-running-operation", {"duration": 1.5, "steps": 50}, token)
                               for token in tokens))
    await peer.call("echo", {"message": "é ✓ 😀"})
    await peer.call("trigger-elicitation-request")
    await peer.call("trigger-sampling-request", {"prompt": "hello", "maxTokens": 10})
    await peer.call("trigger-url-elicitation", {"url": "https://example.com/authorize"})
    await peer.call("get-roots-list")
    created = await peer.request("tools/call", {"name": "simulate-research-query", "arguments": {"topic": "relays"},
                                                "task": {"ttl": 60000}})
    task_id = created["result"]["task"]["taskId"]
    while (await peer.request("tasks/get", {"taskId": task_id}))["result"]["status"] not in {"completed", "failed"}:
        await asyncio.sleep(0.5)
    await peer.request("tasks/result", {"taskId": task_id})
    await peer.request("resources/unsubscribe", {"uri": resources[0]["uri"]})


async def _ours(peer: Peer, flood: dict[str, Any], extra: tuple[str, ...] = ()) -> None:
    """Our servers on an SDK: ``emit_all`` ten times, a flood with progress, then ``extra`` tools."""
    await peer.request("logging/setLevel", {"level": "debug"})
    for index in range(10):
        await peer.call("emit_all", token=index if index % 2 else f"emit-{index}")
    await peer.call("flood", flood)
    for name in extra:  # last: they may end the server
        try:
            await peer.call(name, check=False, timeout=5.0)
        except asyncio.TimeoutError:
            peer.unanswered.append(name)


async def _modern(peer: Peer) -> None:
    """Our 2026-07-28 servers: ``emit_all`` ten times (log messages asked per request), an ``input_required`` answer,
    then ``initialize``, which a modern-only server refuses naming its versions."""
    for index in range(10):
        await peer.call("emit_all", token=index if index % 2 else f"emit-{index}", meta=MODERN_META)
    await peer.call("ask", check=False, meta=MODERN_META)
    await peer.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                      "clientInfo": {"name": "diverge-codec-capture", "version": "1.0.0"}})


async def _dual(peer: Peer) -> None:
    """Our dual-era servers as the relay reaches them with no option (``server/discover`` answered, so the
    2026-07-28 era): ``emit_all`` ten times, an ``input_required`` answer; no ``initialize`` (the relay sends none
    once the probe is answered)."""
    for index in range(10):
        await peer.call("emit_all", token=index if index % 2 else f"emit-{index}", meta=MODERN_META)
    await peer.call("ask", check=False, meta=MODERN_META)


MODERN_FAMILIES = ("ts-v2-modern", "py-v2-modern", "ts-v2", "py-v2")
"""The families opened in the 2026-07-28 era (``server/discover``, then the listen stream)."""

SCENARIOS = {
    "ts-sdk-everything": _everything,
    "ts-sdk": lambda peer: _ours(peer, {"count": 200, "size": 64, "every": 20}),
    "mcp-v1": lambda peer: _ours(peer, {"count": 200, "size": 64, "every": 20}, ("emit_surrogate",)),
    "mcp-v2": lambda peer: _ours(peer, {"count": 200, "size": 64}),
    "fastmcp": lambda peer: _ours(peer, {"count": 200, "size": 64, "every": 20}),
    "ts-v2-modern": _modern,
    "py-v2-modern": _modern,
    "ts-v2": _dual,
    "py-v2": _dual,
}


def versions(family: str) -> dict[str, str]:
    """The packages the family's server ran on."""
    def npm(name: str) -> str:
        return json.loads((NODE_MODULES / name / "package.json").read_text())["version"]

    def pip(python: str, *names: str) -> dict[str, str]:
        script = "import importlib.metadata as m, sys; print(*(m.version(n) for n in sys.argv[1:]))"
        found = subprocess.run([python, "-c", script, *names], capture_output=True, text=True, check=True).stdout.split()
        return dict(zip(names, found))

    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "ts-sdk-everything": lambda: {"@modelcontextprotocol/server-everything": npm("@modelcontextprotocol/server-everything"),
                                      "@modelcontextprotocol/sdk": npm("@modelcontextprotocol/sdk"), "node": node},
        "ts-sdk": lambda: {"@modelcontextprotocol/sdk": npm("@modelcontextprotocol/sdk"), "zod": npm("zod"), "node": node},
        "mcp-v1": lambda: pip(str(VENVS / "mcp-v1" / "bin" / "python"), "mcp", "pydantic"),
        "mcp-v2": lambda: pip(sys.executable, "mcp", "pydantic"),
        "fastmcp": lambda: pip(str(VENVS / "fastmcp" / "bin" / "python"), "fastmcp", "mcp", "pydantic"),
        "ts-v2-modern": lambda: {"@modelcontextprotocol/server": npm("@modelcontextprotocol/server"), "node": node},
        "py-v2-modern": lambda: pip(sys.executable, "mcp", "pydantic"),
        "ts-v2": lambda: {"@modelcontextprotocol/server": npm("@modelcontextprotocol/server"), "node": node},
        "py-v2": lambda: pip(sys.executable, "mcp", "pydantic"),
    }[family]()


async def capture(family: str) -> dict[str, Any]:
    """Run the family's server through its scenario; write the capture and its meta file."""
    command = command_for(family)
    if command is None:
        raise SystemExit(f"{family}: {missing(family)}")
    process = await asyncio.create_subprocess_exec(
        *command, cwd=ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, limit=32 << 20)
    peer = Peer(process)
    if family in MODERN_FAMILIES:
        discovered = (await peer.discover_and_listen()).get("result", {})
        initialize = {"result": {"protocolVersion": MODERN if MODERN in discovered.get("supportedVersions", ()) else None}}
    else:
        initialize = await peer.handshake(CLIENT_CAPABILITIES)
    lines_before_answer = next(index for index, line in enumerate(peer.lines) if _is_answer(line, 1))
    await SCENARIOS[family](peer)
    lines_before_shutdown = len(peer.lines)
    ended = await peer.shut_down()
    lines = [line if line.endswith(b"\n") else line + b"\n" for line in peer.lines]
    (OUT / f"{family}.jsonl").write_bytes(b"".join(lines))
    methods = collections.Counter(json.loads(line).get("method", "(response)") for line in lines)
    meta = {
        "family": family,
        "versions": versions(family),
        "negotiated_protocol_version": initialize.get("result", {}).get("protocolVersion"),
        "lines": len(lines),
        "lines_before_initialize_answer": lines_before_answer,
        "lines_after_stdin_closed": len(lines) - lines_before_shutdown,
        "methods": dict(sorted(methods.items())),
        "server_requests": dict(sorted(peer.server_requests.items())),
        "calls_unanswered": peer.unanswered,
        "stderr_bytes": len(peer.stderr),
        "stderr_head": _text(peer.stderr[:600]),
        "stderr_tail": _text(peer.stderr[-300:]) if len(peer.stderr) > 600 else "",
        "ended": ended,
    }
    (OUT / f"{family}.meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    return meta


def main(families: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for family in families or list(SCENARIOS):
        if family not in SCENARIOS:
            raise SystemExit(f"unknown family {family!r}; one of {', '.join(SCENARIOS)}")
        meta = asyncio.run(capture(family))
        print(f"{family}: {meta['lines']} lines, {sum(n for m, n in meta['methods'].items() if m.startswith('notifications/'))}"
              f" notifications; {meta['ended']}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

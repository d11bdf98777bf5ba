"""What real MCP servers write, pinned on the committed captures, and the peers that tests start.

The capture facts run without network, node or the foreign SDKs: they read
``benchmarks/data/captures``. The live tests start the stdlib peers (always there) and
the SDK servers where ``.ci/peers`` installed them (skipped otherwise, with the reason).
"""

from __future__ import annotations

import asyncio
import collections
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REQUIRE_PEERS

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "benchmarks" / "data" / "captures"
sys.path.insert(0, str(ROOT / "tests" / "peers"))
sys.path.insert(0, str(ROOT / "benchmarks" / "captures"))

import capture  # noqa: E402
import facts  # noqa: E402
from servers import NAMES, command_for, missing  # noqa: E402

FAMILIES = facts.FAMILIES
MB = 1 << 20


def _lines(family: str) -> list[bytes]:
    return (CAPTURES / f"{family}.jsonl").read_bytes().splitlines(keepends=True)


def _meta(family: str) -> dict[str, Any]:
    return json.loads((CAPTURES / f"{family}.meta.json").read_text())


# --- the captures: what each SDK writes -------------------------------------------------

# (notifications, responses, server requests)
COUNTS = {
    "ts-sdk-everything": (318, 29, 4),
    "ts-sdk": (440, 13, 0),
    "mcp-v1": (400, 13, 0),
    "mcp-v2": (380, 13, 0),
    "fastmcp": (410, 13, 0),
}
# Where ``jsonrpc`` stands among a notification's members, and the member orders seen.
NOTIFICATION_ORDERS = {
    "ts-sdk-everything": {"method,jsonrpc": 5, "method,params,jsonrpc": 313},
    "ts-sdk": {"method,jsonrpc": 30, "method,params,jsonrpc": 410},
    "mcp-v1": {"method,jsonrpc": 30, "method,params,jsonrpc": 370},
    "mcp-v2": {"jsonrpc,method": 30, "jsonrpc,method,params": 350},
    "fastmcp": {"jsonrpc,method": 60, "jsonrpc,method,params": 350},
}
RESPONSE_JSONRPC = {  # the TS SDK writes responses as {"result":…,"jsonrpc":"2.0","id":…}
    "ts-sdk-everything": {"middle": 29}, "ts-sdk": {"middle": 13},
    "mcp-v1": {"first": 13}, "mcp-v2": {"first": 13}, "fastmcp": {"first": 13},
}
METHODS = {
    "ts-sdk-everything": {
        "notifications/message": 6, "notifications/progress": 300, "notifications/resources/updated": 2,
        "notifications/tasks/status": 5, "notifications/tools/list_changed": 5},
    "ts-sdk": {
        "notifications/cancelled": 10, "notifications/diverge/custom": 10, "notifications/elicitation/complete": 10,
        "notifications/message": 320, "notifications/progress": 50, "notifications/prompts/list_changed": 10,
        "notifications/resources/list_changed": 10, "notifications/resources/updated": 10,
        "notifications/tools/list_changed": 10},
    "mcp-v1": {
        "notifications/elicitation/complete": 10, "notifications/message": 300, "notifications/progress": 50,
        "notifications/prompts/list_changed": 10, "notifications/resources/list_changed": 10,
        "notifications/resources/updated": 10, "notifications/tools/list_changed": 10},
    "mcp-v2": {
        "notifications/cancelled": 10, "notifications/elicitation/complete": 10, "notifications/message": 290,
        "notifications/progress": 30, "notifications/prompts/list_changed": 10,
        "notifications/resources/list_changed": 10, "notifications/resources/updated": 10,
        "notifications/tools/list_changed": 10},
    "fastmcp": {
        "notifications/elicitation/complete": 10, "notifications/message": 290, "notifications/progress": 40,
        "notifications/prompts/list_changed": 20, "notifications/resources/list_changed": 20,
        "notifications/resources/updated": 10, "notifications/tools/list_changed": 20},
}
# Lines holding a lone surrogate escape; ``params`` absent (never ``{}``) on list_changed.
LONE_SURROGATES = {"ts-sdk-everything": 0, "ts-sdk": 40, "mcp-v1": 0, "mcp-v2": 0, "fastmcp": 0}
PARAMS_ABSENT = {"ts-sdk-everything": 5, "ts-sdk": 30, "mcp-v1": 30, "mcp-v2": 30, "fastmcp": 60}


@pytest.mark.parametrize("family", FAMILIES)
def test_capture_facts(family: str) -> None:
    found = facts.facts(CAPTURES / f"{family}.jsonl")
    assert (found.notifications, found.responses, found.server_requests) == COUNTS[family]
    assert dict(found.member_orders) == NOTIFICATION_ORDERS[family]
    assert dict(found.response_jsonrpc_position) == RESPONSE_JSONRPC[family]
    assert dict(found.methods) == METHODS[family]
    assert found.lone_surrogates == LONE_SURROGATES[family]
    assert (found.params_absent, found.params_empty, found.meta) == (PARAMS_ABSENT[family], 0, 0)
    # No SDK adds whitespace: every notification is the compact JSON of its own members.
    assert found.compact == found.notifications
    # Non-ASCII is written as raw UTF-8; the only escapes are the TS SDK's lone surrogates.
    assert found.unicode_escapes == found.lone_surrogates


@pytest.mark.parametrize("family", FAMILIES)
def test_capture_is_lines_of_json_objects_and_matches_its_meta(family: str) -> None:
    lines = _lines(family)
    assert sum(map(len, lines)) < MB
    assert all(line.endswith(b"\n") and b"\r" not in line and line.count(b"\n") == 1 for line in lines)
    messages = [json.loads(line) for line in lines]
    assert all(isinstance(message, dict) and message.get("jsonrpc") == "2.0" for message in messages)
    meta = _meta(family)
    assert meta["lines"] == len(lines)
    assert meta["methods"] == dict(collections.Counter(m.get("method", "(response)") for m in messages))
    assert meta["negotiated_protocol_version"] == "2025-11-25"
    # No server wrote anything before its answer to initialize.
    assert meta["lines_before_initialize_answer"] == 0 and "method" not in messages[0] and messages[0]["id"] == 1


def test_captures_readme_table_is_current() -> None:
    assert facts.table() in (CAPTURES / "README.md").read_text()


def test_ts_sdk_writes_lone_surrogates_as_escapes() -> None:
    lines = _lines("ts-sdk")
    cut = b'{"method":"notifications/message","params":{"level":"info","data":"\\ud83d"},"jsonrpc":"2.0"}\n'
    tail = b'{"method":"notifications/message","params":{"level":"warning","logger":"ts-peer","data":{"tail":"\\ude00"}},"jsonrpc":"2.0"}\n'
    preview = b'{"method":"notifications/message","params":{"level":"notice","data":{"preview":"preview \\ud83d","cut":true}},"jsonrpc":"2.0"}\n'
    assert (lines.count(cut), lines.count(tail), lines.count(preview)) == (10, 10, 10)
    # The whole emoji, by contrast, is raw UTF-8.
    assert sum("😀".encode() in line for line in lines) == 80


def test_list_changed_has_no_params_in_any_sdk() -> None:
    written = {family: {line for line in _lines(family) if b"tools/list_changed" in line} for family in FAMILIES}
    last = {b'{"method":"notifications/tools/list_changed","jsonrpc":"2.0"}\n'}
    first = {b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'}
    assert written == {"ts-sdk-everything": last, "ts-sdk": last, "mcp-v1": last, "mcp-v2": first, "fastmcp": first}


def test_python_sdks_write_floats_where_the_ts_sdk_writes_integers() -> None:
    """``report_progress(0, 4)`` is ``0.0``/``4.0`` in the Python SDKs (pydantic floats), ``0``/``4`` in TS."""
    def first_progress(family: str) -> bytes:
        return next(line for line in _lines(family) if b'"progressToken":"emit-0"' in line)
    assert first_progress("ts-sdk") == (
        b'{"method":"notifications/progress","params":{"progressToken":"emit-0","progress":0,"total":4,'
        b'"message":"starting"},"jsonrpc":"2.0"}\n')
    assert first_progress("mcp-v1") == (
        b'{"method":"notifications/progress","params":{"progressToken":"emit-0","progress":0.0,"total":4.0,'
        b'"message":"starting"},"jsonrpc":"2.0"}\n')
    assert first_progress("fastmcp") == (
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"emit-0","progress":0.0,'
        b'"total":4.0,"message":"starting"}}\n')


def test_server_everything_sends_task_status_and_its_own_requests() -> None:
    messages = [json.loads(line) for line in _lines("ts-sdk-everything")]
    statuses = [m["params"]["status"] for m in messages if m.get("method") == "notifications/tasks/status"]
    assert statuses == ["working"] * 4 + ["completed"]
    assert _meta("ts-sdk-everything")["server_requests"] == {
        "elicitation/create": 2, "roots/list": 1, "sampling/createMessage": 1}
    progress = [m["params"] for m in messages if m.get("method") == "notifications/progress"]
    assert {p["progressToken"] for p in progress} == {"long-1", 2, "long-3", 4, "long-5", 6}
    assert all(list(p) == ["progress", "total", "progressToken"] for p in progress)


def test_how_each_server_ended_after_stdin_eof() -> None:
    ended = {family: _meta(family)["ended"] for family in FAMILIES}
    assert ended == {
        # its simulated logging and resource-update timers keep node alive: stdin EOF is ignored
        "ts-sdk-everything": "still running 6 s after stdin EOF; ended by SIGTERM (status -15)",
        "ts-sdk": "exited after stdin EOF (status 0)",
        # the lone surrogate killed its writer; the process lingers until stdin EOF
        "mcp-v1": "exited after stdin EOF (status 1)",
        "mcp-v2": "exited after stdin EOF (status 0)",
        "fastmcp": "exited after stdin EOF (status 0)",
    }
    assert _meta("ts-sdk-everything")["lines_after_stdin_closed"] == 1
    assert _meta("mcp-v1")["calls_unanswered"] == ["emit_surrogate"]
    assert _meta("mcp-v1")["stderr_tail"].endswith(
        "UnicodeEncodeError: 'utf-8' codec can't encode character '\\udcff' in position 5: surrogates not allowed\n"
        "    +------------------------------------\n")


def test_mcp_v1_fastmcp_has_no_logging_set_level() -> None:
    assert _lines("mcp-v1")[1] == b'{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found"}}\n'


# --- the command table ------------------------------------------------------------------

def test_command_table() -> None:
    assert NAMES == ("ts-sdk-everything", "ts-sdk", "server-memory", "ts-sdk-early", "mcp-v1", "mcp-v2", "fastmcp",
                     "ts-v2", "ts-v2-modern", "py-v2", "py-v2-modern",
                     "eof-ignoring", "eof-ignoring-sigterm", "exit-at-once", "big-log")
    for name in NAMES:
        assert (command_for(name) is None) == (missing(name) is not None)
    for name in ("eof-ignoring", "eof-ignoring-sigterm", "exit-at-once", "big-log"):
        assert command_for(name)[0] == sys.executable  # stdlib only: always there
    assert command_for("eof-ignoring-sigterm")[-1] == "--ignore-sigterm"
    with pytest.raises(KeyError):
        command_for("no-such-server")


# --- the stdlib peers, live ---------------------------------------------------------------

INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}).encode() + b"\n"


def _start(name: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command_for(name), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)


def test_eof_ignoring_server_needs_sigkill() -> None:
    server = _start("eof-ignoring-sigterm")
    try:
        server.stdin.write(INITIALIZE)
        server.stdin.close()  # EOF at once: it answers and logs all the same
        answer = json.loads(server.stdout.readline())
        assert answer["id"] == 1 and answer["result"]["protocolVersion"] == "2025-11-25"
        first = [json.loads(server.stdout.readline())["params"]["data"]["index"] for _ in range(3)]
        assert first == [0, 1, 2]
        server.send_signal(signal.SIGTERM)
        server.stdout.readline()  # may have been written before the signal landed
        later = [json.loads(server.stdout.readline())["params"]["data"]["index"] for _ in range(3)]
        assert later[0] > 2 and server.poll() is None  # it wrote after SIGTERM: still alive
    finally:
        server.kill()
        server.wait(timeout=30)
    assert server.returncode == -signal.SIGKILL


def test_eof_ignoring_server_without_flag_ends_on_sigterm() -> None:
    server = _start("eof-ignoring")
    server.stdin.write(INITIALIZE)
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["id"] == 1
    server.stdout.readline()
    server.terminate()
    server.stdin.close()
    server.stdout.close()
    assert server.wait(timeout=30) == -signal.SIGTERM


def test_exit_at_once_server() -> None:
    done = subprocess.run(command_for("exit-at-once"), input=INITIALIZE, capture_output=True, timeout=30)
    assert (done.returncode, done.stdout) == (3, b"")


def test_big_log_server_writes_one_line_over_two_mib() -> None:
    initialized = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    done = subprocess.run(command_for("big-log"), input=INITIALIZE + initialized, capture_output=True, timeout=60)
    lines = done.stdout.splitlines(keepends=True)
    assert done.returncode == 0 and [len(line) for line in lines[1:]] == [(2 << 20) + 87, 104]
    assert lines[1].startswith(b'{"method":"notifications/message","params":{"level":"info","data":"xxx')
    assert lines[2] == b'{"method":"notifications/message","params":{"level":"info","data":"after the big one"},"jsonrpc":"2.0"}\n'


# --- the SDK servers, live (where .ci/peers installed them) ------------------------------

def _live(name: str) -> list[str]:
    command = command_for(name)
    if command is None:
        (pytest.fail if REQUIRE_PEERS else pytest.skip)(f"{name}: {missing(name)} (CI runs .ci/peers first)")
    return command


async def _session(command: list[str], scenario: Any) -> capture.Peer:
    process = await asyncio.create_subprocess_exec(
        *command, cwd=ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, limit=32 << 20)
    peer = capture.Peer(process)
    try:
        await peer.handshake(capture.CLIENT_CAPABILITIES)
        await scenario(peer)
    finally:
        process.stdin.close()
        if process.returncode is None:
            process.kill()
        await process.wait()
    return peer


def _orders(peer: capture.Peer) -> set[str]:
    """The member orders of the notifications the peer wrote, with ``params`` folded in."""
    orders = set()
    for line in peer.lines:
        keys = [key for key, _ in json.loads(line, object_pairs_hook=lambda pairs: pairs)]
        if "method" in keys and "id" not in keys:
            orders.add(",".join(key for key in keys if key != "params"))
    return orders


@pytest.mark.parametrize(("name", "order"), [
    ("ts-sdk", "method,jsonrpc"), ("mcp-v1", "method,jsonrpc"), ("mcp-v2", "jsonrpc,method"),
    ("fastmcp", "jsonrpc,method")])
def test_live_sdk_server_member_order(name: str, order: str) -> None:
    command = _live(name)
    peer = asyncio.run(_session(command, lambda peer: peer.call("emit_all")))
    assert _orders(peer) == {order}
    assert sum(b'"method":"notifications/' in line for line in peer.lines) >= 15


def test_live_server_everything_progress() -> None:
    command = _live("ts-sdk-everything")

    async def scenario(peer: capture.Peer) -> None:
        await peer.call("trigger-long-running-operation", {"duration": 0.05, "steps": 3}, "live")

    peer = asyncio.run(_session(command, scenario))
    progress = [line for line in peer.lines if b"notifications/progress" in line]
    assert progress == [
        b'{"method":"notifications/progress","params":{"progress":%d,"total":3,"progressToken":"live"},"jsonrpc":"2.0"}\n'
        % step for step in (1, 2, 3)]
    assert peer.stderr == b"Starting default (STDIO) server...\n"


def test_live_ts_server_early_logs_before_answering_initialize() -> None:
    command = _live("ts-sdk-early")
    peer = asyncio.run(_session(command, lambda peer: asyncio.sleep(0)))
    assert peer.lines[0] == (
        b'{"method":"notifications/message","params":{"level":"info","logger":"ts-peer",'
        b'"data":"started, before initialize"},"jsonrpc":"2.0"}\n')
    assert json.loads(peer.lines[1])["id"] == 1

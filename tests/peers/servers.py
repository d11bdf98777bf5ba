"""How to start each real MCP server the tests and captures run against (stdlib only).

``command_for(name)`` gives the argv, or None when what the server needs is not
installed here, so a test can skip with ``missing(name)`` as its reason; CI installs
everything with ``.ci/peers``. Import it by path (``tests/peers`` is not a package)::

    sys.path.insert(0, "tests/peers"); from servers import command_for, missing

Names: the capture families (``ts-sdk-everything``, ``ts-sdk``, ``mcp-v1``, ``mcp-v2``,
``fastmcp``), the 2026-07-28 servers of both SDKs, dual-era and modern-only (``ts-v2``,
``ts-v2-modern``: npm's ``@modelcontextprotocol/server``; ``py-v2``, ``py-v2-modern``: mcp 2.x), ``ts-sdk-early`` (our TS server writing a log line before it answers
``initialize``), ``server-memory`` (npm's knowledge-graph server: it writes nothing
between calls, the quiet kind most servers are; set ``MEMORY_FILE_PATH``), and the stdlib peers for the relay's edge cases (``eof-ignoring``,
``eof-ignoring-sigterm``, ``exit-at-once``, ``big-log``).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

PEERS = Path(__file__).resolve().parent
ROOT = PEERS.parent.parent
NODE_MODULES = PEERS / "node_modules"
EVERYTHING = NODE_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
MEMORY = NODE_MODULES / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"  # quiet between calls
VENVS = PEERS / ".venvs"  # made by .ci/peers: one throwaway venv per foreign SDK line


def _node(script: Path, *args: str) -> Callable[[], list[str] | str]:
    def command() -> list[str] | str:
        node = shutil.which("node")
        if node is None:
            return "node is not on PATH"
        if not (NODE_MODULES / "@modelcontextprotocol" / "sdk" / "package.json").is_file() or not script.is_file():
            return "the npm peers are not installed (run .ci/peers)"
        return [node, str(script), *args]
    return command


def _venv(venv: str, script: str) -> Callable[[], list[str] | str]:
    def command() -> list[str] | str:
        python = VENVS / venv / "bin" / "python"
        if not python.is_file():
            return f"the {venv} venv is not installed (run .ci/peers)"
        return [str(python), str(PEERS / script)]
    return command


def _mcp_v2() -> list[str] | str:
    if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("mcp.server.mcpserver") is None:
        return "mcp 2.x (the [mcp] extra) is not installed"
    return [sys.executable, str(ROOT / "examples" / "mcp_relay" / "server.py")]


def _mcp_v2_peer(*args: str) -> Callable[[], list[str] | str]:
    def command() -> list[str] | str:
        if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("mcp.server.runner") is None:
            return "mcp 2.x (the [mcp] extra) is not installed"
        return [sys.executable, str(PEERS / "py_v2_server.py"), *args]
    return command


def _node_v2(*args: str) -> Callable[[], list[str] | str]:
    script = PEERS / "ts_v2_server.mjs"

    def command() -> list[str] | str:
        if not (NODE_MODULES / "@modelcontextprotocol" / "server" / "package.json").is_file():
            return "the npm peers are not installed (run .ci/peers)"
        return _node(script, *args)()
    return command


def _stdlib(script: str, *args: str) -> Callable[[], list[str]]:
    return lambda: [sys.executable, str(PEERS / script), *args]


_COMMANDS: dict[str, Callable[[], list[str] | str]] = {
    "ts-sdk-everything": _node(EVERYTHING, "stdio"),
    "ts-sdk": _node(PEERS / "ts_server.mjs"),
    "server-memory": _node(MEMORY),
    "ts-sdk-early": _node(PEERS / "ts_server.mjs", "--early"),  # logs once before initialize is answered
    "mcp-v1": _venv("mcp-v1", "py_v1_server.py"),
    "mcp-v2": _mcp_v2,
    "fastmcp": _venv("fastmcp", "fastmcp_server.py"),
    "ts-v2": _node_v2(),  # dual-era: serveStdio's default
    "ts-v2-modern": _node_v2("--legacy", "reject"),
    "py-v2": _mcp_v2_peer(),  # dual-era: MCPServer.run's
    "py-v2-modern": _mcp_v2_peer("--modern-only"),
    "eof-ignoring": _stdlib("eof_ignoring_server.py"),
    "eof-ignoring-sigterm": _stdlib("eof_ignoring_server.py", "--ignore-sigterm"),
    "exit-at-once": _stdlib("exit_at_once_server.py"),
    "big-log": _stdlib("big_log_server.py"),
}
NAMES = tuple(_COMMANDS)


def command_for(name: str) -> list[str] | None:
    """The argv that starts server ``name``, None when its requirements are missing; KeyError for an unknown name."""
    command = _COMMANDS[name]()
    return command if isinstance(command, list) else None


def missing(name: str) -> str | None:
    """Why ``command_for(name)`` is None (a skip reason), or None when it can start."""
    command = _COMMANDS[name]()
    return command if isinstance(command, str) else None

"""The embedding examples (examples/embedding/, docs/embedding.md) run, each against a server this test starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples" / "embedding"
sys.path.insert(0, str(HERE))
from test_relay_api import SERVER  # noqa: E402


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "server.py"
    path.write_text(SERVER)
    return str(path)


def test_relaying_a_stdio_server_and_acting_on_each_frame(script):
    done = _run(str(EXAMPLES / "stdio_frames.py"), "--call", "go", "--", sys.executable, script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "notifications/message ", "notifications/progress progress=1", "notifications/message ",
        'answer: {"id": 1, "jsonrpc": "2.0", "result": {"content": [{"text": "done", "type": "text"}]}}',
        'report: {"sent": 1, "answered": 1, "failed": 0, "timed_out": 0} relayed 3',
    ]


def test_relaying_a_remote_server_with_a_token_provider_and_an_own_ssl_context(tmp_path):
    trustme = pytest.importorskip("trustme", reason="the TLS tests make their CA with trustme (the test extra)")
    pytest.importorskip("h11")
    ca = trustme.CA()
    pem, ca_file, token = tmp_path / "server.pem", tmp_path / "ca.pem", tmp_path / "token"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(pem))
    ca.cert_pem.write_to_path(str(ca_file))
    token.write_text("tok-1\n")
    server = subprocess.Popen([sys.executable, str(HERE / "http_servers.py"), "bearer:100"], stdout=subprocess.PIPE,
                              env={**os.environ, "TLS_CERT": str(pem), "TLS_KEY": str(pem), "SENT_LOG": str(tmp_path / "log")})
    try:
        assert server.stdout is not None
        url = f"https://127.0.0.1:{int(server.stdout.readline())}/mcp"
        env = {**os.environ, "HTTPS_PROXY": "http://127.0.0.1:9", "SSL_CERT_FILE": "/nonexistent"}  # unread
        done = _run(str(EXAMPLES / "remote_token_tls.py"), url, "--cafile", str(ca_file), "--token-file", str(token),
                    "--call", "go", env=env)
    finally:
        server.kill()
        server.wait()
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == ("calls {'sent': 1, 'answered': 1, 'failed': 0, 'timed_out': 0} token asked 1 "
                                            "unreachable False")


def test_running_a_fleet_from_a_config(tmp_path, script):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"mcpServers": {
        "one": {"command": sys.executable, "args": [script]},
        "two": {"command": sys.executable, "args": [script], "env": {"UNUSED": "1"}},
        "gone": {"command": sys.executable, "args": [str(HERE / "relay_servers.py"), "exit", "3"]},
    }}))
    done = _run(str(EXAMPLES / "fleet.py"), str(config), "--call", "go")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["one: 3 notifications, 0 dropped", "two: 3 notifications, 0 dropped",
                                        "gone: 1 notifications, 0 dropped"]

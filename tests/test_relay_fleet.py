"""``relay --config FILE --out-dir DIR``: many servers of an mcpServers config in one process (issue #43).

Twenty servers, stdio and Streamable HTTP mixed, one of which crashes and one floods: every channel is
byte-exact in its own file, a summary line per server, a section per server in the report. The config's
refusals (an unknown member, an unsafe key, an unset variable) are pinned, each before anything starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from diverge_codec import stream

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from test_relay_api import EXPECTED, SERVER  # noqa: E402
from test_relay_http import _one_span_removed, _sent_notifications  # noqa: E402

RELAY = [sys.executable, "-m", "diverge_codec", "relay"]


def _fleet(config: dict, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    done = subprocess.run([*RELAY, "--config", str(path), "--out-dir", str(out), *args], capture_output=True, text=True,
                          timeout=120)
    lines = done.stderr.strip().splitlines()
    return done, json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}


@pytest.fixture
def http_servers(tmp_path):
    pytest.importorskip("h11")
    started = []
    for index in range(4):
        log = tmp_path / f"sent{index}.jsonl"
        process = subprocess.Popen([sys.executable, str(HERE / "http_servers.py"), "bytes"], stdout=subprocess.PIPE,
                                   env={**os.environ, "SENT_LOG": str(log)})
        assert process.stdout is not None
        started.append((process, f"http://127.0.0.1:{int(process.stdout.readline())}/mcp", log))
    yield [(url, log) for _, url, log in started]
    for process, _, _ in started:
        process.kill()
        process.wait()


def test_twenty_servers_in_one_process_each_channel_whole(tmp_path, http_servers):
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    servers: dict = {f"stdio-{i:02}": {"command": sys.executable, "args": [str(script)]} for i in range(14)}
    servers |= {f"http-{i}": {"url": url, "type": "http"} for i, (url, _) in enumerate(http_servers)}
    servers["crash"] = {"command": sys.executable, "args": [str(HERE / "relay_servers.py"), "killed", "5"]}
    servers["flood"] = {"command": sys.executable, "args": [str(HERE / "relay_servers.py"), "flood", "100000"]}
    assert len(servers) == 20
    done, report = _fleet({"mcpServers": servers}, tmp_path, "--call", "go", "--until-answered", "--request-timeout", "10",
                          "--grace", "1")
    out = tmp_path / "out"
    assert sorted(path.name for path in out.iterdir()) == sorted(f"{key}.bin" for key in servers)
    assert sorted(report["servers"]) == sorted(servers)  # a section per server
    assert all(report["servers"][f"http-{i}"]["calls"]["answered"] == 1 for i in range(4))
    whole = b"".join(stream.record(payload) for payload in EXPECTED)
    for i in range(14):
        assert (out / f"stdio-{i:02}.bin").read_bytes() == whole
        assert report["servers"][f"stdio-{i:02}"]["exit_status"] == 0
    for i, (_, log) in enumerate(http_servers):
        payloads = list(map(bytes, stream.split_records((out / f"http-{i}.bin").read_bytes())))
        kept = [data for data in _sent_notifications(log) if b"\xff" not in data]
        assert len(payloads) == len(kept) == 4 and all(map(_one_span_removed, kept, payloads))
    crash = list(map(bytes, stream.split_records((out / "crash.bin").read_bytes())))
    assert crash == [b'\x00{"method":"notifications/message","params":{"level":"info","data":%d}}' % i for i in range(5)]
    assert report["servers"]["crash"]["exit_status"] == 1 and report["servers"]["crash"]["server"]["signal"] == "SIGKILL"
    flood = report["servers"]["flood"]
    assert flood["seen"] == 100000 and flood["relayed"] == 100000
    assert len(stream.split_records((out / "flood.bin").read_bytes())) == 100000
    summaries = [line for line in done.stderr.splitlines() if line.startswith("diverge-codec: ")]
    assert sorted(line.split(":")[1].strip() for line in summaries) == sorted(servers)
    assert "diverge-codec: stdio-00: 3 seen, 3 relayed, 0 dropped; until-answered, exit 0" in summaries
    assert done.returncode == report["exit_status"] == 1


def test_a_named_server_runs_alone(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    servers = {name: {"command": sys.executable, "args": [str(script)]} for name in ("one", "two")}
    done, report = _fleet({"mcpServers": servers}, tmp_path, "--server", "two", "--call", "go", "--until-answered")
    assert done.returncode == 0 and list(report["servers"]) == ["two"]
    assert [path.name for path in (tmp_path / "out").iterdir()] == ["two.bin"]


@pytest.mark.parametrize(("config", "words"), [
    ({"mcpServers": {"a": {"command": "x", "timeout": 3}}}, 'server "a": unknown member "timeout"'),
    ({"mcpServers": {"a": {"url": "http://h/mcp", "command": "x"}}}, 'server "a": unknown member "command" (a remote server)'),
    ({"mcpServers": {"../a": {"command": "x"}}}, 'server "../a": its key is no safe file name'),
    ({"mcpServers": {"a": {"command": "x", "env": {"T": "${FLEET_UNSET_SECRET}"}}}},
     'server "a": env T: ${FLEET_UNSET_SECRET} is not set in the environment'),
    ({"mcpServers": {"a": {"url": "ftp://h"}}}, 'server "a": --url must be an http:// or https:// URL with a host'),
    ({"mcpServers": {"a": {"type": "websocket", "url": "ws://h"}}}, 'server "a": type must be one of'),
    ({"servers": {}, "mcpServers": {}}, 'needs an "mcpServers" object'),
])
def test_a_config_that_cannot_be_used_is_refused_by_name_before_anything_starts(tmp_path, config, words):
    done, _ = _fleet(config, tmp_path)
    assert done.returncode == 2 and words in done.stderr and done.stderr.count("\n") == 1
    assert list((tmp_path / "out").iterdir()) == []

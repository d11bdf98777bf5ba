"""``relay --url`` reaching every deployed remote server: the older HTTP+SSE transport, tokens kept off the
command line, authorization in words, TLS with a private CA and a client certificate.

Real servers speak the older transport here: server-everything's ``sse`` mode (the TypeScript SDK's
``SSEServerTransport``) and an mcp 1.x ``FastMCP`` run with ``sse``, each through ``auto`` (MCP's
detection: the ``initialize`` POST answered 404 or 405) and ``--transport sse``. Every relayed payload is
held to what those SDKs write: compact JSON, the server's member order, ``jsonrpc`` removed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from diverge_codec import stream
from diverge_codec.sequence import State

sys.path.insert(0, str(Path(__file__).with_name("peers")))
from test_relay_command import _report, channel  # noqa: E402
from test_relay_http import EVERYTHING, HERE, RELAY, _free_port, _relay, _wait_listening, odd_server  # noqa: E402,F401
from test_relay_peers import peer  # noqa: E402

pytest.importorskip("h11", reason="relay --url needs the [http] extra (h11)")

MCP_V1_SSE = ("import runpy, sys; s = runpy.run_path(sys.argv[1])['server']; s.settings.host = '127.0.0.1'; "
              "s.settings.port = int(sys.argv[2]); s.run('sse')")


def _compact(payload: bytes) -> bool:
    """The payload is tag 0 and compact JSON as the SDKs write it (no byte re-spelled by the relay)."""
    body = payload[1:]
    return payload[:1] == b"\x00" and body == json.dumps(json.loads(body), separators=(",", ":"), ensure_ascii=False).encode()


def _legacy_server(name: str, port: int) -> subprocess.Popen[bytes]:
    if name == "ts-sdk-everything":
        command = ["node", str(EVERYTHING), "sse"]
    else:
        venv = HERE / "peers" / ".venvs" / "mcp-v1" / "bin" / "python"
        command = [str(venv), "-c", MCP_V1_SSE, str(HERE / "peers" / "py_v1_server.py"), str(port)]
    process = subprocess.Popen(command, env={**os.environ, "PORT": str(port)}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    _wait_listening(port, process)
    return process


LEGACY = {
    "ts-sdk-everything": (["--request", 'logging/setLevel={"level":"debug"}',
                           "--call", 'trigger-long-running-operation={"duration":1,"steps":5}', "--until-answered"], 405),
    "mcp-v1": (["--call", "emit_all", "--until-answered"], 405),
}


@pytest.mark.parametrize("transport", ["auto", "sse"])
@pytest.mark.parametrize("name", sorted(LEGACY))
def test_a_server_of_the_older_http_sse_transport_is_relayed(name, transport):
    peer(name)
    port = _free_port()
    server = _legacy_server(name, port)
    try:
        args, _ = LEGACY[name]
        status, out, report = _relay(f"http://127.0.0.1:{port}/sse", "--transport", transport, *args, "--grace", "1",
                                     timeout=120)
    finally:
        server.kill()
        server.wait()
    notifications, error, state = channel(out)
    assert status == 0 and error is None and state is State.FINISHED
    assert report["server"]["transport"] == "sse" and report["calls"]["failed"] == 0
    assert report["calls"]["answered"] == report["calls"]["sent"] > 0
    payloads = [bytes(payload) for payload in stream.split_records(out)]
    assert len(payloads) == report["relayed"] >= 5 and all(map(_compact, payloads))
    assert "notifications/progress" in {n["method"] for n in notifications}
    if transport == "auto":  # the POST that told it: a 404 or 405 to initialize
        assert {"404", "405"} & set(report["server"]["statuses"])


def test_a_server_of_the_older_transport_restarted_gets_a_new_session():
    peer("ts-sdk-everything")
    port = _free_port()
    server = _legacy_server("ts-sdk-everything", port)
    relay = subprocess.Popen([*RELAY, "--url", f"http://127.0.0.1:{port}/sse", "--request",
                              'tools/call={"name":"toggle-simulated-logging","arguments":{}}', "--duration", "14",
                              "--grace", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(5)
        server.kill()
        server.wait()
        server = _legacy_server("ts-sdk-everything", port)
        out, err = relay.communicate(timeout=60)
    finally:
        server.kill()
        server.wait()
        relay.kill()
    report = _report(err)
    assert relay.returncode == 0 and channel(out)[2] is State.FINISHED, err
    assert report["server"]["transport"] == "sse" and report["server"]["sessions"] == 2
    assert report["calls"] == {"sent": 2, "answered": 2, "failed": 0, "timed_out": 0}


@pytest.mark.parametrize("odd_server", ["sse-elsewhere"], indirect=True)
def test_an_endpoint_on_another_origin_is_refused_and_reported(odd_server):
    url, _ = odd_server
    status, out, report = _relay(url, "--header", "Authorization: Bearer SECRET", "--grace", "1")
    assert status == 1 and report["server"]["error"] == "the SSE stream's endpoint is on another origin"
    assert channel(out)[2] is State.ENDED_WITH_ERROR and "SECRET" not in json.dumps(report)


@pytest.mark.parametrize("odd_server", ["json-calls"], indirect=True)
def test_calls_answered_as_json_are_reported(odd_server):
    url, _ = odd_server
    status, out, report = _relay(url, "--call", "go", "--until-answered", "--grace", "1")
    assert status == 0 and report["server"]["calls_as_json"] == 1 and report["calls"]["answered"] == 1


# --- tokens -------------------------------------------------------------------------------

TOKEN_COMMAND = "n=$(cat {count} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {count}; echo tok-$n"


@pytest.mark.parametrize("odd_server", ["bearer:1000"], indirect=True)
def test_a_header_value_may_come_from_the_environment(odd_server):
    url, _ = odd_server
    done = subprocess.run([*RELAY, "--url", url, "--header", "Authorization: Bearer ${MCP_TEST_TOKEN}", "--call", "go",
                           "--until-answered", "--grace", "1"], capture_output=True, timeout=60,
                          env={**os.environ, "MCP_TEST_TOKEN": "tok-1"})
    report = _report(done.stderr)
    assert done.returncode == 0 and report["calls"]["answered"] == 1 and "tok-1" not in done.stderr.decode()


def test_an_unset_variable_in_a_header_is_named_and_exit_2():
    env = {key: value for key, value in os.environ.items() if key != "MCP_UNSET_TOKEN"}
    done = subprocess.run([*RELAY, "--url", "http://127.0.0.1:1/mcp", "--header", "Authorization: Bearer ${MCP_UNSET_TOKEN}"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2
    assert done.stderr == "diverge-codec: --header Authorization: ${MCP_UNSET_TOKEN} is not set in the environment\n"


@pytest.mark.parametrize("odd_server", ["bearer:4"], indirect=True)
def test_a_token_command_is_run_again_when_the_token_expires_mid_session(odd_server, tmp_path):
    url, log = odd_server
    count = tmp_path / "count"
    command = TOKEN_COMMAND.format(count=count)
    relay = subprocess.Popen([*RELAY, "--url", url, "--token-command", command, *[a for i in range(6) for a in ("--call", f"t{i}")],
                              "--until-answered", "--grace", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cmdline = Path(f"/proc/{relay.pid}/cmdline").read_bytes() if Path("/proc").is_dir() else b""
    out, err = relay.communicate(timeout=60)
    report = _report(err)
    assert relay.returncode == 0 and report["calls"] == {"sent": 6, "answered": 6, "failed": 0, "timed_out": 0}
    assert report["server"]["token_command_runs"] == 2 and count.read_text().strip() == "2"
    for token in (b"tok-1", b"tok-2"):
        assert token not in err and token not in cmdline and token.decode() not in json.dumps(report)
    assert int(report["server"]["statuses"]["401"]) >= 1


@pytest.mark.parametrize("odd_server", ["bearer:1000"], indirect=True)
def test_a_401_says_what_authorization_the_server_wants(odd_server):
    url, _ = odd_server
    status, out, report = _relay(url, "--protocol", "2025-11-25", "--header", "Authorization: Bearer wrong-SECRET", "--grace", "1")
    assert status == 1 and channel(out)[2] is State.ENDED_WITH_ERROR  # initialize's refusal (2025 forced)
    assert report["server"]["error"] == ("HTTP 401 on initialize: the token was refused (Bearer); "
                                         "get a token from https://auth.example.com")
    authorization = report["server"]["authorization"]
    assert authorization["authorization_servers"] == ["https://auth.example.com"] and authorization["error"] == "invalid_token"
    assert "SECRET" not in json.dumps(report)


@pytest.mark.parametrize(("command", "message"), [
    ("exit 3", "--token-command failed (exit status 3)"),
    ("echo 'not a token'", "--token-command printed no bearer token (one line of token characters)"),
])
def test_a_token_command_that_fails_is_one_line_and_exit_1(command, message):
    done = subprocess.run([*RELAY, "--url", "http://127.0.0.1:1/mcp", "--token-command", command], capture_output=True,
                          timeout=60)
    report = _report(done.stderr)
    assert done.returncode == 1 and report["server"]["error"] == message


# --- TLS ----------------------------------------------------------------------------------

@pytest.fixture
def pki(tmp_path):
    trustme = pytest.importorskip("trustme", reason="the TLS tests make their CA with trustme (the test extra)")
    ca = trustme.CA()
    files = {"ca": tmp_path / "ca.pem", "server": tmp_path / "server.pem", "client": tmp_path / "client.pem",
             "client_ca": tmp_path / "client_ca.pem"}
    ca.cert_pem.write_to_path(str(files["ca"]))
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(files["server"]))
    client_ca = trustme.CA()
    client_ca.cert_pem.write_to_path(str(files["client_ca"]))
    client_ca.issue_cert("relay@example.com").private_key_and_cert_chain_pem.write_to_path(str(files["client"]))
    return files


def _https_server(pki, *, mtls: bool) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "TLS_CERT": str(pki["server"]), "TLS_KEY": str(pki["server"])}
    if mtls:
        env["TLS_CLIENT_CA"] = str(pki["client_ca"])
    process = subprocess.Popen([sys.executable, str(HERE / "http_servers.py"), "bytes"], stdout=subprocess.PIPE, env=env)
    assert process.stdout is not None
    return process, f"https://127.0.0.1:{int(process.stdout.readline())}/mcp"


@pytest.mark.parametrize("mtls", [False, True])
def test_https_with_a_private_ca_and_a_client_certificate(pki, mtls):
    server, url = _https_server(pki, mtls=mtls)
    try:
        client = ["--cert", str(pki["client"])] if mtls else []
        status, out, report = _relay(url, "--cacert", str(pki["ca"]), *client, "--call", "go", "--until-answered",
                                     "--grace", "1")
        assert status == 0 and report["relayed"] == 4 and report["calls"]["answered"] == 1
        refused, _, unverified = _relay(url, "--call", "go", "--until-answered", "--grace", "1")  # the system's CAs
        assert refused == 1 and unverified["server"]["error"].startswith("TLS: ")
        if mtls:
            no_cert, _, without = _relay(url, "--cacert", str(pki["ca"]), "--call", "go", "--grace", "1")
            assert no_cert == 1 and without["unreachable"] is True
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize(("args", "message"), [
    (["--cacert", "/nonexistent/ca.pem"], "--cacert: not a readable file"),
    (["--cert", "/nonexistent/c.pem"], "--cert: not a readable file"),
    (["--key", "/etc/hostname"], "--key goes with --cert"),
    (["--cacert", "/etc/hostname"], "--cacert: no PEM certificate OpenSSL can read"),
])
def test_tls_options_that_cannot_be_used_are_named_and_exit_2(args, message):
    done = subprocess.run([*RELAY, "--url", "https://127.0.0.1:1/mcp", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr == f"diverge-codec: {message}\n"


def test_tls_options_on_plain_http_are_bad_usage():
    done = subprocess.run([*RELAY, "--url", "http://127.0.0.1:1/mcp", "--cacert", "/etc/hostname"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and done.stderr == "diverge-codec: --cacert, --cert and --key are for an https:// --url\n"

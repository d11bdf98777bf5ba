"""``--token-command`` with real commands, and the relay's words on stderr, against loopback servers
(``auth_servers.py``): a token in two writes, a child left holding stdout, a hang, cancellation, the relay's
end (``--duration``, SIGINT) leaving nothing running; a 64 KB challenge and SIGINT served at once; at
``--log-level debug`` no header value, token or cookie on stderr. Every test starts processes: slow."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from diverge_codec.relay.remote_auth import TOKEN_BYTES, CredentialError, TokenSource

HERE = Path(__file__).parent
RELAY = [sys.executable, "-m", "diverge_codec", "relay"]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shells and process groups")
pytest.importorskip("h11", reason="relay --url needs the [http] extra (h11)")


def _token(command: str, timeout: float = 20.0) -> str:
    return asyncio.run(TokenSource(command, timeout=timeout).refresh(0))


def _gone(pid_file: Path, within: float = 10.0) -> bool:
    """Whether every pid written to ``pid_file`` has ended (reaped by whoever adopted it) within ``within`` s."""
    pids = [int(line) for line in pid_file.read_text().split()]
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if Path("/proc").is_dir() else "R"
                os.kill(pid, 0)
                alive.append(state != "Z")
            except (ProcessLookupError, FileNotFoundError):
                pass
        if not any(alive):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize(("command", "token"), [
    ("printf 'tok-first'; sleep 0.3; printf 'tok-second'", "tok-firsttok-second"),  # 43bf8bf: tok-first
    ("echo 'Bearer tok-7'", "tok-7"),                                                # 43bf8bf: refused
    ("printf tok | cat | tr o O", "tOk"),
])
def test_the_token_is_the_whole_output(command, token):
    assert _token(command) == f"Bearer {token}"


def test_without_waitid_as_on_macos_before_python_3_13_it_reads_the_same(monkeypatch, tmp_path):
    monkeypatch.delattr(os, "waitid", raising=False)
    pids = tmp_path / "pids"
    assert _token(f"sleep 95 & echo $! > {pids}; printf 'tok-first'; sleep 0.3; printf 'tok-second'") == (
        "Bearer tok-firsttok-second")
    assert _gone(pids)
    with pytest.raises(CredentialError, match=r"exit status 137\)$"):
        _token("kill -9 $$")


def test_a_child_left_holding_stdout_is_not_waited_on_and_is_ended(tmp_path):
    pids = tmp_path / "pids"
    started = time.monotonic()
    assert _token(f"sleep 95 & echo $! > {pids}; echo tok") == "Bearer tok"
    assert time.monotonic() - started < 15  # 43bf8bf: until the 95 s sleep ended (or the relay's own timeout)
    assert _gone(pids)


def test_a_hang_is_ended_at_the_timeout_with_everything_it_started(tmp_path):
    pids = tmp_path / "pids"
    with pytest.raises(CredentialError) as caught:
        _token(f"sleep 96 & echo $! > {pids}; sleep 97", timeout=1)
    assert str(caught.value) == "--token-command did not finish within 1 s (it was ended, with everything it started)"
    assert _gone(pids)  # 43bf8bf: the shell killed, its children left


def test_cancelled_it_ends_everything_it_started(tmp_path):
    pids = tmp_path / "pids"

    async def main() -> None:
        task = asyncio.ensure_future(TokenSource(f"sleep 98 & echo $! > {pids}; echo $$ >> {pids}; wait").refresh(0))
        while not pids.exists() or len(pids.read_text().split()) < 2:
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert _gone(pids)


@pytest.mark.parametrize(("command", "message"), [
    ("echo tok; exit 3", "--token-command failed (exit status 3)"),
    (f"head -c {TOKEN_BYTES + 10} /dev/zero | tr '\\0' a", f"--token-command printed more than {TOKEN_BYTES} bytes: no bearer token"),
    ("yes tok", f"--token-command printed more than {TOKEN_BYTES} bytes: no bearer token"),  # never ends by itself
    ("kill -9 $$", "--token-command failed (exit status 137)"),
])
def test_a_command_that_fails_says_how(command, message):
    with pytest.raises(CredentialError) as caught:
        _token(command)
    assert str(caught.value) == message


# --- the relay ----------------------------------------------------------------------------

@pytest.fixture
def server(request, tmp_path):
    """An ``auth_servers.py`` server in the mode the test names: (its URL, the log of what it was sent)."""
    log = tmp_path / "seen.jsonl"
    with subprocess.Popen([sys.executable, str(HERE / "auth_servers.py"), request.param], stdout=subprocess.PIPE,
                          env={**os.environ, "SEEN_LOG": str(log)}) as process:
        try:
            yield f"http://127.0.0.1:{int(process.stdout.readline())}/mcp", log  # type: ignore[union-attr]
        finally:
            process.kill()


def _report(stderr: str) -> dict:
    return json.loads(stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("server", ["cookies"], indirect=True)
def test_a_token_command_that_leaves_a_child_serves_at_once_and_without_a_traceback(server, tmp_path):
    url, _ = server
    pids = tmp_path / "pids"
    done = subprocess.run([*RELAY, "--url", url, "--token-command", f"sleep 95 & echo $! > {pids}; echo tok",
                           "--call", "go", "--until-answered", "--grace", "1", "--out", os.devnull],
                          capture_output=True, text=True, timeout=60)
    report = _report(done.stderr)
    assert done.returncode == 0 and report["calls"]["answered"] == 1, done.stderr
    assert "Traceback" not in done.stderr and "could not reach" not in done.stderr
    assert _gone(pids)


@pytest.mark.parametrize("how", ["duration", "SIGINT"])
def test_the_relay_s_end_ends_a_hanging_token_command(how, tmp_path):
    pids = tmp_path / "pids"
    args = ["--duration", "1"] if how == "duration" else []
    relay = subprocess.Popen([*RELAY, "--url", "http://127.0.0.1:9/mcp", "--token-command",
                              f"sleep 99 & echo $! > {pids}; echo $$ >> {pids}; wait", *args, "--grace", "0.5",
                              "--out", os.devnull], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while (not pids.exists() or len(pids.read_text().split()) < 2) and relay.poll() is None:
        assert time.monotonic() < deadline, "the token command never started"
        time.sleep(0.02)
    assert relay.poll() is None, relay.communicate()[1]  # the relay waits on its token command
    if how == "SIGINT":
        relay.send_signal(signal.SIGINT)
    _, err = relay.communicate(timeout=30)
    assert "Traceback" not in err and _report(err)["server"]["shutdown"] in ("duration", "signal SIGINT")
    assert _gone(pids)  # 43bf8bf: the command (its own session) ran on, its sleep 99 too


def test_a_token_command_that_fails_is_said_in_its_own_words_once():
    done = subprocess.run([*RELAY, "--url", "http://127.0.0.1:9/mcp", "--token-command", "exit 3", "--out", os.devnull],
                          capture_output=True, text=True, timeout=60)
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and lines[:-1] == ["diverge-codec: --token-command failed (exit status 3)"]
    assert _report(done.stderr)["server"]["error"] == "--token-command failed (exit status 3)"


@pytest.mark.parametrize("server", ["challenge:64000"], indirect=True)
def test_a_64_kb_challenge_ends_the_relay_within_its_request_timeout(server):
    url, _ = server
    started = time.monotonic()
    done = subprocess.run([*RELAY, "--url", url, "--protocol", "2025-11-25", "--request-timeout", "5", "--out", os.devnull],
                          capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    report = _report(done.stderr)
    assert done.returncode == 1 and elapsed < 30  # 43bf8bf: 62.9 s
    assert report["server"]["error"] == "HTTP 401 on initialize: the server wants a token (Bearer); none was sent"
    assert max(len(line) for line in done.stderr.splitlines()) < 3000


@pytest.mark.parametrize("server", ["trickle", "challenge-hang:64000"], indirect=True)
def test_sigint_ends_the_relay_whatever_the_server_sends(server):
    """A head that never ends; a 64 KB challenge whose metadata never comes (43bf8bf: 62 s in the challenge first)."""
    url, _ = server
    relay = subprocess.Popen([*RELAY, "--url", url, "--grace", "0.5", "--out", os.devnull], stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    relay.send_signal(signal.SIGINT)
    sent = time.monotonic()
    _, err = relay.communicate(timeout=90)
    assert time.monotonic() - sent < 10 and _report(err)["server"]["shutdown"] == "signal SIGINT"


SECRETS = ("TOKEN-SECRET-5", "HEADER-SECRET-3", "COOKIE-SECRET-7")


@pytest.mark.parametrize("server", ["cookies"], indirect=True)
def test_debug_output_holds_no_header_value_token_or_cookie(server):
    url, log = server
    done = subprocess.run([*RELAY, "--url", f"{url}?key=QUERY-SECRET-9", "--log-level", "debug",
                           "--token-command", "echo TOKEN-SECRET-5", "--header", "X-Api-Key: HEADER-SECRET-3",
                           "--call", "go", "--call", "again", "--until-answered", "--grace", "1", "--out", os.devnull],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert seen[-1]["cookie"] == "sid=COOKIE-SECRET-7"  # the cookie was set and sent back: it was there to leak
    debug = [line for line in done.stderr.splitlines() if " debug " in line]
    assert any("--token-command started" in line for line in debug), done.stderr
    for secret in (*SECRETS, "QUERY-SECRET-9"):
        assert secret not in done.stderr


@pytest.mark.parametrize("server", ["cookies"], indirect=True)
def test_quiet_keeps_stderr_to_the_report(server):
    url, _ = server
    done = subprocess.run([*RELAY, "--url", url, "--log-level", "quiet", "--call", "go", "--until-answered",
                           "--grace", "1", "--out", os.devnull], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 or done.returncode == 0
    assert len(done.stderr.splitlines()) == 1 and _report(done.stderr)["calls"]["sent"] == 1


def test_debug_names_each_stdio_lifecycle_step():
    done = subprocess.run([*RELAY, "--log-level", "debug", "--duration", "0.5", "--grace", "0.3", "--out", os.devnull,
                           "--", "sh", "-c", "trap '' TERM; exec sleep 30 # ARG-SECRET-1"],
                          capture_output=True, text=True, timeout=60)
    steps = [line.split(" debug ", 1)[1] for line in done.stderr.splitlines() if " debug " in line]
    pid = _report(done.stderr)["server"]["pid"]
    assert steps == [f"server started: sh (pid {pid}, its own process group)",
                     "server's stdin closed (duration); waiting 0.3 s for it to exit",
                     f"SIGTERM sent to the server's process group (pid {pid})",
                     f"SIGKILL sent to the server's process group (pid {pid})",
                     f"server exited (pid {pid}, status -9)",
                     f"server reaped (pid {pid}; 0 of its processes were left and ended)"]
    assert "ARG-SECRET-1" not in done.stderr

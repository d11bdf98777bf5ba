"""Issue #36, the first hour: inspect reads what it is given, values on request, failures in words, help that says it.

Where the terminal matters, it is a real one: a pseudo-terminal (``os.openpty``) as the
command's standard input or output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from diverge_codec import samples
from diverge_codec.cli import SUBCOMMANDS, _watch, main

MN = ("--channel", "mcp-notifications")
POSIX = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals and a relayed command are POSIX only")


def run(*args: str, stdin: int | None = None, input: bytes | None = None, stdout: int | None = subprocess.PIPE):
    """The command; ``input`` piped, else ``stdin`` as given (a pipe with nothing in it by default)."""
    if input is None and stdin is None:
        input = b""
    return subprocess.run([sys.executable, "-m", "diverge_codec", *args], stdin=stdin, input=input, stdout=stdout,
                          stderr=subprocess.PIPE, timeout=120, env={**os.environ, "COLUMNS": "100"})


def on_terminal(*args: str, stream: str) -> subprocess.CompletedProcess[bytes]:
    """The command with its standard input or output (``stream``) a pseudo-terminal; the other streams piped."""
    controller, terminal = os.openpty()
    try:
        if stream == "stdin":
            return run(*args, stdin=terminal)
        return run(*args, stdin=subprocess.DEVNULL, stdout=terminal)
    finally:
        os.close(terminal)
        os.close(controller)


# --- inspect: what it reads ----------------------------------------------------------------------

SAMPLE_NOTE = b"no FILE given: showing the built-in sample sessions (--sample)"


def test_a_pipe_without_a_dash_is_refused_naming_the_dash_and_the_sample():
    done = run("inspect", *MN, input=samples.capture(samples.mcp_notifications_session()))
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr == (b"diverge-codec: standard input is not a terminal, but no FILE was given: to inspect it, add - "
                           b"(diverge-codec inspect --channel CHANNEL -); for the built-in sample sessions, --sample\n")


def test_an_empty_pipe_without_a_dash_is_refused_too():
    done = run("inspect", *MN, input=b"")
    assert done.returncode == 2 and b"add -" in done.stderr


@POSIX
@pytest.mark.parametrize("stdin", ["terminal", "null", "closed"])
def test_no_input_given_shows_the_sample_saying_so(stdin):
    if stdin == "terminal":
        done = on_terminal("inspect", stream="stdin")
    elif stdin == "null":
        done = run("inspect", stdin=subprocess.DEVNULL)
    else:
        done = subprocess.run([sys.executable, "-c", "import os, sys; os.close(0); from diverge_codec.cli import main; "
                               "sys.exit(main(['inspect']))"], capture_output=False, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 0, done.stderr
    assert SAMPLE_NOTE in done.stderr
    assert done.stdout.count(b"built-in sample session\n") == 2


def test_sample_is_shown_on_request_without_a_note_whatever_stdin_is():
    done = run("inspect", "--sample", *MN, input=b"anything")
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout.startswith(b"mcp-notifications: built-in sample session\n")
    assert b"tools-begin" not in done.stdout


def test_sample_with_a_file_is_refused(tmp_path):
    done = run("inspect", "--sample", "-", *MN, input=b"")
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr == b"diverge-codec: --sample shows the built-in sample sessions: give it no FILE\n"


def test_the_readme_first_command_works_with_stdin_not_a_terminal():
    done = run("inspect", "--sample", input=b"")
    assert done.returncode == 0 and done.stdout.count(b"verdict: ok: finished") == 2


# --- inspect: content on request ----------------------------------------------------------------

PROGRESS = b'\x00{"method":"notifications/progress","params":{"progressToken":"t","progress":1,"message":"s3cr\\u001bt"}}'
BARE = b'\x00{"method":"notifications/tools/list_changed"}'
NULL = b'\x00{"method":"notifications/x","params":null}'


def test_params_are_hidden_by_default_and_shown_escaped_on_request():
    capture = samples.capture([PROGRESS, BARE, NULL])
    hidden = run("inspect", "-", *MN, "--open", input=capture).stdout.decode().splitlines()
    shown = run("inspect", "-", *MN, "--open", "--show-values", input=capture).stdout.decode().splitlines()
    assert hidden[2].endswith("  method notifications/progress") and "s3cr" not in "\n".join(hidden)
    assert shown[2].endswith('  method notifications/progress params={"progressToken":"t","progress":1,"message":"s3cr\\\\u001bt"}')
    assert shown[3].endswith("  method notifications/tools/list_changed")  # no params member: nothing added
    assert shown[4].endswith("  method notifications/x params=null")


def test_params_in_json_are_null_unless_asked():
    capture = samples.capture([PROGRESS, BARE])
    hidden = [json.loads(line) for line in run("inspect", "-", *MN, "--open", "--json", input=capture).stdout.splitlines()]
    shown = [json.loads(line) for line in run("inspect", "-", *MN, "--open", "--json", "--show-values", input=capture).stdout.splitlines()]
    assert [row.get("params") for row in hidden[:2]] == [None, None]
    assert shown[0]["params"] == {"progressToken": "t", "progress": 1, "message": "s3cr\x1bt"}
    assert shown[1]["params"] is None


def test_long_params_are_clipped_in_text():
    big = b'\x00{"method":"m","params":{"data":"' + b"x" * 5000 + b'"}}'
    line = run("inspect", "-", *MN, "--open", "--show-values", input=samples.capture([big])).stdout.decode().splitlines()[2]
    assert line.endswith("...") and len(line) < 260


# --- relay: the terminal as the channel --------------------------------------------------------

@POSIX
def test_the_channel_is_not_written_to_a_terminal():
    done = on_terminal("relay", "--", "true", stream="stdout")
    assert done.returncode == 2
    assert done.stderr == (b"diverge-codec: the channel is binary stream records, not for a terminal: write it with --out FILE, "
                           b"or pipe it into | diverge-codec inspect --channel mcp-notifications - (--force-tty writes it here "
                           b"anyway)\n")


@POSIX
def test_force_tty_writes_it_anyway():
    done = on_terminal("relay", "--force-tty", "--", "true", stream="stdout")
    assert done.returncode == 1, done.stderr  # `true` is no MCP server: it ends before initialize
    assert json.loads(done.stderr.splitlines()[-1])["unreachable"] is True


# --- relay: failures in words (the lines, without a server) ------------------------------------

@pytest.mark.parametrize(("label", "answer", "line"), [
    ("tools/call emit_al", {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "SECRET"}], "isError": True}},
     "tools/call emit_al failed: the tool answered isError (its content is not shown: --answers FILE shows it)"),
    ("tools/call x", {"id": 2, "error": {"code": -32602, "message": "Unknown tool: x\x1b[2J"}},
     "tools/call x failed: JSON-RPC error -32602 (invalid params): Unknown tool: x\\x1b[2J"),
    ("no/such", {"id": 2, "error": {"code": -32000, "message": "m" * 300, "data": "SECRET"}},
     "no/such failed: JSON-RPC error -32000: " + "m" * 200 + "... (100 more)"),
    ("a/b", {"id": 2, "error": {"code": True}}, "a/b failed: JSON-RPC error (no code): (no message)"),
    ("a/b", {"id": 2, "error": "broken"}, "a/b failed: the server answered with a malformed error"),
    ("tools/call x", None, "tools/call x: no answer within 0.5 s: timed out (cancelled; --request-timeout sets the wait)"),
    ("tools/call x", {"id": 2, "result": {"content": [], "isError": False}}, None),
    ("tools/list", {"id": 2, "result": {"isError": True}}, None),  # only a tool's result has isError
])
def test_a_failure_is_one_line_naming_the_call_never_its_content(label, answer, line):
    assert _watch.failure_line(label, answer, 0.5) == line


def server(**fields):
    return {"unreachable": True, "server": {"transport": "streamable-http", "started": False, **fields}}


@pytest.mark.parametrize(("report", "hint"), [
    (server(error="HTTP 401 on initialize", statuses={"401": 1}), "check the authorization"),
    (server(error="HTTP 403 on initialize"), "check the authorization"),
    (server(error="HTTP 404 on initialize"), "or the older HTTP+SSE: check the URL's path"),
    (server(error="HTTP 405 on initialize"), "or /sse for the older transport"),
    (server(error="TLS: WRONG_VERSION_NUMBER"), "try http:// instead of https://"),
    (server(error="connection refused"), "nothing is listening at that host and port"),
    (server(error="name resolution: Name or service not known"), "the host name could not be resolved"),
    (server(error="TLS: CERTIFICATE_VERIFY_FAILED"), "check the certificate"),
    (server(error="HTTP 502 on initialize"), "its log says why"),
    # the patterns that ignore case, each met in another case than its own
    (server(error="tls: Wrong Version Number"), "try http:// instead of https://"),
    (server(error="The Proxy answered 502"), "the proxy failed, not the server"),
    (server(error="Connection Refused"), "nothing is listening at that host and port"),
    (server(error="Temporary failure in Name Resolution"), "the host name could not be resolved"),
    (server(error="ssl handshake failed"), "TLS failed: check the certificate"),
    (server(error="connect Timed Out"), "no answer in time"),
    (server(error="the proxy (https_proxy in the environment) is not reachable (connection refused)"),
     "the proxy failed, not the server: check http_proxy, https_proxy and no_proxy"),
    (server(error="the proxy refused the tunnel (HTTP 407): its credentials (in *_PROXY) are missing or wrong"),
     "the proxy failed, not the server"),
    ({"unreachable": True, "server": {"started": True}}, "the server ended before answering initialize: is the command an MCP server"),
    ({"unreachable": True, "server": {"started": True, "exit_status": 1}}, "initialize (it exited with 1): is the command"),
    ({"unreachable": True, "server": {"started": True, "exit_status": None, "signal": "SIGKILL"}}, "(ended by SIGKILL)"),
    ({"unreachable": True, "server": {"started": False, "error": "No such file or directory"}},
     "the command could not start (No such file or directory): check its name, the PATH"),
    ({"unreachable": False, "server": {"started": True, "shutdown": "handshake failed"}}, "--protocol-version"),
    ({"unreachable": False, "server": {"started": True, "shutdown": "initialize timed out"}}, "in time"),
])
def test_a_server_not_reached_is_one_line_with_a_hint(report, hint):
    line = _watch.unreachable_line(report)
    assert line is not None and hint in line


@pytest.mark.parametrize("why", [
    "TLS: the server's certificate is not signed by a CA this machine trusts: give its CA with --cacert FILE (or SSL_CERT_FILE)",
    "TLS: the server's certificate is not for the URL's host; it holds mcp.example",
    "TLS: the server's certificate expired on 2021-03-04 05:06:07 UTC",
    "TLS: the server answered in plain HTTP, not TLS: use an http:// URL",
])
def test_an_error_that_says_its_own_fix_gets_no_hint_after_it(why):
    assert _watch.unreachable_line(server(error=why)) == f"could not reach the server ({why})"


def test_a_server_reached_gives_no_hint():
    assert _watch.unreachable_line({"unreachable": False, "server": {"started": True, "shutdown": "until-answered"}}) is None


@pytest.mark.parametrize(("status", "failed", "expected"), [(0, 0, 0), (0, 1, 3), (1, 1, 1), (2, 0, 2)])
def test_a_failed_call_makes_the_exit_status_3_only_where_it_would_be_0(capsys, status, failed, expected):
    report = {"calls": {"failed": failed}, "unreachable": False, "server": {}}
    assert _watch.Watch().finish(report, status) == expected
    assert json.loads(capsys.readouterr().err.splitlines()[-1])["exit_status"] == expected


def test_the_report_goes_to_its_file_and_answers_to_theirs_private(tmp_path, capsys):
    watch = _watch.Watch(answers=str(tmp_path / "answers"), report=str(tmp_path / "report"))
    watch.on_answer("tools/list", {"id": 1, "result": {"tools": [{"name": "emit_all"}]}})
    watch.on_answer("tools/call x", None)
    assert watch.finish({"calls": {"failed": 1}, "server": {}}, 0) == 3
    err = capsys.readouterr().err
    assert err == "diverge-codec: tools/call x: no answer: timed out (cancelled; --request-timeout sets the wait)\n"
    assert json.loads((tmp_path / "report").read_text()) == {"calls": {"failed": 1}, "server": {}, "exit_status": 3}
    assert [json.loads(line) for line in (tmp_path / "answers").read_text().splitlines()] == [
        {"request": "tools/list", "answer": {"id": 1, "result": {"tools": [{"name": "emit_all"}]}}},
        {"request": "tools/call x", "answer": None}]
    assert (tmp_path / "answers").stat().st_mode & 0o077 == 0


# --- help ---------------------------------------------------------------------------------------

def test_the_top_help_lists_every_subcommand_with_a_line(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("    ") and line.split()]
    assert [name for name in listed if name in SUBCOMMANDS] == list(SUBCOMMANDS)
    assert "relay an MCP server's notifications" in out and "diverge-codec inspect --sample" in out


def test_relay_help_has_the_examples(capsys):
    with pytest.raises(SystemExit):
        main(["relay", "--help"])
    out = capsys.readouterr().out
    examples = out[out.index("examples:"):]
    for piece in ("relay -- python", "--call 'emit_all={}' --until-answered", "| diverge-codec inspect --channel mcp-notifications -",
                  "--url http", "--answers -"):
        assert piece in examples
    assert "3 it ended as asked, but a call or request failed" in out

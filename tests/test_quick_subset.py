"""The quick subset (`-m "not slow"`) is every test that starts no process and takes under ~1.5 s.

The slow marker goes by what a test does (``conftest.SLOW_FILES``, ``PROCESSES``, ``LONG``),
not by its file's name: the sans-IO relay tests are quick, and so are the HTTP client's, whose
servers are on loopback in the test's own event loop (issue #45). A quick test that starts a
process, or binds a socket anywhere but 127.0.0.1 or ::1, fails, even where it catches the
error, so the declarations stay true.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

import conftest
from conftest import StartedInAQuickTest, is_slow


@pytest.mark.parametrize(("file_name", "function", "slow"), [
    ("test_relay_command.py", "test_usage_errors_exit_2", True),
    ("test_relay_http.py", "anything", True),
    ("test_http_client.py", "anything", False),
    ("test_peers.py", "test_exit_at_once_server", True),
    ("test_peers.py", "test_command_table", False),
    ("test_install.py", "test_python_dash_m_runs_doctor", True),
    ("test_hostile.py", "test_two_hundred_thousand_frames_leave_memory_flat", True),
    ("test_hostile.py", "test_every_call_refuses_hostile_input", False),
    ("test_relay.py", "anything", False),
    ("test_relay_session.py", "test_an_unanswered_call_is_cancelled_counted_failed_and_ends_until_answered", False),
    ("test_relay_answers.py", "anything", False),
    ("test_cli_parts.py", "anything", False),
])
def test_the_slow_marker_goes_by_what_a_test_does(file_name, function, slow):
    assert is_slow(file_name, function) is slow


def test_every_declared_slow_test_exists():
    """A renamed test would leave its declaration behind and run in the quick subset unwatched by it."""
    tests = os.path.dirname(__file__)
    for file_name, names in {**conftest.PROCESSES, **conftest.LONG}.items():
        source = open(os.path.join(tests, file_name), encoding="utf-8").read()
        assert all(f"def {name}(" in source for name in names), file_name
    assert all(os.path.exists(os.path.join(tests, name)) for name in conftest.SLOW_FILES)


def test_a_quick_test_that_starts_a_process_or_binds_off_loopback_fails():
    with pytest.raises(StartedInAQuickTest, match=r"^subprocess\.Popen in a quick test"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)
    with pytest.raises(StartedInAQuickTest, match=r"^os\.system in a quick test"):
        os.system("true")
    with socket.socket() as server, pytest.raises(StartedInAQuickTest, match=r"^socket\.bind in a quick test"):
        server.bind(("0.0.0.0", 0))  # every interface: a server others can reach
    # Each is recorded: the test fails at its end even where the error was caught. These were expected.
    assert conftest._quick["events"] == ["subprocess.Popen", "os.system", "socket.bind"]
    conftest._quick["events"].clear()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX's")
def test_a_quick_test_that_forks_fails_before_the_child_exists():
    with pytest.raises(StartedInAQuickTest, match=r"^os\.fork in a quick test"):
        os.fork()
    assert conftest._quick["events"] == ["os.fork"]
    conftest._quick["events"].clear()


def test_a_quick_test_may_serve_on_loopback_in_its_own_process():
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET, "127.8.0.1"), (socket.AF_INET6, "::1")):
        try:
            server = socket.socket(family)
        except OSError:  # no IPv6 here
            continue
        with server:
            try:
                server.bind((host, 0))
            except OSError as error:  # an address this machine does not have; never the audit's refusal
                assert not isinstance(error, StartedInAQuickTest)
    assert conftest._quick["events"] == []


@pytest.mark.parametrize(("address", "loopback"), [
    (("127.0.0.1", 0), True), (("::1", 0, 0, 0), True), (("127.255.0.9", 80), True), (("::1%lo", 0, 0, 1), True),
    (("0.0.0.0", 0), False), (("", 0), False), (("::", 0, 0, 0), False), (("localhost", 0), False),
    (("10.0.0.1", 0), False), ("/tmp/unix.sock", False), (b"\0abstract", False),
])
def test_only_an_ip_loopback_address_is_allowed(address, loopback):
    assert conftest.binds_loopback(address) is loopback


@pytest.mark.slow
def test_a_slow_test_may_start_a_process():
    assert subprocess.run([sys.executable, "-c", "pass"], check=False).returncode == 0

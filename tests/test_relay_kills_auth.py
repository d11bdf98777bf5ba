"""The token's size bounds as a user meets them, in numbers (issue #45: a mutant that moved ``TOKEN_BYTES`` passed
every test that read the bound from the module). ``--token-command``'s output is read through a pipe from a
scripted process (no process started: quick); the real command's run is ``test_relay_token_command.py``'s.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from diverge_codec.relay import remote_auth
from diverge_codec.relay.remote_auth import CredentialError, TokenSource, usable_token

LIMIT = 16384
"""docs/relay.md: the token command's output is at most 16 KiB."""


def test_a_provider_s_token_is_taken_up_to_the_bound_and_its_prefix_and_one_byte_more_is_refused():
    assert usable_token(b"x" * LIMIT) == "x" * LIMIT
    assert usable_token(b"Bearer " + b"y" * LIMIT + b"\r\n") == "y" * LIMIT
    assert usable_token(b"z" * (LIMIT + 16)) == "z" * (LIMIT + 16)  # room for a prefix and a line's end
    assert usable_token(b"z" * (LIMIT + 17)) is None


class Printed:
    """The token command's process, scripted: it printed ``output`` on the pipe it was given, and exited 0."""

    output = b""
    pid = 4_000_000  # no such process: nothing is signalled (``_end_group`` is scripted too)

    def __init__(self, command: str, *, stdout: int, **_: Any) -> None:
        os.write(stdout, self.output)


def _token_of(monkeypatch: pytest.MonkeyPatch, output: bytes, status: int = 0) -> str:
    """The ``Authorization`` value ``--token-command`` gives where the command printed ``output`` and exited ``status``."""
    monkeypatch.setattr(Printed, "output", output)
    monkeypatch.setattr(remote_auth.subprocess, "Popen", Printed)
    monkeypatch.setattr(remote_auth, "_exited", lambda pid: status)
    monkeypatch.setattr(remote_auth, "_end_group", lambda process: None)
    return asyncio.run(TokenSource("print-a-token").refresh(0))


def test_the_command_s_output_is_taken_up_to_16_kib_and_one_byte_more_is_refused_naming_the_bound(monkeypatch):
    assert _token_of(monkeypatch, b"t" * LIMIT) == "Bearer " + "t" * LIMIT
    assert _token_of(monkeypatch, b"Bearer " + b"t" * (LIMIT - 8) + b"\n") == "Bearer " + "t" * (LIMIT - 8)
    with pytest.raises(CredentialError) as refused:
        _token_of(monkeypatch, b"t" * LIMIT + b"\n")
    assert str(refused.value) == "--token-command printed more than 16384 bytes: no bearer token"
    assert "ttt" not in repr(refused.value.args)


def test_a_command_that_printed_nothing_or_failed_says_so_without_its_output(monkeypatch):
    with pytest.raises(CredentialError, match=r"^--token-command printed no bearer token \(one line of token characters\)$"):
        _token_of(monkeypatch, b"")
    with pytest.raises(CredentialError) as failed:
        _token_of(monkeypatch, b"secret-token\n", status=3)
    assert str(failed.value) == "--token-command failed (exit status 3)" and "secret" not in repr(failed.value.args)

"""``inspect`` reads notifications with ``decode_lazy``: the same output, verdicts and refusals as with ``decode``."""

from __future__ import annotations

import io
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diverge_codec import samples
from diverge_codec.cli import inspect
from diverge_codec.cli._output import JsonLines, Text

PAYLOADS = [
    b"",
    b"\x02{}",
    b"\x00",
    b"\x00[]",
    b"\x00{}",
    b'\x00{"method":null}',
    b'\x00{"method":"m","params":[]}',
    b'\x00{"method":"m","params":{"_meta":1}}',
    b'\x00{"method":"m\xff"}',
    b'\x00{"method":"m","params":{"n":1e400}}',
    b'\x00{"method":"m"} x',
    b'\x00{"method":"notifications/\\u001b[31mred","params":{"level":"info","data":"secret-value"}}',
    b'\x01{"code":-32000,"message":"the secret is hunter2","data":{"token":"hunter2"}}',
    b"\x01[",
    *samples.SESSIONS["mcp-notifications"](),
]


def _shown(mn: ModuleType, payloads: list[bytes], output: Any, lazy: bool) -> tuple[str, dict[str, Any]]:
    session = inspect.Session("mcp-notifications", allow_late_error=True)
    session.codec = mn
    session._decode = mn.decode_lazy if lazy else mn.decode
    session.checker = type(session.checker)(mn, allow_error_after_notifications=True)
    output.out = io.StringIO()
    output.begin("mcp-notifications", "test")
    verdict = inspect.run_session(session, iter([payloads]), output, inspect._Signals())
    output.end("mcp-notifications", "test", session.frames, verdict)
    return output.out.getvalue(), verdict


@pytest.mark.parametrize("writer", [Text, JsonLines])
@pytest.mark.parametrize("show_values", [False, True])
@pytest.mark.parametrize("payload", PAYLOADS)
def test_each_payload_after_a_notification_is_shown_as_decode_shows_it(mn, writer, show_values, payload):
    payloads = [samples.SESSIONS["mcp-notifications"]()[1], payload]
    assert _shown(mn, payloads, writer(show_values), lazy=True) == _shown(mn, payloads, writer(show_values), lazy=False)


@given(st.lists(st.sampled_from(PAYLOADS) | st.binary(max_size=40).map(lambda body: b"\x00" + body), max_size=6))
def test_any_sequence_is_shown_as_decode_shows_it(mn, payloads):
    assert _shown(mn, payloads, Text(), lazy=True) == _shown(mn, payloads, Text(), lazy=False)


def test_a_lazy_notification_is_a_notification_to_the_checker(mn, seq):
    lazy = mn.decode_lazy(b'\x00{"method":"notifications/progress","params":{"progress":1}}')
    assert lazy.tag is mn.Tag.NOTIFICATION
    checker = seq.McpNotificationsChecker(mn)
    checker.frame(lazy)
    checker.frame(lazy)
    assert checker.notifications == 2


def test_the_session_reads_notifications_lazily_and_tools_begin_fully():
    assert inspect.Session("mcp-notifications")._decode is inspect.Session("mcp-notifications").codec.decode_lazy
    assert inspect.Session("tools-begin")._decode is inspect.Session("tools-begin").codec.decode

"""``relay --log-level``: the ``diverge_codec.relay`` logger's lines on the watch's stderr, in-process (a fake relay,
a string as stderr): info, debug with the time, quiet with nothing; escaped; the handler gone after the run."""

from __future__ import annotations

import io
import logging
import re
import types

import pytest

from diverge_codec.cli._watch import Watch

LOGGER = logging.getLogger("diverge_codec.relay")


def _run(level: str) -> str:
    err = io.StringIO()
    watch = Watch(err=err, log_level=level)
    watch.attach(types.SimpleNamespace(session=types.SimpleNamespace(on_answer=None)))
    try:
        LOGGER.info("session started again: %s", "tools/call go\x1b[2J")
        LOGGER.debug("server started: %s (pid %d)", "sh", 42)
        watch.on_answer("tools/call go", {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "no"}})
    finally:
        watch.detach()
    LOGGER.info("after the run")
    return err.getvalue()


def test_info_writes_the_operator_s_lines_escaped():
    assert _run("info") == ("diverge-codec: session started again: tools/call go\\x1b[2J\n"
                            "diverge-codec: tools/call go failed: JSON-RPC error -32000: no\n")


def test_debug_adds_the_debug_lines_each_with_its_time():
    lines = _run("debug").splitlines()
    assert re.fullmatch(r"diverge-codec: \d\d:\d\d:\d\d\.\d{3} info session started again: tools/call go\\x1b\[2J", lines[0])
    assert re.fullmatch(r"diverge-codec: \d\d:\d\d:\d\d\.\d{3} debug server started: sh \(pid 42\)", lines[1])
    assert lines[2] == "diverge-codec: tools/call go failed: JSON-RPC error -32000: no" and len(lines) == 3


def test_quiet_writes_nothing_but_the_report():
    err = io.StringIO()
    watch = Watch(err=err, log_level="quiet")
    watch.attach(types.SimpleNamespace(session=types.SimpleNamespace(on_answer=None)))
    LOGGER.info("a line")
    watch.on_answer("tools/call go", None)
    watch.detach()
    assert watch.finish({"calls": {"failed": 1}, "server": {"transport": "streamable-http", "started": False}}, 1) == 1
    assert err.getvalue().count("\n") == 1 and err.getvalue().startswith('{"calls"')


@pytest.mark.parametrize("level", ["info", "debug"])
def test_the_handler_and_level_are_gone_after_the_run(level):
    _run(level)
    assert not [handler for handler in LOGGER.handlers if type(handler).__name__ == "_LineHandler"]
    assert LOGGER.level == logging.NOTSET

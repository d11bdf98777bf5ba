"""Every behaviour test runs against both cores: the fixtures below are parametrized over ``c`` and ``py``.

The compiled modules are imported directly, never through the public modules, so a
``c`` case runs the compiled core or does not run. Where the compiled core is not built
(a pure install: no compiler, PyPy, a ``py3-none-any`` wheel) the ``c`` cases are skipped
and say so in the summary; with ``DIVERGE_CODEC_REQUIRE_EXTENSION=1`` (CI) a missing
compiled core fails them instead.
"""

from __future__ import annotations

import fnmatch
import gc
import importlib
import os
import sys
from types import ModuleType, SimpleNamespace

import pytest
from hypothesis import HealthCheck, settings

# The fixtures hand out modules, which hold no state between examples.
settings.register_profile(
    "diverge", suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
settings.register_profile(
    "ci", parent=settings.get_profile("diverge"), max_examples=300, print_blob=True
)
# .ci/sanitize: fewer examples for a run ~5x slower (children the tests start inherit the name).
settings.register_profile(
    "sanitize", suppress_health_check=list(HealthCheck), deadline=None, max_examples=25, print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "diverge"))

ALLOW_NO_EXTENSION = os.environ.get("DIVERGE_CODEC_REQUIRE_EXTENSION", "") in ("", "0")


def _has_tracemalloc() -> bool:
    try:
        import tracemalloc  # noqa: F401  (PyPy ships the module, not its C half, _tracemalloc)
    except ImportError:
        return False
    return True


def require_gc_hooks() -> None:
    """Skip, saying why, where Python code cannot run at every collection nor collect at every allocation."""
    if not (hasattr(gc, "callbacks") and hasattr(gc, "set_threshold")):
        pytest.skip("gc.callbacks and gc.set_threshold are CPython's (this collector takes neither)")


def require_gc_inside_compiled_calls(implementation: str) -> None:
    """Skip a ``c`` case that needs a collection inside a compiled call: CPython 3.12+ never makes one."""
    if implementation == "c" and sys.version_info >= (3, 12):
        pytest.skip("CPython 3.12+ collects only between bytecodes: no GC callback or finalizer runs inside a compiled call")


def exports_lock_bytearrays() -> bool:
    """Whether a bytearray with a live memoryview refuses to resize (CPython, PyPy 8; not PyPy 7.3.19)."""
    data = bytearray(b"x")
    with memoryview(data):
        try:
            data += b"y"
        except BufferError:
            return True
    return False


# Memory tests measure with tracemalloc, which is CPython's: elsewhere they skip, saying so.
needs_tracemalloc = pytest.mark.skipif(
    not _has_tracemalloc(), reason="tracemalloc is CPython's (this Python has no _tracemalloc)"
)
IMPLEMENTATIONS = ["c", "py"]


def load(channel: str, implementation: str) -> ModuleType:
    name = f"diverge_codec._{channel}_{implementation}"
    if implementation == "c" and ALLOW_NO_EXTENSION:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name != name:
                raise
            pytest.skip("compiled core not built in this install (see `diverge-codec doctor`)")
    return importlib.import_module(name)


@pytest.fixture(params=IMPLEMENTATIONS)
def tb(request: pytest.FixtureRequest) -> ModuleType:
    """The tools-begin codec of one implementation."""
    return load("tools_begin", request.param)


@pytest.fixture(params=IMPLEMENTATIONS)
def mn(request: pytest.FixtureRequest) -> ModuleType:
    """The mcp-notifications codec of one implementation."""
    return load("mcp_notifications", request.param)


@pytest.fixture(params=IMPLEMENTATIONS)
def seq(request: pytest.FixtureRequest) -> ModuleType:
    """The sequence checkers of one implementation (whichever codec they are handed)."""
    return load("sequence", request.param)


@pytest.fixture
def both_seq() -> tuple[ModuleType, ModuleType]:
    return load("sequence", "c"), load("sequence", "py")


@pytest.fixture
def both_tb() -> tuple[ModuleType, ModuleType]:
    return load("tools_begin", "c"), load("tools_begin", "py")


@pytest.fixture
def both_mn() -> tuple[ModuleType, ModuleType]:
    return load("mcp_notifications", "c"), load("mcp_notifications", "py")


@pytest.fixture(params=IMPLEMENTATIONS)
def stream_core(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's envelope reader (``cli._records``) over one implementation's RecordReader."""
    from diverge_codec.cli import _records

    module = load("stream", request.param)
    monkeypatch.setattr(_records, "stream", SimpleNamespace(RecordReader=module.RecordReader))


def assert_message(error: BaseException, message: str) -> None:
    """The exact message; on the stdlib JSON path, a parser's own phrase may differ, so only up to it."""
    from diverge_codec import _json

    if _json.BACKEND != "orjson" and "(char " in message:
        prefix = message.split(": ", 1)[0] if "did not parse" in message else message
        assert str(error).startswith(prefix)
        return
    assert str(error) == message


# The slow marker: `python -m pytest -m "not slow"` is the quick subset (no real servers or
# processes, nothing over ~2 s). Marked here by file and name, so the test files stay as written.
SLOW_FILES = (
    "test_relay_*.py", "test_peers.py", "test_mcp_relay.py", "test_cli_streaming.py", "test_cli_hostile.py",
    "test_install.py", "test_typing.py",
)
"""Files whose tests start real servers or processes."""
SLOW_TESTS = frozenset({
    "test_hostile.py::test_a_million_frames_leave_memory_flat",  # 8-15 s a core
    "test_reentrancy.py::test_a_decode_inside_a_decode_gives_the_same_frames_on_both_cores",  # up to 2.4 s
})
"""Tests over ~2 s by ``--durations`` in other files, as file::function (every parameter)."""


def is_slow(file_name: str, function: str) -> bool:
    """Whether a test is left out of the quick subset: by its file's name, or by file::function."""
    return any(fnmatch.fnmatchcase(file_name, pattern) for pattern in SLOW_FILES) or f"{file_name}::{function}" in SLOW_TESTS


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: real servers or processes, or over ~2 s; -m 'not slow' leaves them out")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item.path.name, getattr(item, "originalname", item.name)):
            item.add_marker(pytest.mark.slow)

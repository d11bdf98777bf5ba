"""Every behaviour test runs against both cores: the fixtures below are parametrized over ``c`` and ``py``.

The compiled modules are imported directly, so a missing extension fails the ``c``
tests instead of passing them on the pure core. Only where the pure core is the
point of the run (``DIVERGE_CODEC_PURE=1``, or ``DIVERGE_CODEC_ALLOW_NO_EXTENSION=1``
for the no-compiler install check) are the ``c`` cases skipped, and they say so.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

# The fixtures hand out modules, which hold no state between examples.
settings.register_profile(
    "diverge", suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
settings.register_profile(
    "ci", parent=settings.get_profile("diverge"), max_examples=300, print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "diverge"))

ALLOW_NO_EXTENSION = any(
    os.environ.get(name, "") not in ("", "0")
    for name in ("DIVERGE_CODEC_PURE", "DIVERGE_CODEC_ALLOW_NO_EXTENSION")
)
IMPLEMENTATIONS = ["c", "py"]


def load(channel: str, implementation: str) -> ModuleType:
    name = f"diverge_codec._{channel}_{implementation}"
    if implementation == "c" and ALLOW_NO_EXTENSION:
        try:
            return importlib.import_module(name)
        except ImportError:
            pytest.skip("compiled core not built, and this run allows that")
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


def assert_message(error: BaseException, message: str) -> None:
    """The exact message; on the stdlib JSON path, a parser's own phrase may differ, so only up to it."""
    from diverge_codec import _json

    if _json.BACKEND != "orjson" and "(char " in message:
        prefix = message.split(": ", 1)[0] if "did not parse" in message else message
        assert str(error).startswith(prefix)
        return
    assert str(error) == message

"""``inspect.signature`` works on the compiled core and agrees with the pure twin's.

The compiled functions are METH_O/fastcall builtins (``binding=False``); setup.py compiles
them with ``embedsignature.format='clinic'``, which gives each a ``__text_signature__``.
"""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType
from typing import Any

import pytest

from conftest import load

CHANNELS = ("tools_begin", "mcp_notifications", "stream", "sequence")

# A cdef class takes its signature from its docstring's first line ("Name(args)\n--\n\n");
# a METH_O function shows "/" only where the .pyx declares it (``def decode(payload, /)``).


def public_callables(module: ModuleType) -> list[tuple[str, Any]]:
    """Functions and classes defined in the module, and the classes' public methods."""
    found = []
    for name in sorted(dir(module)):
        value = getattr(module, name)
        if name.startswith("_") or not callable(value) or getattr(value, "__module__", None) != module.__name__:
            continue
        found.append((name, value))
        if isinstance(value, type):
            found += [(f"{name}.{attr}", getattr(value, attr)) for attr in sorted(vars(value))
                      if not attr.startswith("_") and callable(getattr(value, attr))]
    return found


def cases() -> list[Any]:
    params = []
    for channel in CHANNELS:
        try:
            compiled = importlib.import_module(f"diverge_codec._{channel}_c")
        except ModuleNotFoundError:
            continue
        for name, _ in public_callables(compiled):
            params.append(pytest.param(channel, name, id=f"{channel}.{name}"))
    return params or [pytest.param("", "", marks=pytest.mark.skip(reason="compiled core not built"))]


def resolve(module: ModuleType, dotted: str) -> Any:
    value: Any = module
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize(("channel", "name"), cases())
def test_compiled_signature_names_the_pure_parameters(channel: str, name: str) -> None:
    compiled = inspect.signature(resolve(load(channel, "c"), name))
    pure = inspect.signature(resolve(load(channel, "py"), name))
    assert list(compiled.parameters) == list(pure.parameters)
    assert [p.default for p in compiled.parameters.values()] == [p.default for p in pure.parameters.values()]


def test_the_one_argument_functions_have_signatures() -> None:
    compiled = load("mcp_notifications", "c")
    assert str(inspect.signature(compiled.decode)).startswith("(payload")
    assert str(inspect.signature(compiled.frame_notification)).startswith("(raw_json")
    assert str(inspect.signature(load("tools_begin", "c").encode)).startswith("(frame")

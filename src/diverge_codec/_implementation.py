"""Which implementation serves, and why: the compiled core where it is built, else pure Python.

The choice is made once, at import, so every channel module agrees with the others, and
it is silent: ``diverge-codec doctor`` (or :data:`IMPLEMENTATION_REASON`) says what was
chosen and why. A warning at import would become an error under ``-W error`` and in test
suites that turn warnings into errors, for a state that is a supported install.

- ``DIVERGE_CODEC_PURE=1`` (any value but empty or ``0``) forces the pure core.
- On PyPy the pure core serves: through cpyext the compiled one is slower there.
- On a free-threaded CPython too: the compiled core is not declared free-threading safe
  (importing it would turn the GIL back on), and without orjson, which has no build there,
  it gains only a few percent.
- ``DIVERGE_CODEC_REQUIRE_EXTENSION=1`` makes a missing or broken compiled core an
  ImportError instead of a fallback (CI, and anyone who must not run pure).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Literal


def _flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0")


FORCED_PURE = _flag("DIVERGE_CODEC_PURE")
REQUIRED = _flag("DIVERGE_CODEC_REQUIRE_EXTENSION")
PYPY = sys.implementation.name == "pypy"


def _free_threaded() -> bool:
    """A free-threaded build: its ABI flags say so on POSIX (no sysconfig import at start-up); elsewhere ask sysconfig."""
    if hasattr(sys, "abiflags"):
        return "t" in sys.abiflags
    import sysconfig

    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


FREE_THREADED = _free_threaded()
COMPILED_MODULES = ("_tools_begin_c", "_mcp_notifications_c", "_stream_c", "_sequence_c", "_eventstream_c")


def _choose() -> tuple[Literal["cython", "python"], str]:
    if FORCED_PURE:
        return "python", "forced by DIVERGE_CODEC_PURE"
    if PYPY and not REQUIRED:
        return "python", "PyPy: the pure core is faster there than the compiled one through cpyext"
    if FREE_THREADED and not REQUIRED:
        return "python", "free-threaded CPython: the compiled core is not declared free-threading safe"
    try:
        for name in COMPILED_MODULES:
            importlib.import_module(f"{__package__}.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__package__}.{name}":
            raise
        if REQUIRED:
            raise ImportError(f"diverge_codec: the compiled core is required (DIVERGE_CODEC_REQUIRE_EXTENSION) "
                              f"and not built in this install ({error})") from error
        return "python", f"the compiled core is not built in this install ({error.name} is missing)"
    except ImportError as error:
        if REQUIRED:
            raise
        return "python", f"the compiled core is built but does not import: {error}"
    return "cython", "the compiled core is built and imports"


IMPLEMENTATION: Literal["cython", "python"]
IMPLEMENTATION, IMPLEMENTATION_REASON = _choose()
"""``"cython"`` or ``"python"``, and one line saying why."""

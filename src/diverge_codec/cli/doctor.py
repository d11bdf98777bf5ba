"""``diverge-codec doctor``: which core and JSON backend this install uses, and why.

The install itself cannot say it (pip hides the build's output), and a warning at import
would break test suites that turn warnings into errors; this is where to look instead.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import platform
import sys
from typing import Any

from .. import __version__, _implementation, _json

REBUILD = ("pip cache remove diverge_codec && "
           "pip install --force-reinstall --no-deps --no-binary diverge-codec diverge-codec")
"""Build from the sdist, past a pure wheel from the index or one pip cached when it built without a compiler."""


def _json_reason() -> str:
    if _json.BACKEND == "orjson":
        return f"orjson {importlib.metadata.version('orjson')}"
    if os.environ.get("DIVERGE_CODEC_STDLIB_JSON", "") not in ("", "0"):
        return "the standard library's json: forced by DIVERGE_CODEC_STDLIB_JSON"
    if importlib.util.find_spec("orjson") is None:
        why = ("it has no build for PyPy" if _implementation.PYPY else
               "it has no free-threaded build" if _implementation.FREE_THREADED else "install orjson for speed")
        return f"the standard library's json: orjson is not installed ({why})"
    return "the standard library's json: orjson is installed but does not import"


def report() -> list[tuple[str, str]]:
    """The lines of the report, as (label, text)."""
    python = f"{platform.python_implementation()} {platform.python_version()}"
    if _implementation.FREE_THREADED:
        gil = getattr(sys, "_is_gil_enabled", lambda: True)()
        python += f", free-threaded build (GIL {'enabled' if gil else 'disabled'})"
    lines = [
        ("diverge-codec", __version__),
        ("python", f"{python} on {platform.system()} {platform.machine()}"),
        ("core", f"{_implementation.IMPLEMENTATION}: {_implementation.IMPLEMENTATION_REASON}"),
        ("json backend", _json_reason()),
    ]
    chosen = _implementation.FORCED_PURE or _implementation.PYPY or _implementation.FREE_THREADED
    if _implementation.IMPLEMENTATION == "python" and not chosen:
        lines.append(("to compile", f"install a C compiler and the Python headers, then: {REBUILD}"))
    return lines


def cmd_doctor(args: argparse.Namespace) -> int:
    lines = report()
    width = max(len(label) for label, _ in lines)
    for label, text in lines:
        print(f"{label + ':':<{width + 1}} {text}")
    if args.require_extension and _implementation.IMPLEMENTATION != "cython":
        return 1
    return 0


def register(commands: Any) -> None:
    doctor = commands.add_parser("doctor", help="say which core and JSON backend are in use, and why")
    doctor.add_argument("--require-extension", action="store_true",
                        help="exit 1 unless the compiled core is the one in use")
    doctor.set_defaults(run=cmd_doctor)

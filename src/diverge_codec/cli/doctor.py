"""``diverge-codec doctor``: which core and JSON backend this install uses, and why.

The install itself cannot say it (pip hides the build's output), and a warning at import
would break test suites that turn warnings into errors; this is where to look instead.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import shlex
import sys
import urllib.parse
import urllib.request
from typing import Any

from .. import __version__, _implementation, _json
from ._safe import escape

SOURCE_PLACEHOLDER = "PATH-TO-SOURCE"
SDIST_ENDINGS = (".tar.gz", ".zip")


def _direct_url() -> str | None:
    """pip's record of where this install came from (PEP 610), or None: from an index, or not pip's."""
    try:
        return importlib.metadata.distribution("diverge-codec").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return None


def source_of(direct_url: str | None) -> tuple[str, bool] | None:
    """The local clone or sdist this was installed from, and whether editably; None where unknown.

    A wheel, a remote URL or a version control URL is no source to build from here.
    """
    try:
        record = json.loads(direct_url) if direct_url else None
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    url = record.get("url")
    if not isinstance(url, str) or not url.startswith("file:") or "vcs_info" in record:
        return None
    path = urllib.request.url2pathname(urllib.parse.urlparse(url).path)
    if "archive_info" in record and not path.endswith(SDIST_ENDINGS):
        return None
    editable = bool(isinstance(record.get("dir_info"), dict) and record["dir_info"].get("editable"))
    return path, editable


def rebuild_command(source: tuple[str, bool] | None) -> str:
    """The pip command that compiles this install from its own source, never from a name on an index.

    The package has no release on an index, and anyone could register its name there, so
    the command names a path: where pip installed it from, else a placeholder. A path is
    built from source; the cache is emptied first, as pip would serve again the pure wheel
    it cached from the same sdist when no compiler was there (and caches the compiled one
    instead). ``--no-binary :all:`` is not needed for a path, and would build setuptools
    and Cython from source too.
    """
    path, editable = source if source is not None else (SOURCE_PLACEHOLDER, False)
    shown = escape(shlex.quote(path)) if source is not None else path
    return f"pip cache remove diverge_codec && pip install --force-reinstall --no-deps {'-e ' if editable else ''}{shown}"


def _compile_advice() -> str:
    source = source_of(_direct_url())
    where = "" if source is not None else " (the clone or sdist you installed from)"
    return f"install a C compiler and the Python headers, then{where}: {rebuild_command(source)}"


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
        lines.append(("to compile", _compile_advice()))
    return lines


def cmd_doctor(args: argparse.Namespace) -> int:
    lines = report()
    width = max(len(label) for label, _ in lines)
    for label, text in lines:
        print(f"{label + ':':<{width + 1}} {text}")
    if args.require_extension and _implementation.IMPLEMENTATION != "cython":
        return 1
    return 0


EPILOG = """\
output: one line each for the version, the Python, the core in use (compiled "cython"
or pure "python") and why, and the JSON backend and why; on a pure install that could
compile, the pip command that builds it from the clone or sdist it was installed from.

exit status: 0, or 1 with --require-extension when the compiled core is not in use.

examples:
  diverge-codec doctor
  diverge-codec doctor --require-extension && python -m pytest -q tests
"""


def register(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor", help="say which core and JSON backend are in use, and why",
        description="Say which core (compiled or pure) and which JSON backend this install uses, and why;\n"
                    "where it could compile and did not, how to build it.",
        epilog=EPILOG,
    )
    doctor.add_argument("--require-extension", action="store_true",
                        help="exit 1 unless the compiled core is the one in use")
    doctor.set_defaults(run=cmd_doctor)

"""What an install says about itself: the core chosen and why, silently at import, loudly in ``doctor``.

A missing compiled core is simulated in a child process by an import hook that refuses the
``_*_c`` modules, so these run the same on a compiled and on a pure install.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import diverge_codec
from diverge_codec import _implementation
from diverge_codec.cli import doctor, main

HIDE_COMPILED = """
import sys
class _NotBuilt:
    def find_spec(self, name, path=None, target=None):
        if name.startswith("diverge_codec._") and name.endswith("_c"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _NotBuilt())
"""


def child(code: str, *, hide_compiled: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter, warnings as errors, with ``env`` on top of ours."""
    merged = {k: v for k, v in os.environ.items() if not k.startswith("DIVERGE_CODEC_")}
    merged.update(env)
    return subprocess.run([sys.executable, "-W", "error", "-c", (HIDE_COMPILED if hide_compiled else "") + code],
                          env=merged, capture_output=True, text=True)


CHOICE = "import diverge_codec as d; print(d.IMPLEMENTATION); print(d.IMPLEMENTATION_REASON)"
CHOOSES_PURE_FIRST = pytest.mark.skipif(
    _implementation.PYPY or _implementation.FREE_THREADED,
    reason="this Python gets the pure core before the compiled one is looked for (see the PyPy test)",
)
PYPY_ONLY = pytest.mark.skipif(not _implementation.PYPY, reason="PyPy's own choice")


@CHOOSES_PURE_FIRST
def test_a_missing_compiled_core_is_a_silent_fallback_even_under_W_error():
    run = child(CHOICE, hide_compiled=True)
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert run.stdout.splitlines() == [
        "python", "the compiled core is not built in this install (diverge_codec._tools_begin_c is missing)",
    ]


def test_require_extension_makes_a_missing_compiled_core_an_import_error():
    run = child(CHOICE, hide_compiled=True, DIVERGE_CODEC_REQUIRE_EXTENSION="1")
    assert run.returncode == 1
    assert "ImportError: diverge_codec: the compiled core is required (DIVERGE_CODEC_REQUIRE_EXTENSION) and not built" in run.stderr


def test_forced_pure_says_so():
    run = child(CHOICE, DIVERGE_CODEC_PURE="1")
    assert run.stdout.splitlines() == ["python", "forced by DIVERGE_CODEC_PURE"]


def test_the_reason_matches_the_choice():
    expected = {
        "cython": "the compiled core is built and imports",
    }.get(diverge_codec.IMPLEMENTATION, diverge_codec.IMPLEMENTATION_REASON)
    assert diverge_codec.IMPLEMENTATION_REASON == expected
    assert _implementation.IMPLEMENTATION == diverge_codec.IMPLEMENTATION


def test_doctor_reports_core_backend_and_python(capsys: pytest.CaptureFixture[str]):
    assert main(["doctor"]) == 0
    lines = dict(line.split(":", 1) for line in capsys.readouterr().out.splitlines())
    assert lines["diverge-codec"].strip() == diverge_codec.__version__
    assert lines["core"].strip() == f"{diverge_codec.IMPLEMENTATION}: {diverge_codec.IMPLEMENTATION_REASON}"
    backend = lines["json backend"].strip()
    assert backend.startswith("orjson " if diverge_codec.JSON_BACKEND == "orjson" else "the standard library's json")
    assert lines["python"].strip().startswith(("CPython 3.", "PyPy 3."))


@CHOOSES_PURE_FIRST
def test_doctor_on_a_pure_install_says_how_to_compile():
    run = child("from diverge_codec.cli import main; raise SystemExit(main(['doctor', '--require-extension']))",
                hide_compiled=True)
    assert run.returncode == 1
    out = run.stdout.splitlines()
    assert out[2] == "core:          python: the compiled core is not built in this install (diverge_codec._tools_begin_c is missing)"
    source = doctor.source_of(doctor._direct_url())  # this install's own record, read by the test's process
    where = "" if source is not None else " (the clone or sdist you installed from)"
    assert out[4] == f"to compile:    install a C compiler and the Python headers, then{where}: {doctor.rebuild_command(source)}"
    assert not out[4].endswith(" diverge-codec") and "--no-binary" not in out[4]  # never a name from an index


@PYPY_ONLY
def test_pypy_gets_the_pure_core_says_why_and_no_compile_hint():
    run = child("from diverge_codec.cli import main; raise SystemExit(main(['doctor', '--require-extension']))")
    assert run.returncode == 1, run.stderr
    assert run.stdout.splitlines()[2:] == [
        "core:          python: PyPy: the pure core is faster there than the compiled one through cpyext",
        "json backend:  the standard library's json: orjson is not installed (it has no build for PyPy)",
    ]


@PYPY_ONLY
def test_pypy_with_the_extension_required_and_none_built_is_an_import_error():
    run = child(CHOICE, DIVERGE_CODEC_REQUIRE_EXTENSION="1")
    assert run.returncode == 1
    assert "ImportError: diverge_codec: the compiled core is required (DIVERGE_CODEC_REQUIRE_EXTENSION) and not built" in run.stderr


def test_doctor_names_a_forced_stdlib_backend_and_gives_no_compile_hint_when_pure_is_chosen():
    run = child("from diverge_codec.cli import main; raise SystemExit(main(['doctor']))",
                DIVERGE_CODEC_PURE="1", DIVERGE_CODEC_STDLIB_JSON="1")
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[2:] == [
        "core:          python: forced by DIVERGE_CODEC_PURE",
        "json backend:  the standard library's json: forced by DIVERGE_CODEC_STDLIB_JSON",
    ]


def test_python_dash_m_runs_doctor():
    run = subprocess.run([sys.executable, "-m", "diverge_codec", "doctor"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"diverge-codec: {diverge_codec.__version__}\n")

"""The public API as a typed user meets it: ``tests/typed_user.py`` passes mypy --strict and pyright strict.

Skipped where the checker is not installed (``pip install mypy pyright``); CI's typecheck
job installs both.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

USER = Path(__file__).with_name("typed_user.py")


def test_mypy_strict_accepts_the_typed_user() -> None:
    pytest.importorskip("mypy", reason="mypy is not installed")
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-version", "3.11",
                          "--config-file", "/dev/null", str(USER)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_pyright_strict_accepts_the_typed_user(tmp_path: Path) -> None:
    pyright = shutil.which("pyright")
    if pyright is None:
        pytest.skip("pyright is not installed")
    config = tmp_path / "pyrightconfig.json"
    config.write_text('{"typeCheckingMode": "strict", "pythonVersion": "3.11"}')
    run = subprocess.run([pyright, "--project", str(config), "--pythonpath", sys.executable, str(USER)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr

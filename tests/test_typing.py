"""The public API as a typed user meets it: mypy --strict and pyright strict accept the typed user
modules (``tests/typed_user*.py``) and every Python block of the README and of the docs pages
(``docs/*.md``), as pasted.

The user modules pin the types with ``assert_type``: a checker that infers another type, or
``Any`` where the value's type is known, fails. Skipped where the checker is not installed
(``pip install mypy pyright``, or the ``[typecheck]`` extra; CI's typecheck job installs both),
and the [mcp] users where the MCP SDK is not.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from test_readme import DOCS, all_python_blocks, needs_mcp  # noqa: E402

MCP = importlib.util.find_spec("mcp") is not None


def users(tmp_path: Path) -> list[str]:
    """The typed user modules, and the README's and docs pages' blocks, each as a module; the [mcp] ones where the SDK is installed."""
    files = [HERE / "typed_user.py"] + ([HERE / "typed_user_mcp.py"] if MCP else [])
    for name, line, code in all_python_blocks():
        if MCP or not needs_mcp(code):
            stem = name.removesuffix(".md").replace("/", "_").replace("-", "_").replace(".", "_").lower()
            block = tmp_path / f"{stem}_line_{line}.py"
            block.write_text(code, encoding="utf-8")
            files.append(block)
    return [str(path) for path in files]


@pytest.mark.skipif(not MCP, reason="the [mcp] extra is not installed: typed_user_mcp.py and the docs' SDK block are not type-checked")
def test_the_mcp_users_are_checked_where_the_sdk_is_installed(tmp_path: Path) -> None:
    checked = [Path(name).read_text(encoding="utf-8") for name in users(tmp_path)]
    blocks = 1 if DOCS.is_dir() else 0  # docs/mcp_sdk.md's block, where docs/ is beside tests/
    assert sum(needs_mcp(code) for code in checked) >= 1 + blocks  # typed_user_mcp.py and the SDK block


def test_mypy_strict_accepts_the_typed_users_and_the_documented_blocks(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is not installed")
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--python-version", "3.11",
                          "--config-file", "/dev/null", *users(tmp_path)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_pyright_strict_accepts_the_typed_users_and_the_documented_blocks(tmp_path: Path) -> None:
    pyright = shutil.which("pyright")
    if pyright is None:
        pytest.skip("pyright is not installed")
    config = tmp_path / "pyrightconfig.json"
    config.write_text('{"typeCheckingMode": "strict", "pythonVersion": "3.11"}')
    run = subprocess.run([pyright, "--project", str(config), "--pythonpath", sys.executable, *users(tmp_path)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 errors" in run.stdout


def test_pyright_verifytypes_finds_every_public_symbol_typed() -> None:
    """``pyright --verifytypes diverge_codec --ignoreexternal`` scores 100%; docs/typing.rst says what the
    score without ``--ignoreexternal`` counts against the package (the MCP SDK's and pydantic's own types)."""
    pyright = shutil.which("pyright")
    if pyright is None:
        pytest.skip("pyright is not installed")
    run = subprocess.run([pyright, "--verifytypes", "diverge_codec", "--ignoreexternal", "--outputjson",
                          "--pythonpath", sys.executable], capture_output=True, text=True)
    report = json.loads(run.stdout)["typeCompleteness"]
    untyped = [symbol["name"] for symbol in report["symbols"] if symbol["isExported"] and not symbol["isTypeKnown"]]
    assert untyped == [] and report["completenessScore"] == 1, run.stdout[-4000:]

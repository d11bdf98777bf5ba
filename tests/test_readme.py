"""Every Python block of README.md and of the docs pages (docs/*.md) runs as pasted, on each core the
install has, and shows what it says.

A block runs in a fresh interpreter from a scratch directory, as a user pasting it would
run it. A block that imports ``diverge_codec.mcp_sdk`` needs the [mcp] extra and is skipped,
saying so, where the SDK is not installed. A comment that starts with a bytes literal
(``# b'\\x02'``), after an expression or on the line below it, is the expression's value:
it is checked. The type checkers read the same blocks (``tests/test_typing.py``).

The docs pages are read where ``docs/`` is beside ``tests/``, as in the repository; a copy of
the tests with the README alone (``.ci/sanitize``, ``.ci/check-install``) runs the README's
blocks, and the docs' count test says that it skipped.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_BYTES_COMMENT = re.compile(r"#\s*(b'(?:[^'\\]|\\.)*')")


def documents() -> list[Path]:
    """The README, then each docs page in Markdown (none where docs/ is not beside tests/)."""
    return [README, *(sorted(DOCS.glob("*.md")) if DOCS.is_dir() else [])]


def python_blocks(path: Path = README) -> list[tuple[int, str]]:
    """Each ```python block of a Markdown file (the README by default), with the line its code starts on."""
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, match.start(1)) + 1, match.group(1)) for match in _BLOCK.finditer(text)]


def all_python_blocks() -> list[tuple[str, int, str]]:
    """(file, line, code) for each ```python block of the README and the docs pages; file is relative to the repository."""
    return [(path.relative_to(ROOT).as_posix(), line, code) for path in documents() for line, code in python_blocks(path)]


def needs_mcp(code: str) -> bool:
    return "mcp_sdk" in code or re.search(r"^\s*(from|import) mcp\b", code, re.M) is not None


def _block_params() -> list[Any]:
    params = []
    for name, line, code in all_python_blocks():
        marks = ()
        if needs_mcp(code) and importlib.util.find_spec("mcp") is None:
            marks = (pytest.mark.skip(reason="the block uses the [mcp] extra, which is not installed"),)
        params.append(pytest.param(code, marks=marks, id=f"{name}:{line}"))
    return params


def _cores() -> list[Any]:
    compiled = importlib.util.find_spec("diverge_codec._tools_begin_c") is not None
    return [pytest.param("c", marks=() if compiled else (pytest.mark.skip(reason="compiled core not built"),)),
            pytest.param("py")]


def test_the_readme_has_its_python_blocks() -> None:
    blocks = python_blocks()
    assert len(blocks) >= 1
    assert all(code.strip() for _, code in blocks)


def test_the_docs_have_their_python_blocks() -> None:
    if not DOCS.is_dir():
        pytest.skip("docs/ is not beside tests/ here (a copy of the tests with the README alone)")
    blocks = [(name, code) for name, _, code in all_python_blocks() if name.startswith("docs/")]
    pages = {name for name, _ in blocks}
    assert {"docs/channels.md", "docs/sequences.md", "docs/proxy.md", "docs/mcp_sdk.md"} <= pages, pages
    assert all(code.strip() for _, code in blocks)


@pytest.mark.parametrize("core", _cores())
@pytest.mark.parametrize("code", _block_params())
def test_a_readme_block_runs_as_pasted(code: str, core: str, tmp_path: Path) -> None:
    script = tmp_path / "block.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "DIVERGE_CODEC_PURE"}
    if core == "py":
        env["DIVERGE_CODEC_PURE"] = "1"
    check = f"import diverge_codec; assert diverge_codec.IMPLEMENTATION == {('cython' if core == 'c' else 'python')!r}"
    run = subprocess.run([sys.executable, "-W", "error", "-c", f"{check}; import runpy; runpy.run_path({str(script)!r}, run_name='__main__')"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def shown_values(code: str) -> list[tuple[int, str, bytes]]:
    """(line, expression, the bytes its comment shows) for each top-level expression a bytes comment follows."""
    lines = code.splitlines()
    found = []
    for node in ast.parse(code).body:
        if not isinstance(node, ast.Expr) or node.end_lineno is None:
            continue
        last = lines[node.end_lineno - 1][node.end_col_offset:]
        below = lines[node.end_lineno] if node.end_lineno < len(lines) else ""
        match = _BYTES_COMMENT.match(last.strip()) or (_BYTES_COMMENT.match(below.strip()) if below.lstrip().startswith("#") else None)
        if match:
            found.append((node.lineno, ast.get_source_segment(code, node) or "", ast.literal_eval(match.group(1))))
    return found


def _check_shown_values(prefix: str) -> dict[str, int]:
    """Run each block of the files whose name starts with prefix; check every value a comment shows: how many, by file."""
    checked: dict[str, int] = {}
    for name, start, code in all_python_blocks():
        if not name.startswith(prefix):
            continue
        cases = shown_values(code)
        if not cases:
            continue
        if needs_mcp(code) and importlib.util.find_spec("mcp") is None:
            continue
        namespace: dict[str, Any] = {"__name__": "readme"}
        exec(compile(code, str(ROOT / name), "exec"), namespace)  # noqa: S102 - the README's and docs' own code
        for line, expression, shown in cases:
            assert eval(expression, namespace) == shown, f"{name}:{start + line - 1}: {expression}"  # noqa: S307
            checked[name] = checked.get(name, 0) + 1
    return checked


def test_the_bytes_the_readme_shows_are_what_the_code_gives() -> None:
    assert _check_shown_values("README.md").get("README.md", 0) >= 4


def test_the_bytes_the_docs_show_are_what_the_code_gives() -> None:
    """Skipped, saying so, where docs/ is not beside tests/ (a copy of the tests with the README alone)."""
    if not DOCS.is_dir():
        pytest.skip(f"docs/ is not beside tests/ at {ROOT}: the docs pages' shown values are not checked here")
    checked = _check_shown_values("docs/")
    assert checked.get("docs/channels.md", 0) >= 8, checked

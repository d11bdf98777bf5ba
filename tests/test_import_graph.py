"""The package's modules import one another without a circle, and ``errors`` is a leaf but for ``_protocol``.

Every import of the package is an edge: absolute or relative, ``from . import x``, inside a
function, under ``if TYPE_CHECKING:`` (a circle for the type checker is one for the reader
too), a stub's, and a Cython file's ``import``/``cimport`` (an ``include``d .pxi counts as
its .pyx's). Imports made by name at run time (``importlib``) are not seen.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "diverge_codec"
SOURCE = ROOT / "src" / PACKAGE
PYTHON = (".py", ".pyi")
CYTHON = (".pyx", ".pxd")

SOURCE_TREE = pytest.mark.skipif(not SOURCE.is_dir(), reason="no source tree beside tests/ (a copy of the tests)")

_TRIPLE_QUOTED = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'')
_CYTHON_FROM = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+c?import[ \t]+(\([^)]*\)|[^\n]*)", re.MULTILINE)
_CYTHON_IMPORT = re.compile(r"^[ \t]*c?import[ \t]+([^\n]+)", re.MULTILINE)
_COMMENT = re.compile(r"#[^\n]*")
_CYTHON_INCLUDE = re.compile(r"^[ \t]*include[ \t]+[\"']([^\"']+)[\"']", re.MULTILINE)


def _module_name(path: Path, root: Path, package: str) -> str:
    parts = [package, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(module: str, path: Path) -> list[str]:
    parts = module.split(".")
    return parts if path.stem == "__init__" else parts[:-1]


def _resolve(base: str, names: list[str], modules: set[str]) -> set[str]:
    """The modules ``from base import names`` reads: a name that is a module of its own, else base."""
    return {f"{base}.{name}" if f"{base}.{name}" in modules else base for name in names}


def _absolute(module: str, path: Path, level: int, name: str) -> str:
    """``from <level dots><name> import ...`` in ``module`` (at ``path``), as an absolute module name."""
    if not level:
        return name
    here = _package_of(module, path)
    return ".".join(here[: len(here) - (level - 1)] + ([name] if name else []))


def _python_imports(path: Path, module: str, modules: set[str]) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, path, node.level, node.module or "")
            found |= _resolve(base, [alias.name for alias in node.names], modules)
    return found


def _cython_text(path: Path) -> str:
    """A Cython file's text, its includes spliced in, its triple-quoted strings blanked."""
    text = path.read_text(encoding="utf-8")
    text = _CYTHON_INCLUDE.sub(lambda match: _cython_text(path.parent / match.group(1)), text)
    return _TRIPLE_QUOTED.sub('""', text)


def _cython_imports(path: Path, module: str, modules: set[str]) -> set[str]:
    text = _COMMENT.sub("", _cython_text(path))
    found: set[str] = set()
    for match in _CYTHON_FROM.finditer(text):
        name = match.group(1)
        base = _absolute(module, path, len(name) - len(name.lstrip(".")), name.lstrip("."))
        names = [name.split(" as ")[0].strip() for name in match.group(2).strip().strip("()").split(",")]
        found |= _resolve(base, [name for name in names if name], modules)
    for match in _CYTHON_IMPORT.finditer(text):
        found |= {name.split(" as ")[0].strip() for name in match.group(1).split(",")}
    return found


def import_graph(root: Path = SOURCE, package: str = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports. A stub, a .pxd and a .pyx are their module's."""
    files = [path for path in sorted(root.rglob("*")) if path.suffix in PYTHON + CYTHON and path.is_file()]
    modules = {_module_name(path, root, package) for path in files}
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for path in files:
        module = _module_name(path, root, package)
        if path.suffix in PYTHON:
            imported = _python_imports(path, module, modules)
        else:
            imported = _cython_imports(path, module, modules)
        graph[module] |= {name for name in imported if name.split(".")[0] == package and name != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle through each strongly connected group of modules (Tarjan), as a path back to its start."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(group)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return [_circle_in(graph, group) for group in groups]


def _circle_in(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest path from the group's first module back to itself, within the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for target in sorted(graph[module] & group):
                if target == start:
                    return [*paths[module], start]
                if target not in paths:
                    paths[target] = [*paths[module], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"no circle in {sorted(group)}")  # pragma: no cover - a group of two or more has one


# Circles known and owned elsewhere, each to be removed with its fix (the test fails once one is gone).
KNOWN_CIRCLES: list[set[str]] = []


@SOURCE_TREE
def test_the_package_imports_without_a_circle():
    graph = import_graph()
    assert f"{PACKAGE}.errors" in graph and f"{PACKAGE}._sequence_c" in graph and f"{PACKAGE}.cli._common" in graph
    found = cycles(graph)
    new = [circle for circle in found if set(circle) not in KNOWN_CIRCLES]
    assert not new, "import circles:\n" + "\n".join(" -> ".join(circle) for circle in new)
    gone = [known for known in KNOWN_CIRCLES if known not in [set(circle) for circle in found]]
    assert not gone, f"no longer a circle, remove from KNOWN_CIRCLES: {gone}"


@SOURCE_TREE
def test_errors_imports_nothing_of_the_package_but_the_leaf():
    graph = import_graph()
    assert graph[f"{PACKAGE}.errors"] <= {f"{PACKAGE}._protocol"}, sorted(graph[f"{PACKAGE}.errors"])
    assert graph[f"{PACKAGE}._protocol"] == set(), sorted(graph[f"{PACKAGE}._protocol"])


# The reader itself: each kind of import it must see, in a package of its own.
FIXTURE = {
    "__init__.py": "from . import a\n",
    "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
    "b.py": "def f():\n    from pkg import c\n",
    "c.py": "import pkg.sub.d\n",
    "sub/__init__.py": "",
    "sub/d.py": "from .. import e\n",
    "e.pyx": '"""from pkg import nothing\n"""\ninclude "e_more.pxi"\n',
    "e_more.pxi": "from .f cimport thing\n",
    "f.pxd": "from pkg import (\n    g,  # a comment, e\n    sub as z,\n)\n",
    "g.py": "from .a import A\n",
}


@pytest.fixture
def fixture_package(tmp_path: Path) -> Path:
    for name, text in FIXTURE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_every_kind_of_import_is_an_edge_and_a_circle_is_found(fixture_package: Path):
    graph = import_graph(fixture_package, "pkg")
    assert graph == {
        "pkg": {"pkg.a"}, "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.sub.d"}, "pkg.sub": set(),
        "pkg.sub.d": {"pkg.e"}, "pkg.e": {"pkg.f"}, "pkg.f": {"pkg.g", "pkg.sub"}, "pkg.g": {"pkg.a"},
    }
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.sub.d", "pkg.e", "pkg.f", "pkg.g", "pkg.a"]]
    graph["pkg.g"].clear()
    assert cycles(graph) == []

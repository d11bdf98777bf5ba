"""The CLI's relay is built on the relay package's public API alone (issue #43: one path).

Every name ``cli/relay.py`` and ``cli/_watch.py`` take from ``diverge_codec.relay`` is in its ``__all__``, taken
from the package itself (never a module under it), and no attribute they read of those names starts with ``_``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import diverge_codec.relay as relay_package

CLI = Path(relay_package.__file__).resolve().parent.parent / "cli"
FILES = ("relay.py", "_watch.py", "_fleet.py")


def _relay_imports(tree: ast.AST) -> list[tuple[str, str]]:
    """(module, name) of each ``from ..relay... import name`` (and ``from .. import relay``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 2 and (node.module or "").startswith("relay"):
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 2 and node.module is None:
            found += [("", alias.asname or alias.name) for alias in node.names if alias.name == "relay"]
        elif isinstance(node, ast.Import) and any(alias.name.startswith("diverge_codec.relay") for alias in node.names):
            found += [(alias.name, "*") for alias in node.names]
    return found


@pytest.mark.parametrize("name", [name for name in FILES if (CLI / name).exists()])
def test_the_cli_touches_no_private_name_of_the_relay_package(name):
    tree = ast.parse((CLI / name).read_text())
    imports = _relay_imports(tree)
    assert all(module in ("relay", "") for module, _ in imports), imports  # the package, never a module under it
    assert {name for module, name in imports if module == "relay"} <= set(relay_package.__all__)
    taken = {alias for _, alias in imports} | {"relay"}
    private = sorted({node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr.startswith("_")
                      and isinstance(node.value, ast.Name) and node.value.id in taken})
    assert private == [], private


def test_the_check_sees_a_private_import():
    tree = ast.parse("from ..relay.stdio import ServerRelay\nfrom ..relay import _HOMES\nfrom .. import relay\nrelay._HOMES\n")
    imports = _relay_imports(tree)
    assert ("relay.stdio", "ServerRelay") in imports and not {n for m, n in imports if m == "relay"} <= set(relay_package.__all__)
    assert [node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)] == ["_HOMES"]

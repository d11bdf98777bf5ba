"""Every public constant has its own words in the API reference: a docstring beside it in the module
autodoc reads, or a ``data::`` entry in docs/api.rst. An ``autodata::`` of a constant made in another
module does not count: autodoc shows ``str``'s or ``int``'s own docstring for it."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "api.rst"
MODULES = ("diverge_codec", "diverge_codec.tools_begin", "diverge_codec.mcp_notifications", "diverge_codec.stream",
           "diverge_codec.sequence", "diverge_codec.proxy", "diverge_codec.relay", "diverge_codec.errors")


DATA = (str, bytes, int, float, dict, frozenset, set, tuple, list)
"""What autodoc documents with the type's own docstring when it finds none of the constant's."""


BY_SUBMODULE = {"diverge_codec.relay"}
"""Packages whose submodules docs/api.rst documents one by one (automodule each): a constant's docstring is there."""


def _constants(name: str) -> list[str]:
    module = importlib.import_module(name)
    return [attr for attr in getattr(module, "__all__", []) if isinstance(getattr(module, attr), DATA)]


def _documented_beside(module_name: str, attr: str) -> bool:
    """``NAME = ...`` (or ``NAME: T = ...``) in the module's own source, a docstring on the lines after it."""
    module = importlib.import_module(module_name)
    path = Path(inspect.getfile(module))
    files = sorted(path.parent.glob("*.py")) if module_name in BY_SUBMODULE else [path]
    source = "\n".join(file.read_text(encoding="utf-8") for file in files)
    return re.search(rf'^{re.escape(attr)}\b[^\n]*=[^\n]*\n(?:[^\n]*\n){{0,3}}?"""', source, re.M) is not None


@pytest.mark.parametrize("module", MODULES)
def test_every_public_constant_is_documented(module):
    if not API.is_file():
        pytest.skip("docs/ is not beside tests/ here")
    written = set(re.findall(r"^\.\. data:: (\S+)", API.read_text(encoding="utf-8"), re.M))
    missing = [attr for attr in _constants(module) if f"{module}.{attr}" not in written and not _documented_beside(module, attr)]
    assert missing == []

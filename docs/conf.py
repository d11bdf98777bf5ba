"""Sphinx configuration: the guide (MyST Markdown pages) and the API reference, from the docstrings.

``.ci/docs`` builds it, warnings as errors; locally: ``pip install '.[docs]' && python -m sphinx -W -b html docs docs/_build``.
"""

import os
import sys

# The pure twin is documented: it has the same API as the compiled core, with its annotations.
os.environ["DIVERGE_CODEC_PURE"] = "1"
sys.path.insert(0, os.path.abspath("../src"))

from diverge_codec import __version__  # noqa: E402

project = "diverge-codec"
author = "diverge-codec developers"
copyright = "diverge-codec developers"
release = version = __version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.intersphinx", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# Links to a page's own headings ([text](channels.md#what-encode-writes)) resolve.
myst_heading_anchors = 3
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
intersphinx_mapping = {}
# bench_targets.md is generated and included by performance.md, not a page of its own.
exclude_patterns = ["_build", "bench_targets.md"]
html_theme = "alabaster"
# Code blocks wrap long lines (docs/_static/wrap.css) rather than cut them off at the right edge.
html_static_path = ["_static"]
html_css_files = ["wrap.css"]


def _public_bases(app, name, obj, options, bases):  # noqa: ANN001, ARG001 - Sphinx's event signature
    """``show-inheritance`` lists the public bases only: the private mixins (``_Rebuilt``, ``_Empty``, ...) are not API."""
    bases[:] = [base for base in bases if not getattr(base, "__name__", "").startswith("_")]


def setup(app):  # noqa: ANN001, ANN201
    app.connect("autodoc-process-bases", _public_bases)

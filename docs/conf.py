"""Sphinx configuration: the API reference, from the docstrings (``.ci/docs`` builds it, warnings as errors)."""

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

extensions = ["sphinx.ext.autodoc", "sphinx.ext.intersphinx"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
intersphinx_mapping = {}
exclude_patterns = ["_build"]
html_theme = "alabaster"

"""Builds the Cython core. A normal install falls back to pure Python, with a warning, when it
cannot compile; DIVERGE_CODEC_REQUIRE_EXTENSION=1 (CI, wheel builds) makes that a failure."""

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

REQUIRE = os.environ.get("DIVERGE_CODEC_REQUIRE_EXTENSION", "") not in ("", "0")
SKIP = os.environ.get("DIVERGE_CODEC_PURE_BUILD", "") not in ("", "0")
MODULES = ["_tools_begin_c", "_mcp_notifications_c", "_stream_c", "_sequence_c"]


def warn(what, error):
    bar = "!" * 72
    print(f"\n{bar}\ndiverge-codec: {what} ({error}); installing the pure-Python implementation.\n"
          f"Set DIVERGE_CODEC_REQUIRE_EXTENSION=1 to make this an error.\n{bar}\n", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """Compile if possible; where not, fall back unless the extension is required."""

    def run(self):
        try:
            super().run()
        except Exception as error:
            if REQUIRE:
                raise
            warn("the compiled core could not be built", error)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as error:
            if REQUIRE:
                raise
            warn(f"{ext.name} could not be compiled", error)


def extensions():
    if SKIP:
        return []
    try:
        from Cython.Build import cythonize
    except ImportError as error:
        if REQUIRE:
            raise
        warn("Cython is not available", error)
        return []
    modules = [Extension(f"diverge_codec.{name}", [f"src/diverge_codec/{name}.pyx"]) for name in MODULES]
    return cythonize(modules, compiler_directives={"language_level": "3"}, include_path=["src"])


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})

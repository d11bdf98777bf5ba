"""Builds the Cython core; where it cannot, the build says so in the wheel's name.

A build that cannot compile (no compiler, no Python headers, no Cython) falls back to the
pure-Python twin and produces a ``py3-none-any`` wheel, never a platform wheel without its
extension; ``DIVERGE_CODEC_REQUIRE_EXTENSION=1`` (CI, wheel builds) makes the failure an
error instead. ``DIVERGE_CODEC_PURE_BUILD=1`` builds the pure wheel on purpose. PyPy gets
the pure core (cpyext makes the compiled one slower there than pure Python), and so does a
free-threaded CPython (orjson has no build there, and with the stdlib's json the compiled core
gains 3-4%; it is not yet declared free-threading safe).

Release builds carry no debug info (``-g0``, and ``-s`` where the linker is GNU's), and compile
every module but the tools-begin readers and the notification module at ``-O2`` instead of the
interpreter's ``-O3``: the wheel stays under 470,000 bytes. ``DIVERGE_CODEC_DEBUG_BUILD=1``, or a ``-g`` (``-g3``,
``-ggdb``...) of your own in ``CFLAGS``, keeps the debug info and the interpreter's ``-O``.
"""

import os
import platform
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.bdist_wheel import bdist_wheel  # setuptools>=70.1; pyproject asks >=77
from setuptools.command.build_ext import build_ext


def flag(name):
    return os.environ.get(name, "") not in ("", "0")


REQUIRE = flag("DIVERGE_CODEC_REQUIRE_EXTENSION")
PYPY = platform.python_implementation() == "PyPy"
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
SKIP = flag("DIVERGE_CODEC_PURE_BUILD") or ((PYPY or FREE_THREADED) and not REQUIRE)
DEBUG = flag("DIVERGE_CODEC_DEBUG_BUILD") or any(
    option.startswith("-g") and option != "-g0" for option in os.environ.get("CFLAGS", "").split())
MODULES = ["_tools_begin_c", "_mcp_notifications_c", "_stream_c", "_sequence_c", "_eventstream_c"]
# The C headers each module includes: an edit to one rebuilds the modules that use it.
HEADERS = {"_tools_begin_c": ["src/diverge_codec/_tools_begin_scan.h", "src/diverge_codec/_jsonscan.h"],
           "_mcp_notifications_c": ["src/diverge_codec/_jsonscan.h", "src/diverge_codec/_jsonwrite.h"]}
# Hand-written C compiled beside a module's Cython-generated source: the relay's scan of a short
# message, a translation unit of its own so its shortcuts never move the module's other code (issue 44).
SOURCES = {"_mcp_notifications_c": ["src/diverge_codec/_relayscan.c", "src/diverge_codec/_lazyscan.c"]}
# A hand-written source's own flags in a release build, after its module's (the last -O wins): the lazy
# reader's scan at -O2 in the -O3 notification module (see _lazyscan.c).
SOURCE_FLAGS = {"src/diverge_codec/_lazyscan.c": ["-O2"]}
# gcc/clang release builds compile these at -O2 (after the interpreter's -O3, so it wins): callgrind
# counts the same instructions a call at either level for them, and their code is about a tenth smaller,
# which keeps the wheel under 470,000 bytes (.ci/check-wheel). The tools-begin readers keep -O3: at
# -O2 a Begun decode costs ~9% more. -Os costs the checkers and the stream more still.
# The event-stream parser at -Os: 21.8 KB compressed against 26.6 at -O2, for 1,752 instructions an
# event against 1,286 (callgrind, MCP-shaped events of 185 B and 1.1 KB): ~0.1 us either way.
# The notification module keeps -O3 and its padding (FAST): decode's one pass counts about the same
# instructions at -O2, but takes 3-7% more CPU time (benchmarks/cpu_time.py, 100-180 B), and
# callgrind's cache model has the -O2 code missing the instruction cache ~15-20 times a decode (none at
# -O3): issue 44's "decode <= msgspec" hangs on it. It costs 11.5 KB of the wheel
# (.ci/check-wheel: 463,288 bytes with it and the relay's scan of issue 44, whose cap went 440,000 -> 470,000).
SMALLER = {"_stream_c": ["-O2"], "_sequence_c": ["-O2"], "_eventstream_c": ["-Os"]}
FAST = {"_mcp_notifications_c"}
# The tools-begin readers' strings are names and short values: _jsonscan.h's AVX2 long-string reader
# would only add to the wheel there.
MACROS = {"_tools_begin_c": [("DIVERGE_CODEC_NO_AVX2", "1")]}
# No padding before functions, jumps and labels (loops keep theirs): 3.3 KB off the wheel, and
# callgrind counts the same instructions or a few fewer (the padding's no-ops run where code falls into it).
UNPADDED = ["-falign-functions=1", "-falign-jumps=1", "-falign-labels=1"]
DIRECTIVES = {
    "language_level": "3",
    # A text signature in each docstring: inspect.signature works on the METH_O builtins.
    "embedsignature": True,
    "embedsignature.format": "clinic",
    # Off: the modules call functions and cdef methods, rarely a Python object's bound method, and
    # the code that unpacks one at each call site was a tenth of their text (12 KB of the
    # notification module's): the wheel stays under 470,000 bytes (.ci/check-wheel).
    "optimize.unpack_method_calls": False,
}


def warn(what, error):
    bar = "!" * 72
    print(f"\n{bar}\ndiverge-codec: {what} ({error}); building the pure-Python wheel (py3-none-any).\n"
          f"Set DIVERGE_CODEC_REQUIRE_EXTENSION=1 to make this an error.\n{bar}\n", file=sys.stderr)


class OptionalBuildExt(build_ext):
    """Compile every module, or none: on any failure the package is left wholly pure."""

    def build_extensions(self):
        if self.compiler.compiler_type == "unix" and not DEBUG:
            for ext in self.extensions:
                # No debug info, no unwind tables (C never unwinds; a sanitizer or debug build keeps
                # them), and only PyInit_* exported: about a tenth off each module.
                ext.extra_compile_args += ["-g0", "-fno-asynchronous-unwind-tables", "-fvisibility=hidden"]
                ext.extra_compile_args += SMALLER.get(ext.name.rpartition(".")[2], [])
                if sys.platform.startswith("linux"):
                    # Each function in its own section, and the linker drops those nothing calls
                    # (Cython's unused helpers).
                    padding = [] if ext.name.rpartition(".")[2] in FAST else UNPADDED
                    ext.extra_compile_args += ["-ffunction-sections", "-fdata-sections", *padding]
                    ext.extra_link_args += ["-s", "-Wl,--gc-sections"]
        super().build_extensions()

    def build_extension(self, ext):
        """A source of SOURCE_FLAGS compiled alone with them (release builds), its object linked in."""
        own = [source for source in ext.sources if source in SOURCE_FLAGS]
        if own and self.compiler.compiler_type == "unix" and not DEBUG:
            ext.sources = [source for source in ext.sources if source not in own]
            objects = []
            for source in own:
                objects += self.compiler.compile(
                    [source], output_dir=self.build_temp, macros=ext.define_macros, include_dirs=ext.include_dirs,
                    extra_postargs=[*ext.extra_compile_args, *SOURCE_FLAGS[source]], depends=ext.depends)
            ext.extra_objects = [*(ext.extra_objects or []), *objects]
        super().build_extension(ext)

    def run(self):
        try:
            super().run()
        except Exception as error:
            if REQUIRE:
                raise
            warn("the compiled core could not be built", error)
            self._fall_back()

    def _fall_back(self):
        """Drop what did build: a half-compiled package would still import as pure, but confuse."""
        for ext in self.extensions:
            for path in (self.get_ext_fullpath(ext.name), self.get_ext_filename(ext.name)):
                if os.path.exists(path) and path.endswith((".so", ".pyd")):
                    os.remove(path)
        self.extensions = []
        self.distribution.ext_modules = []


class TaggedBdistWheel(bdist_wheel):
    """Tag the wheel by what was built, not by what was planned: pure if the extension fell back."""

    def run(self):
        if not self.skip_build:
            self.reinitialize_command("build_ext").inplace = False
            self.run_command("build")
        if not self.distribution.has_ext_modules():
            self.root_is_pure = True
        super().run()


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
    modules = [Extension(f"diverge_codec.{name}", [f"src/diverge_codec/{name}.pyx", *SOURCES.get(name, [])],
                         depends=HEADERS.get(name, []), define_macros=MACROS.get(name, []))
               for name in MODULES]
    return cythonize(modules, compiler_directives=DIRECTIVES, include_path=["src"])


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt, "bdist_wheel": TaggedBdistWheel})

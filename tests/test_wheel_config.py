"""``[tool.cibuildwheel]`` as cibuildwheel itself reads it: the builds chosen, and every command,
path and placeholder it will run with, resolved the way ``--print-build-identifiers`` and a build do.

cibuildwheel expands ``{project}``/``{package}`` in before-build, repair and test commands and in
config-settings, never in ``environment``: a placeholder left in any resolved value is a build
that fails on CI (as ``PIP_CONSTRAINT = "{project}/..."`` did). ``.ci/check-wheel`` then runs
the steps themselves.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("cibuildwheel", reason="cibuildwheel is not installed (pip install cibuildwheel)")
from cibuildwheel.options import CommandLineArguments, Options, compute_options  # noqa: E402
from cibuildwheel.platforms import ALL_PLATFORM_MODULES, get_build_identifiers  # noqa: E402
from cibuildwheel.util.helpers import prepare_command  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = re.compile(r"(?<!#)\{[a-z_]+\}")
VERSIONS = ("cp310", "cp311", "cp312", "cp313", "cp314")
# (platform, the arch its runner in .github/workflows/wheels.yml builds, platform tags expected)
RUNNERS = [
    ("linux", "x86_64", ("manylinux_x86_64", "musllinux_x86_64")),
    ("linux", "aarch64", ("manylinux_aarch64", "musllinux_aarch64")),
    ("macos", "x86_64", ("macosx_x86_64",)),
    ("macos", "arm64", ("macosx_arm64",)),
    ("windows", "AMD64", ("win_amd64",)),
]


def options(platform: str, archs: str | None = None) -> Options:
    args = dataclasses.replace(CommandLineArguments.defaults(), platform=platform, archs=archs, package_dir=ROOT)
    return compute_options(platform, args, {})  # type: ignore[arg-type]


def identifiers(platform: str, archs: str | None = None) -> list[str]:
    resolved = options(platform, archs)
    return get_build_identifiers(ALL_PLATFORM_MODULES[platform], resolved.globals.build_selector,
                                 resolved.globals.architectures)


@pytest.mark.parametrize(("platform", "arch", "tags"), RUNNERS, ids=[f"{p}-{a}" for p, a, _ in RUNNERS])
def test_each_runner_builds_every_supported_cpython_and_nothing_else(platform: str, arch: str, tags: tuple[str, ...]):
    assert sorted(identifiers(platform, arch)) == sorted(f"{v}-{t}" for v in VERSIONS for t in tags)


def test_native_archs_on_this_linux_host_are_its_own():
    import platform

    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine())
    assert {arch.value for arch in options("linux").globals.architectures} == {machine}


def all_builds() -> list[Any]:
    return [pytest.param(platform, ident, id=ident)
            for platform, arch, _ in RUNNERS for ident in identifiers(platform, arch)]


def expanded(command: str | None, **extra: str) -> str:
    return prepare_command(command or "", project=str(ROOT), package=str(ROOT), **extra)


def paths_in(command: str) -> list[Path]:
    return [Path(token) for token in shlex.split(command) if token.startswith(str(ROOT))]


@pytest.mark.parametrize(("platform", "identifier"), all_builds())
def test_every_resolved_value_is_free_of_placeholders_and_its_paths_exist(platform: str, identifier: str):
    build = options(platform).build_options(identifier)
    environment = build.environment.as_dictionary(prev_environment={})
    assert environment == {"DIVERGE_CODEC_REQUIRE_EXTENSION": "1"}
    for value in (*environment.values(), *build.test_environment.as_dictionary(prev_environment={}).values()):
        assert not PLACEHOLDER.search(value), value  # never expanded there
    before_build = expanded(build.before_build)
    assert before_build == f"python -m pip install -r {ROOT}/.github/wheel-build-requirements.txt"
    test_command = expanded(build.test_command)
    repair = expanded(build.repair_command, wheel="/tmp/w/x.whl", dest_dir="/tmp/out", delocate_archs="arm64")
    for command in (before_build, test_command, repair, expanded(build.config_settings)):
        assert not PLACEHOLDER.search(command), command
        for path in paths_in(command):
            assert path.exists(), path
    assert test_command == f"diverge-codec doctor --require-extension && python -m pytest -q -p no:cacheprovider {ROOT}/tests"
    assert build.test_extras == "[test]"
    assert build.build_frontend.name == "build" and list(build.build_frontend.args) == ["--no-isolation"]
    if platform == "linux":
        assert repair == "auditwheel repair --strip -w /tmp/out /tmp/w/x.whl"


def test_the_pinned_build_requirements_satisfy_build_system_requires():
    import tomllib

    from packaging.requirements import Requirement

    pins = {}
    for line in (ROOT / ".github/wheel-build-requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.lower()] = version
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    for requirement in map(Requirement, requires):
        assert requirement.specifier.contains(pins[requirement.name.lower()]), requirement

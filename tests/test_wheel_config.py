"""``[tool.cibuildwheel]`` as cibuildwheel itself reads it: the builds chosen, and every command,
path and placeholder it will run with, resolved the way ``--print-build-identifiers`` and a build do.

cibuildwheel expands ``{project}``/``{package}`` in before-build, repair and test commands and in
config-settings, never in ``environment``: a placeholder left in any resolved value is a build
that fails on CI (as ``PIP_CONSTRAINT = "{project}/..."`` did). ``.ci/check-wheel`` then runs
the steps themselves.

The workflows themselves are pinned too, read line by line (PyYAML is not a test dependency):
least-privilege permissions, every action at a full commit SHA, no persisted credentials, and
every compiled-build source in the wheel workflow's trigger paths. The s390x job, which builds
and tests under QEMU with what its step's ``CIBW_*`` variables add to ``[tool.cibuildwheel]``,
is resolved as cibuildwheel resolves it, and the wheel's size bound is one figure everywhere.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

try:
    from cibuildwheel.options import CommandLineArguments, Options, compute_options
    from cibuildwheel.platforms import ALL_PLATFORM_MODULES, get_build_identifiers
    from cibuildwheel.util.helpers import prepare_command
except ImportError:
    HAVE_CIBUILDWHEEL = False
else:
    HAVE_CIBUILDWHEEL = True
needs_cibuildwheel = pytest.mark.skipif(not HAVE_CIBUILDWHEEL, reason="cibuildwheel is not installed (pip install cibuildwheel)")

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = re.compile(r"(?<!#)\{[a-z_]+\}")
VERSIONS = ("cp311", "cp312", "cp313", "cp314")
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


@needs_cibuildwheel
@pytest.mark.parametrize(("platform", "arch", "tags"), RUNNERS, ids=[f"{p}-{a}" for p, a, _ in RUNNERS])
def test_each_runner_builds_every_supported_cpython_and_nothing_else(platform: str, arch: str, tags: tuple[str, ...]):
    assert sorted(identifiers(platform, arch)) == sorted(f"{v}-{t}" for v in VERSIONS for t in tags)


@needs_cibuildwheel
def test_native_archs_on_this_linux_host_are_its_own():
    import platform

    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine())
    assert {arch.value for arch in options("linux").globals.architectures} == {machine}


def all_builds() -> list[Any]:
    if not HAVE_CIBUILDWHEEL:
        return [pytest.param("", "", id="cibuildwheel-not-installed")]
    return [pytest.param(platform, ident, id=ident)
            for platform, arch, _ in RUNNERS for ident in identifiers(platform, arch)]


def expanded(command: str | None, **extra: str) -> str:
    return prepare_command(command or "", project=str(ROOT), package=str(ROOT), **extra)


def paths_in(command: str) -> list[Path]:
    return [Path(token) for token in shlex.split(command) if token.startswith(str(ROOT))]


@needs_cibuildwheel
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
        assert repair == "auditwheel repair --strip -z 9 -w /tmp/out /tmp/w/x.whl"


@needs_cibuildwheel
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


# ---- the workflows -----------------------------------------------------------

WORKFLOWS = ROOT / ".github" / "workflows"
needs_workflows = pytest.mark.skipif(not WORKFLOWS.is_dir(), reason="no .github/ beside tests/ (a copy of the tests)")
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<action>[^\s#]+)\s*(?:#\s*(?P<comment>.*))?$")
PINNED = re.compile(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}")
VERSION = re.compile(r"v\d+\.\d+\.\d+")
# Permissions beyond the top level's ``contents: read``: (workflow, job) -> what that job needs.
EXTRA_PERMISSIONS = {("wheels.yml", "publish"): {"id-token": "write"}}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _mapping(lines: list[str], start: int) -> dict[str, str]:
    """The ``key: value`` lines indented under ``lines[start]`` (comments dropped)."""
    found = {}
    for line in lines[start + 1:]:
        if line.strip() and _indent(line) <= _indent(lines[start]):
            break
        key, _, value = line.split("#")[0].partition(":")
        if key.strip():
            found[key.strip()] = value.strip()
    return found


def workflow_problems(name: str, text: str) -> list[str]:
    """What in one workflow breaks the pins: permissions, SHAs, persisted credentials."""
    lines = text.splitlines()
    problems = []
    top = [i for i, line in enumerate(lines) if line.startswith("permissions:")]
    if [_mapping(lines, i) for i in top] != [{"contents": "read"}]:
        problems.append("the top level does not set exactly permissions: contents: read")
    jobs_at = next((i for i, line in enumerate(lines) if line.startswith("jobs:")), len(lines))
    job = ""
    for i, line in enumerate(lines):
        if i > jobs_at and re.fullmatch(r"  [\w-]+:\s*", line):
            job = line.strip()[:-1]
        if line.strip() == "permissions:" and _indent(line) > 0:
            if _mapping(lines, i) != EXTRA_PERMISSIONS.get((name, job)):
                problems.append(f"job {job} has permissions {_mapping(lines, i)}")
        match = USES.match(line)
        if match is None:
            continue
        action, comment = match["action"], (match["comment"] or "").strip()
        if not PINNED.fullmatch(action) or not VERSION.fullmatch(comment):
            problems.append(f"line {i + 1}: {action} is not pinned to a commit SHA with a # vX.Y.Z comment")
        if action.startswith("actions/checkout@"):
            step = _step_of(lines, i)
            if not any(re.fullmatch(r"\s*persist-credentials:\s*false\s*", text) for text in step):
                problems.append(f"line {i + 1}: checkout without persist-credentials: false")
    return problems


def _step_of(lines: list[str], at: int) -> list[str]:
    """The lines of the step whose ``uses:`` is ``lines[at]``, up to the next step or a shallower line."""
    start = at
    while not lines[start].lstrip().startswith("- "):
        start -= 1
    dash = _indent(lines[start])
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > dash):
        end += 1
    return lines[start:end]


def _workflow_files() -> list[Path]:
    return sorted(WORKFLOWS.glob("*.yml")) + sorted(WORKFLOWS.glob("*.yaml"))


@needs_workflows
def test_every_workflow_is_least_privilege_pinned_and_keeps_no_credentials():
    files = _workflow_files()
    assert {path.name for path in files} >= {"test.yml", "wheels.yml"}
    for path in files:
        assert workflow_problems(path.name, path.read_text()) == [], path.name


def test_the_workflow_check_finds_each_problem():
    text = """name: x
on: push
jobs:
  build:
    runs-on: ubuntu-latest
    permissions:
      contents: write
    steps:
      - uses: actions/checkout@v4
      - name: pinned, no comment
        uses: actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065
      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262 # v4.4.0
        with:
          persist-credentials: true
      - run: echo persist-credentials: false
"""
    assert workflow_problems("x.yml", text) == [
        "the top level does not set exactly permissions: contents: read",
        "job build has permissions {'contents': 'write'}",
        "line 9: actions/checkout@v4 is not pinned to a commit SHA with a # vX.Y.Z comment",
        "line 9: checkout without persist-credentials: false",
        "line 11: actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065 is not pinned to a commit SHA with a # vX.Y.Z comment",
        "line 12: checkout without persist-credentials: false",
    ]
    fixed = text.replace("jobs:\n", "permissions:\n  contents: read\njobs:\n").replace("      contents: write\n", "      contents: read\n")
    assert workflow_problems("x.yml", fixed)[0] == "job build has permissions {'contents': 'read'}"


def wheel_trigger_paths() -> list[str]:
    text = (WORKFLOWS / "wheels.yml").read_text()
    match = re.search(r"^  pull_request:\n    paths: \[([^\]]*)\]", text, re.MULTILINE)
    assert match, "wheels.yml runs on pull requests only for some paths, listed as [...]"
    return re.findall(r'"([^"]+)"', match.group(1))


@needs_workflows
def test_every_source_of_the_compiled_build_triggers_the_wheel_workflow():
    paths = wheel_trigger_paths()
    assert {"setup.py", "pyproject.toml", ".github/**"} <= set(paths)
    sources = [path.relative_to(ROOT).as_posix() for path in sorted((ROOT / "src" / "diverge_codec").iterdir())
               if path.suffix in (".pyx", ".pxd", ".pxi", ".h")]
    assert {source.rsplit(".", 1)[1] for source in sources} == {"pyx", "pxd", "pxi", "h"}
    for source in sources:
        assert any(fnmatch.fnmatchcase(source, pattern) for pattern in paths), source


@needs_workflows
def test_the_wheel_workflow_runs_the_cibuildwheel_ci_checks_the_configuration_with():
    pins = {re.search(r"cibuildwheel==([\w.]+)", (ROOT / where).read_text()).group(1)  # type: ignore[union-attr]
            for where in (".github/workflows/wheels.yml", ".ci/run")}
    assert len(pins) == 1, pins


# ---- the s390x job, under QEMU -------------------------------------------------


def job_lines(name: str, job: str) -> list[str]:
    """The lines of one job of a workflow, from its ``  job:`` line to the next job's."""
    lines = (WORKFLOWS / name).read_text().splitlines()
    start = lines.index(f"  {job}:")
    end = next((i for i in range(start + 1, len(lines)) if re.fullmatch(r"  [\w-]+:\s*", lines[i])), len(lines))
    return lines[start:end]


def emulated_environment() -> dict[str, str]:
    """The ``env:`` of the emulated job's cibuildwheel step: what it adds to pyproject's options."""
    lines = job_lines("wheels.yml", "emulated")
    run = next(i for i, line in enumerate(lines) if line.strip() == "run: python -m cibuildwheel --output-dir wheelhouse")
    env = next(i for i in range(run, len(lines)) if lines[i].strip() == "env:")
    return {key: value.strip('"') for key, value in _mapping(lines, env).items()}


@needs_workflows
def test_the_emulated_job_sets_up_qemu_for_s390x_and_publishing_waits_for_it():
    lines = job_lines("wheels.yml", "emulated")
    qemu = next(i for i, line in enumerate(lines) if "uses: docker/setup-qemu-action@" in line)
    assert _mapping(lines, qemu + 1) == {"platforms": "s390x"}
    assert emulated_environment()["CIBW_ARCHS_LINUX"] == "s390x"
    assert any(re.fullmatch(r"\s*name: wheels-linux-s390x", line) for line in lines)  # its own artifact
    needs = next(line for line in job_lines("wheels.yml", "publish") if line.strip().startswith("needs:"))
    assert "emulated" in needs and "wheels" in needs and "sdist-and-pure-wheel" in needs


@needs_workflows
def test_the_emulated_job_runs_the_checks_of_check_platforms():
    command = emulated_environment()["CIBW_TEST_COMMAND"]
    assert command == "bash {project}/.ci/check-platforms --installed"
    script = (ROOT / ".ci" / "check-platforms").read_text()
    tier = re.search(r"^CODEC_TESTS=\(([^)]*)\)", script, re.MULTILINE)
    assert tier, "check-platforms names its codec tier in CODEC_TESTS=(...)"
    for name in tier.group(1).split():
        assert (ROOT / "tests" / name).is_file(), name


@needs_cibuildwheel
@needs_workflows
def test_the_emulated_job_resolves_to_every_cpython_on_manylinux_s390x_tested_with_orjson_wheels():
    args = dataclasses.replace(CommandLineArguments.defaults(), platform="linux", package_dir=ROOT)
    resolved = compute_options("linux", args, emulated_environment())  # type: ignore[arg-type]
    found = get_build_identifiers(ALL_PLATFORM_MODULES["linux"], resolved.globals.build_selector,
                                  resolved.globals.architectures)
    # musllinux_s390x is left out: orjson has no wheel for it.
    assert sorted(found) == [f"{version}-manylinux_s390x" for version in VERSIONS]
    for identifier in found:
        build = resolved.build_options(identifier)
        assert build.environment.as_dictionary(prev_environment={}) == {"DIVERGE_CODEC_REQUIRE_EXTENSION": "1"}
        assert build.test_environment.as_dictionary(prev_environment={}) == {
            "PIP_ONLY_BINARY": "orjson", "CHECK_PLATFORMS_FUZZ_SECONDS": "30"}
        test_command = expanded(build.test_command)
        assert test_command == f"bash {ROOT}/.ci/check-platforms --installed"
        assert not PLACEHOLDER.search(test_command)
        for path in paths_in(test_command):
            assert path.exists(), path
        assert build.test_extras == "[test]"


@needs_workflows
def test_the_wheel_size_bound_is_470000_bytes_in_the_workflow_and_check_wheel():
    workflow = (WORKFLOWS / "wheels.yml").read_text()
    assert "-size +470000c" in workflow
    assert re.search(r"^max_bytes=\$\{MAX_BYTES:-470000\}$", (ROOT / ".ci" / "check-wheel").read_text(), re.MULTILINE)

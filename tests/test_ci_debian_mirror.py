"""``.ci/debian-mirror``: the mirror debootstrap uses is read from apt's sources, never written in the repo."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "debian-mirror"
pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason="no .ci/ beside tests/ (a copy of the tests, as .ci/sanitize "
                                                          "runs): the script and the repository are the checkout's")
# Written as labels, so that this file names no host either.
REGISTRY_HOSTS = tuple(".".join(labels) for labels in (
    ("pypi", "org"), ("pythonhosted", "org"), ("deb", "debian", "org"), ("ftp", "debian", "org"),
    ("registry", "npmjs", "org"), ("proxy", "golang", "org"), ("crates", "io"), ("rubygems", "org"),
    ("archive", "ubuntu", "com")))


def mirror(tmp_path: Path, files: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "sources.list.d").mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "APT_DIR": str(tmp_path)})


DEB822 = """\
Types: deb
# a comment
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main

Types: deb deb-src
URIs: http://mirror.example/debian/
Suites: bookworm bookworm-updates
Components: main
"""


@pytest.mark.parametrize(("files", "expected"), [
    ({"sources.list.d/debian.sources": DEB822}, "http://mirror.example/debian"),
    ({"sources.list": "deb-src http://src.example/debian sid main\n"
                      "deb [arch=amd64 signed-by=/k.gpg] http://one.example/debian trixie main # note\n"},
     "http://one.example/debian"),
    ({"sources.list.d/vendor.list": "deb https://vendor.example/apt cloud-sdk-bookworm main\n",
      "sources.list.d/off.sources": "Types: deb\nURIs: http://off.example/debian\nSuites: sid\nEnabled: no\n",
      "sources.list.d/z.sources": "Types: deb\nURIs: http://z.example/debian\nSuites: unstable\n"},
     "http://z.example/debian"),
])
def test_the_first_debian_release_source_is_the_mirror(tmp_path, files, expected):
    done = mirror(tmp_path, files)
    assert (done.returncode, done.stdout) == (0, expected + "\n")


def test_no_debian_source_is_refused_saying_what_to_set(tmp_path):
    done = mirror(tmp_path, {"sources.list": "deb http://ports.example/ubuntu noble main\n",
                             "sources.list.d/x.sources.disabled": "Types: deb\nURIs: http://x.example/debian\nSuites: sid\n"})
    assert done.returncode == 2 and done.stdout == ""
    assert "CHECK_PYTHONS_MIRROR" in done.stderr


def test_no_registry_host_is_named_in_the_repository():
    try:
        listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    except OSError:
        pytest.skip("git is not installed")
    files = listed.stdout.split()
    if listed.returncode != 0 or not files:
        pytest.skip("not a git checkout (an sdist, a copy of the tree)")
    named = []
    for name in files:
        path = ROOT / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace").lower()
        named += [f"{name}: {host}" for host in REGISTRY_HOSTS if host in text]
    assert named == []

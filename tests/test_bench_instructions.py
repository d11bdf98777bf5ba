"""benchmarks/instructions.py's child runs where no other job's files can move its count."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import instructions  # noqa: E402  (the callgrind runner)


def test_the_child_has_no_folder_that_others_write_on_its_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The count of a call is the difference of two runs: a folder on the child's path whose entries change
    between them (the current one, /tmp where valgrind's gdbserver puts a FIFO a run) moves it by hundreds of
    instructions. So ``-P`` (no current folder) and no gdbserver, and one hash seed."""
    seen = []

    def run(argv: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        seen.append((argv, options["env"]))
        return subprocess.CompletedProcess(argv, 0, "", "==1== Collected : 1234\n")

    monkeypatch.setattr(instructions.subprocess, "run", run)
    assert instructions.collected("pass") == 1234
    (argv, env), = seen
    assert argv[:4] == ["valgrind", "--tool=callgrind", "--vgdb=no", "--callgrind-out-file=/dev/null"]
    assert argv[4:] == [sys.executable, "-P", "-c", "pass"]
    assert env["PYTHONHASHSEED"] == "0"

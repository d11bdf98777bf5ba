"""Files the CLI creates are the user's alone: mode 0600, made anew, never through a symbolic link.

An Inactive frame holds secret values, so a capture written with ``encode -o`` must not
be 0644, keep an existing file's mode, or land wherever a link at the path points.
``create_private`` is what encode (and relay's ``--out``) open their file with.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from diverge_codec import stream, tools_begin
from diverge_codec.cli import UsageError
from diverge_codec.cli._safe import create_private

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes, symbolic links and FIFOs")

SECRET = "SECRET-5d1e"
INACTIVE = b'{"variant": "inactive", "values": {"token": "' + SECRET.encode() + b'"}}\n'
RECORD = stream.record(tools_begin.encode(tools_begin.Inactive({"token": SECRET})))  # what encode writes for it


@pytest.fixture(autouse=True)
def umask():
    """The usual umask, so a file's mode is what create_private asked for and no stricter."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _create(path: Path, data: bytes = b"new") -> None:
    fd = create_private(str(path))
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _refusal(path: Path) -> str:
    with pytest.raises(UsageError) as raised:
        create_private(str(path))
    return str(raised.value)


def _encode(out: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "diverge_codec", "encode", "--channel", "tools-begin", "-o", str(out)],
                          input=INACTIVE, capture_output=True, timeout=120)


def _target(tmp_path: Path) -> Path:
    target = tmp_path / "target"
    target.write_bytes(b"kept " + SECRET.encode())
    target.chmod(0o644)
    return target


def test_a_new_file_is_0600(tmp_path):
    path = tmp_path / "new.cap"
    _create(path)
    assert (_mode(path), path.read_bytes()) == (0o600, b"new")


def test_an_existing_0644_file_is_replaced_not_reopened(tmp_path):
    path = tmp_path / "old.cap"
    path.write_bytes(b"old contents")
    path.chmod(0o644)
    other_link = tmp_path / "hard-link"
    os.link(path, other_link)
    _create(path)
    assert (_mode(path), path.read_bytes()) == (0o600, b"new")
    # the old file lives on under its other name, as it was: a new inode, not a truncation
    assert (_mode(other_link), other_link.read_bytes(), os.stat(other_link).st_nlink) == (0o644, b"old contents", 1)


def test_a_symbolic_link_is_refused_and_its_target_untouched(tmp_path):
    target = _target(tmp_path)
    link = tmp_path / "link.cap"
    link.symlink_to(target)
    message = _refusal(link)
    assert message == f"cannot write {link}: it is a symbolic link, which is not followed"
    assert SECRET not in message
    assert (link.is_symlink(), target.read_bytes(), _mode(target)) == (True, b"kept " + SECRET.encode(), 0o644)


def test_a_dangling_symbolic_link_is_refused_and_nothing_made(tmp_path):
    link = tmp_path / "link.cap"
    link.symlink_to(tmp_path / "nowhere")
    assert _refusal(link) == f"cannot write {link}: it is a symbolic link, which is not followed"
    assert not (tmp_path / "nowhere").exists()


def _socket_file(path) -> None:
    import socket

    socket.socket(socket.AF_UNIX).bind(str(path))


@pytest.mark.parametrize("kind, make, why", [
    ("directory", os.mkdir, "it is a directory"),
    ("socket", _socket_file, "it is not a regular file"),
])
def test_what_is_no_regular_file_is_refused_and_left(tmp_path, kind, make, why):
    path = tmp_path / kind
    make(path)
    assert _refusal(path) == f"cannot write {path}: {why}"
    assert path.exists()


def test_a_pipe_or_a_terminal_is_written_as_it_is_even_through_a_link(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "to-fifo"
    link.symlink_to(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        for path in (fifo, link):
            fd = create_private(str(path))
            os.write(fd, b"x")
            os.close(fd)
        assert os.read(reader, 10) == b"xx" and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    finally:
        os.close(reader)
    os.close(create_private(os.devnull))  # /dev/null stays what it is
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_missing_folder_says_why(tmp_path):
    path = tmp_path / "no" / "x.cap"
    assert _refusal(path) == f"cannot write {path}: No such file or directory"


def test_encode_writes_a_new_file_0600(tmp_path):
    out = tmp_path / "new.cap"
    done = _encode(out)
    assert (done.returncode, done.stderr) == (0, b"")
    assert (_mode(out), out.read_bytes()) == (0o600, RECORD)


def test_encode_replaces_an_existing_0644_file_with_a_0600_one(tmp_path):
    out = tmp_path / "old.cap"
    out.write_bytes(b"old contents, longer than the new ones will be")
    out.chmod(0o644)
    inode = os.stat(out).st_ino
    keep = tmp_path / "keep"
    os.link(out, keep)  # holds the old inode, so the new file cannot reuse its number
    done = _encode(out)
    assert (done.returncode, done.stderr) == (0, b"")
    assert (_mode(out), out.read_bytes()) == (0o600, RECORD)
    assert os.stat(out).st_ino != inode


def test_encode_refuses_a_symbolic_link_and_leaves_its_target(tmp_path):
    target = _target(tmp_path)
    out = tmp_path / "link.cap"
    out.symlink_to(target)
    done = _encode(out)
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode() == f"diverge-codec: cannot write {out}: it is a symbolic link, which is not followed\n"
    assert (out.is_symlink(), target.read_bytes(), _mode(target)) == (True, b"kept " + SECRET.encode(), 0o644)

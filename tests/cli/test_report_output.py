"""``report --output`` writes atomically (a rename) only over a regular file or a new path (issue 55).

Before: ``--output /dev/full`` replaced the device node with a regular file, and an output path that was
a symbolic link became a regular file in its place. Now a device, a pipe, a socket or a directory is
refused with one line and left as it was; a symbolic link is written through, and only to a file this
user owns. The device case is exercised with a named pipe: the same check (anything but a regular file)
refuses both, and a test must not risk a real device node.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from cli.bounded import refused, run
from cli.documents import valid


def _report(tmp_path: Path, output: Path) -> Any:
    snapshot = tmp_path / "s.json"
    snapshot.write_text(json.dumps(valid("snapshot")))
    return run("report", "--before", snapshot, "--after", snapshot, "--output", output)


def test_a_pipe_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    refused(_report(tmp_path, pipe), "--output", "not a regular file (a named pipe)")
    assert stat.S_ISFIFO(pipe.lstat().st_mode)


def test_a_directory_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    directory = tmp_path / "out"
    directory.mkdir()
    refused(_report(tmp_path, directory), "--output", "not a regular file (a directory)")
    assert directory.is_dir()
    assert not list(directory.iterdir())


def test_a_symbolic_link_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.html"
    real.write_text("old")
    link = tmp_path / "link.html"
    link.symlink_to(real)
    result = _report(tmp_path, link)
    assert result.code == 0, str(result)
    assert link.is_symlink()
    assert real.read_text().startswith("<!DOCTYPE html>")


def test_a_symbolic_link_to_a_pipe_is_refused(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    link = tmp_path / "link.html"
    link.symlink_to(pipe)
    refused(_report(tmp_path, link), "--output", "not a regular file (a named pipe)")
    assert link.is_symlink()
    assert stat.S_ISFIFO(pipe.lstat().st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_symbolic_link_to_another_users_file_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs.html"
    theirs.write_text("theirs")
    os.chown(theirs, 65534, 65534)
    link = tmp_path / "link.html"
    link.symlink_to(theirs)
    refused(_report(tmp_path, link), "--output", "owned by uid 65534")
    assert theirs.read_text() == "theirs"

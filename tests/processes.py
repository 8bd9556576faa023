"""Start the processes a test needs (servers, the operator) so that none outlives the test run.

Linux: a process started here gets SIGKILL if pytest itself dies, so not even an aborted run leaves it
behind (PR_SET_PDEATHSIG survives exec, and the pid stays the started program's). The fixtures that
start a process also stop it at teardown, with :func:`stop`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

# argv: the test run's pid, then the command.
_ORPHAN_GUARD = """\
import ctypes, os, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):
    sys.exit("the test exited before the process started")
os.execv(sys.argv[2], sys.argv[2:])
"""


def spawn(
    command: Sequence[str], *, env: Mapping[str, str], log: Path, new_session: bool = False
) -> subprocess.Popen[bytes]:
    """Run ``command`` (its first word a path) with stdout and stderr in ``log``; killed if pytest dies.

    ``new_session``: the process leads a session of its own, so that a test can find its children."""
    argv = [sys.executable, "-c", _ORPHAN_GUARD, str(os.getpid()), *command]
    with log.open("wb") as out:
        return subprocess.Popen(
            argv, env=dict(env), stdout=out, stderr=subprocess.STDOUT, start_new_session=new_session
        )


def stop(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> int:
    """SIGTERM, then SIGKILL after ``timeout`` seconds; the exit code (negative: the signal)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait(timeout=timeout)


def tail(log: Path, lines: int = 40) -> str:
    text = log.read_text(errors="replace") if log.exists() else ""
    return "\n".join(text.splitlines()[-lines:])

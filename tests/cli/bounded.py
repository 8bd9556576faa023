"""Run `kafka-balancer` as a user does, in a process that may use at most 1 GiB of address space.

A command that tried to hold more gets MemoryError instead of taking the machine's memory from the
other tests; the caller sees that as a failed run. ``refused`` checks the contract of a refusal: exit 2,
exactly one line on stderr, no traceback.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

MEMORY_LIMIT = 1 << 30  # bytes of address space
CLI = [sys.executable, "-c", "import sys; from kafka_balancer.cli import main; sys.exit(main())"]


@dataclass(frozen=True)
class Run:
    argv: tuple[str, ...]
    code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]

    @property
    def reasons(self) -> list[str]:
        """stderr's lines without the warnings a successful or refused run may print first."""
        return [line for line in self.lines if ": warning: " not in line]

    def __str__(self) -> str:
        command = " ".join(self.argv)[:300]
        return f"kafka-balancer {command} -> {self.code} in {self.seconds:.1f} s, stderr:\n{self.stderr[-3000:]}"


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run(*argv: str | Path, timeout: float = 120, stdin: str | None = None) -> Run:
    args = tuple(map(str, argv))
    started = time.monotonic()
    done = subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        check=False,
        input=stdin,
        preexec_fn=_limit_memory,
    )
    return Run(args, done.returncode, done.stdout, done.stderr, time.monotonic() - started)


def refused(result: Run, *words: str, code: int = 2) -> str:
    """Assert the run ended with ``code`` and one line on stderr that contains every word; return the line."""
    assert "Traceback" not in result.stderr, str(result)
    assert result.code == code, str(result)
    assert len(result.lines) == 1, str(result)
    line = result.lines[0]
    for word in words:
        assert word in line, f"{word!r} not in: {line}"
    return line

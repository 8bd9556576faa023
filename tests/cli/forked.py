"""Run `kafka-balancer` many times fast: the client side of tests/cli/forkserver.py (a child per command,
forked from a server that imported the CLI once, limited to 1 GiB of address space and to a CPU time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cli.bounded import MEMORY_LIMIT, Run

SERVER = Path(__file__).with_name("forkserver.py")


class ForkServer:
    """The client side of tests/cli/forkserver.py."""

    def __init__(self, workdir: Path, timeout: float, cpu_seconds: int = 20) -> None:
        self.workdir = workdir
        self.timeout = timeout  # seconds of wall time one command may take: killed after it (code -9)
        self.cpu_seconds = cpu_seconds  # seconds of CPU one command may use: SIGXCPU after it (code -24)
        env = os.environ | {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER), str(MEMORY_LIMIT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=workdir,  # a command's default output (execute's state file and its lock) lands here
        )
        assert self.proc.stdout is not None
        assert json.loads(self.proc.stdout.readline()) == {"ready": True}

    def run(self, args: list[str]) -> Run:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        out, err = self.workdir / "stdout", self.workdir / "stderr"
        request = {
            "argv": args,
            "stdout": str(out),
            "stderr": str(err),
            "cpu": self.cpu_seconds,
            "timeout": self.timeout,
        }
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        read = {"encoding": "utf-8", "errors": "replace"}
        return Run(tuple(args), answer["code"], out.read_text(**read), err.read_text(**read), answer["seconds"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

"""The operator as its own process, started the way the image starts it (fixture ``start_operator``).

The command is the Dockerfile's ENTRYPOINT (without tini, PID 1 in the image) followed by its CMD,
with kopf's liveness endpoint on a free loopback port. Tests that must watch the operator from the
outside use it: one that kills it (test_operator_killed.py), one that checks it stays responsive
while it works on hostile input (a frozen process cannot answer its own test thread).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka_balancer.sandbox.ports import free_port
from kube_apiserver import LEASE_NAME, RELEASE_NAMESPACE
from processes import spawn, tail

REPO = Path(__file__).resolve().parents[2]


def image_command() -> list[str]:
    """The Dockerfile's ENTRYPOINT (without tini, PID 1 in the image) followed by its CMD."""
    forms = {}
    for line in (REPO / "Dockerfile").read_text().splitlines():
        word, _, rest = line.partition(" ")
        if word in {"ENTRYPOINT", "CMD"} and rest.lstrip().startswith("["):
            forms[word] = json.loads(rest)
    entrypoint = forms["ENTRYPOINT"]
    command: list[str] = entrypoint[entrypoint.index("--") + 1 :] + forms["CMD"]
    command[0] = str(Path(sys.executable).with_name(command[0]))  # the venv's kopf script
    return command


@dataclass
class OperatorProcess:
    proc: subprocess.Popen[bytes]
    log: Path
    health_port: int
    metrics_port: int

    @property
    def pid(self) -> int:
        return self.proc.pid

    def tail(self, lines: int = 40) -> str:
        return tail(self.log, lines)

    def get(self, path: str, timeout: float) -> int | None:
        """HTTP status of ``/healthz`` (kopf) or ``/metrics`` (ours) within ``timeout``; None when no answer."""
        port = self.metrics_port if path == "/metrics" else self.health_port
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as response:
                response.read()
                return int(response.status)
        except OSError:
            return None


def _session_members(sid: int) -> list[int]:
    """Processes whose session is ``sid`` (the operator is a session leader: its children are there too)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid:  # after "pid (comm)": state, ppid, pgrp, session
                found.append(int(entry.name))
    return found


@pytest.fixture
def start_operator(tmp_path: Path) -> Iterator[Callable[..., OperatorProcess]]:
    """Start the operator as the image does (:func:`operators`)."""
    with operators(tmp_path) as start:
        yield start


@contextlib.contextmanager
def operators(tmp_path: Path) -> Iterator[Callable[..., OperatorProcess]]:
    """Start the operator as the image does; on leaving none of them, nor any child, is left.

    ``reconcile_seconds``: its timer (1 s: progress reaches status at every reconciliation; long: the status
    changes only when the spec does, so a test can read a state the next tick would leave). ``extra_env``:
    more KAFKA_BALANCER_* settings (the Lease's, the clusters setting, ...)."""
    started: list[OperatorProcess] = []

    def start(
        kubeconfig: Path, extra_env: dict[str, str] | None = None, *, reconcile_seconds: float = 1
    ) -> OperatorProcess:
        health, metrics = free_port(), free_port()
        command = [a.replace("//0.0.0.0:8080/", f"//127.0.0.1:{health}/") for a in image_command()]
        assert any(f"127.0.0.1:{health}" in a for a in command), command  # loopback only
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_BALANCER_", "KUBERNETES_"))}
        env.update(
            KUBECONFIG=str(kubeconfig),
            HOME=str(tmp_path),
            KAFKA_BALANCER_METRICS_PORT=str(metrics),
            KAFKA_BALANCER_METRICS_ADDRESS="127.0.0.1",
            KAFKA_BALANCER_RECONCILE_SECONDS=f"{reconcile_seconds:g}",
            KAFKA_BALANCER_EXECUTION_POLL_SECONDS="0.2",
            KAFKA_BALANCER_KAFKA_TIMEOUT_SECONDS="10",
            KAFKA_BALANCER_LEASE_NAMESPACE=RELEASE_NAMESPACE,
            KAFKA_BALANCER_LEASE_NAME=LEASE_NAME,
        )
        env.update(extra_env or {})
        log = tmp_path / f"operator-{len(started) + 1}.log"
        proc = spawn(command, env=env, log=log, new_session=True)  # killed if pytest dies
        started.append(OperatorProcess(proc, log, health, metrics))
        return started[-1]

    try:
        yield start
    finally:
        _stop_all(started)


def _stop_all(started: list[OperatorProcess]) -> None:
    for op in started:
        if op.proc.poll() is None:
            op.proc.kill()
        op.proc.wait(timeout=30)
    # The Kafka worker processes' fork server (kafka.isolated) ends when it sees its operator gone, and its
    # workers with it: moments after the operator, not with it.
    deadline = time.monotonic() + 120  # a deadline poll: moments when idle, longer on a loaded machine
    while any(_session_members(op.pid) for op in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = {op.pid: {pid: _described(pid) for pid in _session_members(op.pid)} for op in started}
    for members in left.values():
        for pid in members:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert not any(left.values()), f"processes left behind by the operators (session: pid: what): {left}"


def _described(pid: int) -> str:
    """``ppid=N state=S: command line`` of a process, for a failure message."""
    with contextlib.suppress(OSError):
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
        command = (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        return f"ppid={fields[1]} state={fields[0]}: {command.strip()[:300]}"
    return "gone"

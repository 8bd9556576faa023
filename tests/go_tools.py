"""The users' own tools, built from their Go modules by `make gitops-tools prometheus-tools` (tools/):

- ``gitops-health``: Flux's kstatus, status poller, CEL health evaluator and `wait: true` check, and Argo CD's
  Lua health scripts in gopher-lua with Argo CD's VM setup (tools/gitops);
- ``promtool`` and ``prometheus`` from github.com/prometheus/prometheus, and ``promql-series``, Prometheus's
  PromQL parser listing the metrics an expression reads (tools/prometheus).

A missing binary fails the test with the make target that builds it, never skips it.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml
from kafka_balancer.sandbox.ports import free_port
from processes import spawn, stop, tail

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / "build" / "tools" / "bin"
TARGETS = {
    "gitops-health": "gitops-tools",
    "promtool": "prometheus-tools",
    "prometheus": "prometheus-tools",
    "promql-series": "prometheus-tools",
}


def tool(name: str) -> Path:
    path = BIN / name
    if not path.exists():
        raise RuntimeError(f"{path} is not built: run `make {TARGETS[name]}` (tools/, see the Makefile)")
    return path


def run(
    name: str, args: Sequence[str | Path], *, stdin: str = "", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a tool; its exit code is the caller's to judge (promtool exits 1 on a failing check)."""
    return subprocess.run(
        [str(tool(name)), *map(str, args)], input=stdin, capture_output=True, text=True, timeout=timeout, check=False
    )


def promql_series(exprs: Sequence[str]) -> list[dict[str, Any]]:
    """Prometheus's parser on each expression: {"expr", "metrics"} or {"expr", "error"}."""
    done = run("promql-series", [], stdin=json.dumps(list(exprs)))
    assert done.returncode == 0, done.stderr
    result: list[dict[str, Any]] = json.loads(done.stdout)
    return result


class Prometheus:
    """A real Prometheus server (``prometheus`` from tools/prometheus) on a free loopback port, its data in
    ``workdir``: :meth:`alerts` reads its API. Started by :func:`prometheus_server`, which stops it."""

    def __init__(self, workdir: Path, config: dict[str, Any]) -> None:
        self.workdir = workdir
        self.config = config
        self.url = ""
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Prometheus:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "prometheus.yml"
        config.write_text(yaml.safe_dump(self.config, sort_keys=False))
        address = f"127.0.0.1:{free_port()}"
        self.url = f"http://{address}"
        command = [
            str(tool("prometheus")),
            f"--config.file={config}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            f"--web.listen-address={address}",
            "--log.level=warn",
        ]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.workdir)}
        self.proc = spawn(command, env=env, log=self.workdir / "prometheus.log")
        deadline = time.monotonic() + 60
        while not self._ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"prometheus did not start:\n{self.log()}")
            time.sleep(0.2)
        return self

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:  # noqa: S310 - loopback
                return bool(response.status == 200)
        except OSError:
            return False

    def api(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}", timeout=10) as response:  # noqa: S310 - loopback
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def alerts(self, name: str) -> list[dict[str, Any]]:
        """The alert's instances Prometheus holds now (pending or firing), with labels and annotations."""
        return [a for a in self.api("alerts")["alerts"] if a["labels"]["alertname"] == name]

    def log(self) -> str:
        return tail(self.workdir / "prometheus.log")

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)


@contextlib.contextmanager
def prometheus_server(workdir: Path, config: dict[str, Any]) -> Iterator[Prometheus]:
    server = Prometheus(workdir, config)
    try:
        yield server.start()
    finally:
        server.stop()

"""The operator's reconcile on bench.real_scale's dense cluster, and its memory.

The real operator runs as the image runs it (``kopf run -m kafka_balancer.controller.operator``, its own
process) against the sandbox's Kubernetes API emulator with the project's CRDs; a Manual BalancePolicy
names the dense cluster. Measured: from applying the policy to its status reading ``ProposalReady``
(reconciles that read the whole cluster, plan it and store the proposal), and the operator process's
CPU time and peak resident memory (/proc: VmHWM) at that moment.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafka_balancer.cli.demo_kubectl import PLURALS, Kubectl
from kafka_balancer.sandbox.kube import KubeClient, kube_api_server
from kafka_balancer.sandbox.ports import free_port

from bench.real_scale_runs import Measured

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "kafka"
GROUP_VERSION = "kafkabalancer.io/v1alpha1"


def reconcile(bootstrap: str, folder: Path, timeout_s: float = 3600.0) -> tuple[Measured, dict[str, Any]]:
    """The operator's first proposal for the cluster: seconds, CPU and peak memory, and the proposal status."""
    with kube_api_server() as kube:
        client = KubeClient(kube.url, timeout=60)
        kubeconfig = kube.write_kubeconfig(folder / "kubeconfig", NAMESPACE)
        Kubectl(client, kubeconfig).apply_directory(ROOT / "crds")
        with _operator(kubeconfig, folder / "operator.log") as proc:
            policy = {
                "apiVersion": GROUP_VERSION,
                "kind": "BalancePolicy",
                "metadata": {"name": "dense", "namespace": NAMESPACE},
                "spec": {"mode": "Manual", "cluster": {"bootstrapServers": bootstrap}},
            }
            cpu_before = _cpu_seconds(proc.pid)
            started = time.monotonic()
            client.create(policy, PLURALS["BalancePolicy"])
            while True:
                status = client.get(GROUP_VERSION, "balancepolicies", NAMESPACE, "dense").get("status") or {}
                if status.get("state") == "ProposalReady" and status.get("proposal"):
                    break
                if status.get("state") == "Stalled":
                    stalled = next((c for c in status.get("conditions", []) if c.get("type") == "Stalled"), {})
                    why = f"{stalled.get('reason')}: {stalled.get('message')}"
                    raise SystemExit(f"the operator refused the cluster: {why}")
                if proc.poll() is not None or time.monotonic() - started > timeout_s:
                    raise SystemExit(f"no proposal from the operator (status {status}); see {folder / 'operator.log'}")
                time.sleep(1.0)
            seconds = time.monotonic() - started
            measured = Measured(seconds, _cpu_seconds(proc.pid) - cpu_before, _peak_rss_mb(proc.pid), "")
    return measured, dict(status["proposal"])


@contextlib.contextmanager
def _operator(kubeconfig: Path, log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    health = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_BALANCER_")}
    env.update(
        KUBECONFIG=str(kubeconfig),
        KAFKA_BALANCER_METRICS_PORT=str(free_port()),
        KAFKA_BALANCER_METRICS_ADDRESS="127.0.0.1",
        KAFKA_BALANCER_KAFKA_TIMEOUT_SECONDS="120",  # a dense cluster's reads take their time on a loaded machine
    )
    command = [sys.executable, "-m", "kopf", "run", "--standalone", f"--namespace={NAMESPACE}"]
    command += [f"--liveness=http://127.0.0.1:{health}/healthz", "-m", "kafka_balancer.controller.operator"]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while not _healthy(health):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the operator did not come up; see {log_path}")
            time.sleep(0.5)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
            return True
    except OSError:
        return False


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0

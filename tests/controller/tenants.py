"""What the operator tests of issue 55 share: the real API server as several tenants use it, operator
processes started as the image starts them, and the emulator's own record of what reached Kafka.

What reached the emulated controller is tests/submissions.py's fixture ``submissions``.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.sandbox.kube import KubeClient, KubeError
from prometheus_client.parser import text_string_to_metric_families

from .operator_process import OperatorProcess

API = "kafkabalancer.io/v1alpha1"


def spread_model(*, brokers: int = 6, partitions: int = 12, size: float = 10e6, name: str = "spread") -> ClusterModel:
    """Every partition on brokers 1-3, brokers 4-6 empty: a plan moves many replicas onto 4-6."""
    builder = ClusterBuilder(cluster_name=name)
    for b in range(1, brokers + 1):
        builder.add_broker(b, rack=f"rack-{'abc'[(b - 1) % 3]}")
    builder.set_topic("orders")
    for p in range(partitions):
        builder.add_partition("orders", p, [1 + (p + k) % 3 for k in range(3)], size_bytes=size)
    return builder.build()


def namespace(client: KubeClient, name: str) -> None:
    try:
        client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, "namespaces")
    except KubeError as err:
        if err.code != 409:
            raise


def policy(client: KubeClient, ns: str, name: str, spec: dict[str, Any]) -> None:
    client.create(
        {"apiVersion": API, "kind": "BalancePolicy", "metadata": {"name": name, "namespace": ns}, "spec": spec},
        "balancepolicies",
    )


def approve(client: KubeClient, ns: str, name: str, proposal_id: str | None, manager: str = "kubectl-patch") -> None:
    """``kubectl patch --type merge --field-manager MANAGER``: spec.approvedProposal set (None: withdrawn)."""
    client.merge_patch(
        API, "balancepolicies", ns, name, {"spec": {"approvedProposal": proposal_id}}, field_manager=manager
    )


def spec_patch(client: KubeClient, ns: str, name: str, spec: dict[str, Any]) -> None:
    client.merge_patch(API, "balancepolicies", ns, name, {"spec": spec})


def status(client: KubeClient, ns: str, name: str) -> dict[str, Any]:
    return dict(client.get(API, "balancepolicies", ns, name).get("status") or {})


def condition(client: KubeClient, ns: str, name: str, kind: str) -> dict[str, Any]:
    return next((c for c in status(client, ns, name).get("conditions", []) if c["type"] == kind), {})


def events(client: KubeClient, ns: str, name: str, reason: str | None = None) -> list[dict[str, Any]]:
    found = [e for e in client.items("v1", "events", ns) if (e.get("involvedObject") or {}).get("name") == name]
    return [e for e in found if reason is None or e.get("reason") == reason]


def wait(what: str, probe: Callable[[], Any], ops: Sequence[OperatorProcess] = (), timeout: float = 60.0) -> Any:
    """Poll ``probe`` until it is truthy; fail at once when an operator process that should run has exited."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        for op in ops:
            if op.proc.poll() is not None:
                pytest.fail(f"the operator exited ({op.proc.returncode}) waiting for {what}:\n{op.tail()}")
        last = probe()
        if last:
            return last
        time.sleep(0.1)
    logs = "\n".join(f"--- operator pid {op.pid} ---\n{op.tail()}" for op in ops)
    pytest.fail(f"timed out after {timeout}s waiting for {what}; last probe: {last!r}\n{logs}")


def reconciliations(op: OperatorProcess) -> float:
    """kafka_balancer_reconciliations_total over every policy, from the operator's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{op.metrics_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "kafka_balancer_reconciliations_total"
    )


def executing_midway(client: KubeClient, bootstrap: str, ops: Sequence[OperatorProcess], moves_per_broker: int) -> Any:
    """The Manual policy ``kafka/main`` for the cluster at ``bootstrap`` (3 MB/s, ``moves_per_broker``), its
    proposal approved once ready; returns the proposal once the execution is midway: some partitions done,
    not all."""
    execution = {"throttleBytesPerSec": 3_000_000, "concurrentMovesPerBroker": moves_per_broker}
    policy(
        client, "kafka", "main", {"cluster": {"bootstrapServers": bootstrap}, "mode": "Manual", "execution": execution}
    )
    proposal = wait("a proposal", lambda: status(client, "kafka", "main").get("proposal"), ops)
    approve(client, "kafka", "main", proposal["id"])

    def midway() -> bool:
        progress = status(client, "kafka", "main").get("progress") or {}
        return 0 < progress.get("partitionsDone", 0) < progress.get("partitionsTotal", 0)

    wait("the execution midway", midway, ops, timeout=120)
    return proposal

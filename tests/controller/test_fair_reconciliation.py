"""One tenant's broken policies do not starve another's (controller/admission.py, issue 55).

Before: with 40 policies in one namespace naming clusters that never answered, a healthy policy in
another namespace took 171 s to propose and 296 s from ``spec.paused: true`` to no reassignment left:
every reconciliation ran in one small thread pool, and the broken ones held it for a Kafka request
timeout each. Now a cluster whose servers refuse the connection is Stalled/ClusterUnreachable without a
Kafka client; reconciliations that talk to Kafka share bounded slots fairly between namespaces; and a
policy whose execution runs in this operator is reconciled (paused, stopped, deleted) without a slot.

The clusters of the tenant ``noisy`` are silent (they accept the connection, answer ApiVersions and
never Metadata, as a hung broker does) or refuse it. The operator's Kafka request timeout is 120 s
here, so a silent cluster's policy cannot have a status before that: the healthy policy proposing,
executing, pausing and being deleted while none of them has a status shows that it waited for none of
them, whatever the machine's speed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hostile_kafka import unanswering_clusters
from kafka_balancer.sandbox import EmulatedCluster
from kafka_balancer.sandbox.kube import KubeError
from kafka_balancer.sandbox.ports import free_port_range
from kube_apiserver import POLICY_NAMESPACE, kube_apiserver

from .operator_process import OperatorProcess
from .tenants import API, approve, condition, namespace, policy, spec_patch, spread_model, status, wait

pytestmark = pytest.mark.timeout(300)

NOISY = "noisy"
SILENT, REFUSING = 20, 20


def test_a_tenants_unanswering_clusters_delay_no_other_tenants_policy(
    emulator: Callable[..., EmulatedCluster], start_operator: Callable[..., OperatorProcess], tmp_path: Path
) -> None:
    kafka = emulator(spread_model(partitions=12), time_scale=1.0)
    with unanswering_clusters(SILENT) as silent, kube_apiserver(tmp_path / "api") as api:
        client = api.client("admin")
        namespace(client, NOISY)
        op = start_operator(
            api.write_kubeconfig(tmp_path / "kubeconfig", user="operator"),
            {"KAFKA_BALANCER_KAFKA_TIMEOUT_SECONDS": "120", "KAFKA_BALANCER_RECONCILE_CONCURRENCY": "4"},
        )
        # Nothing listens there. Consecutive ports, all free now: ports drawn one by one can repeat, and two
        # policies naming one address are DuplicateCluster, not ClusterUnreachable.
        first = free_port_range(REFUSING)
        refusing = [f"127.0.0.1:{first + k}" for k in range(REFUSING)]
        for i, servers in enumerate((*silent, *refusing)):
            policy(client, NOISY, f"broken-{i}", {"cluster": {"bootstrapServers": servers}, "mode": "Manual"})

        def silent_with_status() -> list[dict[str, Any]]:
            found = (status(client, NOISY, f"broken-{i}") for i in range(SILENT))
            return [s for s in found if s.get("conditions")]  # reconciled (the server defaults an empty one)

        def refusing_reconciled() -> list[dict[str, Any]]:
            found = [condition(client, NOISY, f"broken-{i}", "Stalled") for i in range(SILENT, SILENT + REFUSING)]
            return found if all(found) else []

        stalled = wait("the refusing clusters' policies reconciled", refusing_reconciled, [op], timeout=90)
        assert {(c["status"], c["reason"]) for c in stalled} == {("True", "ClusterUnreachable")}, stalled
        assert all("Connection refused" in c["message"] for c in stalled), stalled

        execution = {"throttleBytesPerSec": 1_000_000, "concurrentMovesPerBroker": 2}
        spec = {"cluster": {"bootstrapServers": kafka.bootstrap_servers}, "mode": "Manual", "execution": execution}
        policy(client, POLICY_NAMESPACE, "main", spec)
        proposal = wait("a proposal", lambda: status(client, POLICY_NAMESPACE, "main").get("proposal"), [op], 90)
        approve(client, POLICY_NAMESPACE, "main", proposal["id"])

        def moving() -> bool:
            with kafka.state.lock:
                return bool(kafka.state.reassigning)

        wait("moves in flight", moving, [op], timeout=90)
        spec_patch(client, POLICY_NAMESPACE, "main", {"paused": True})

        def stopped() -> dict[str, Any] | None:
            last = status(client, POLICY_NAMESPACE, "main").get("lastRun") or {}
            return last if last.get("result") else None

        last = wait("the paused execution to end", stopped, [op], timeout=90)
        assert last["result"] == "Stopped", last
        assert "Paused" in last["message"], last
        with kafka.state.lock:
            assert not kafka.state.reassigning, "no reassignment of the paused execution is left"

        client.delete(API, "balancepolicies", POLICY_NAMESPACE, "main")

        def deleted() -> bool:
            try:
                client.get(API, "balancepolicies", POLICY_NAMESPACE, "main")
            except KubeError as err:
                return err.code == 404
            return False

        wait("the policy deleted", deleted, [op], timeout=90)
        early = silent_with_status()
        assert not early, f"a silent cluster's reconciliation ended before the healthy policy's work: {early[0]}"

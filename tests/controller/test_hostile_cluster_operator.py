"""One tenant's policy names a server that speaks Kafka and lists partition 2147483647 (tests/hostile_kafka.py);
another tenant's policy executes beside it. Through the operator process on the real API server (issue 55).

Before: the operator read that cluster, started sampling it (the policy's own sample store), and died
with SIGSEGV inside librdkafka's list_offsets one second later; restarted, it died again, and every
tenant's executions died with it. Now the metadata is refused before any of it is used (the policy is
Stalled/InvalidClusterMetadata, naming the partition), and the operator serves the other tenant to the end.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hostile_kafka import hostile_server
from kafka_balancer.sandbox import EmulatedCluster
from kube_apiserver import KubeApiserver, kube_apiserver

from .operator_process import OperatorProcess
from .tenants import approve, condition, namespace, policy, spread_model, status, wait

pytestmark = pytest.mark.timeout(240)


def test_a_cluster_whose_metadata_would_crash_the_client_stalls_its_policy_only(
    emulator: Callable[..., EmulatedCluster], start_operator: Callable[..., OperatorProcess], tmp_path: Path
) -> None:
    healthy = emulator(spread_model(partitions=6), time_scale=20.0)
    with hostile_server("partition-index-int32-max") as hostile, kube_apiserver(tmp_path / "api") as api:
        client = api.client("admin")
        namespace(client, "tenant")
        op = start_operator(api.write_kubeconfig(tmp_path / "kubeconfig", user="operator"))
        policy(
            client,
            "tenant",
            "probe",
            {
                "cluster": {"bootstrapServers": hostile.bootstrap_servers},
                "mode": "DryRun",
                # Its own sample store: sampling reads every partition's log-end offset (list_offsets).
                "analysis": {"samples": str(tmp_path / "samples"), "intervalSeconds": 1},
            },
        )
        policy(client, "kafka", "main", {"cluster": {"bootstrapServers": healthy.bootstrap_servers}, "mode": "Manual"})

        stalled = wait(
            "the hostile policy Stalled",
            lambda: (c := condition(client, "tenant", "probe", "Stalled")).get("status") == "True" and c,
            [op],
        )
        assert stalled["reason"] == "InvalidClusterMetadata", stalled
        assert "partitions must be numbered 0..1, got [0, 2147483647]" in stalled["message"]

        proposal = wait(
            "a proposal for the healthy policy", lambda: status(client, "kafka", "main").get("proposal"), [op]
        )
        approve(client, "kafka", "main", proposal["id"])
        last = wait(
            "the healthy policy's execution to complete",
            lambda: (status(client, "kafka", "main").get("lastRun") or {}).get("result") == "Completed",
            [op],
            timeout=120,
        )
        assert last
        assert op.proc.poll() is None, "the operator process still runs, the same one"
        assert condition(client, "tenant", "probe", "Stalled")["reason"] == "InvalidClusterMetadata"
        _nothing_sampled(tmp_path / "samples")
        _assert_no_restart(api, op)


def _nothing_sampled(store: Path) -> None:
    assert not list(store.rglob("*.parquet")), "nothing of that cluster's answers is stored"


def _assert_no_restart(api: KubeApiserver, op: OperatorProcess) -> None:
    """One operator process served both tenants from the start (its Lease was never taken over)."""
    leases: list[dict[str, Any]] = api.client("admin").items("coordination.k8s.io/v1", "leases", "kafka-balancer")
    assert len(leases) == 1
    assert leases[0]["spec"].get("leaseTransitions", 0) == 0
    assert f"-{op.pid}-" in leases[0]["spec"]["holderIdentity"]

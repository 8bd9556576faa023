"""Who may claim a Kafka cluster (controller/claims.py, docs/security.md), on the real API server (issue 55).

Before: a policy created first in another namespace for the same bootstrap servers (no credentials needed
on a plaintext listener) made the legitimate policy Stalled/DuplicateCluster. With the operator's
``clusters`` setting listing the cluster for namespace ``kafka``, the squatter in ``squat`` is
Stalled/ClusterNotAllowed, never connects there, blocks no one, and the legitimate policy proposes.

The one-policy-per-cluster rule reads kopf's index of every policy, kept from the watch: the operator's
requests (the API server's audit log) list policies once, at the start, not once per reconciliation.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka_balancer.sandbox import EmulatedCluster
from kube_apiserver import kube_apiserver

from .operator_process import OperatorProcess
from .tenants import condition, namespace, policy, reconciliations, spread_model, status, wait

pytestmark = pytest.mark.timeout(240)


def test_a_squatter_in_another_namespace_claims_nothing_and_blocks_no_one(
    emulator: Callable[..., EmulatedCluster], start_operator: Callable[..., OperatorProcess], tmp_path: Path
) -> None:
    kafka = emulator(spread_model(partitions=6), time_scale=20.0)
    clusters = [{"bootstrapServers": kafka.bootstrap_servers, "namespaces": ["kafka"]}]
    with kube_apiserver(tmp_path / "api") as api:
        client = api.client("admin")
        namespace(client, "squat")
        op = start_operator(
            api.write_kubeconfig(tmp_path / "kubeconfig", user="operator"),
            {"KAFKA_BALANCER_CLUSTERS": json.dumps(clusters)},
        )
        # Created first, naming one of the cluster's servers, as a tenant with no right to it would.
        one_server = kafka.bootstrap_servers.split(",")[0]
        policy(client, "squat", "mine", {"cluster": {"bootstrapServers": one_server}, "mode": "DryRun"})
        squat = wait(
            "the squatter Stalled",
            lambda: (c := condition(client, "squat", "mine", "Stalled")).get("status") == "True" and c,
            [op],
        )
        assert squat["reason"] == "ClusterNotAllowed", squat
        assert "only namespace(s) kafka claim it" in squat["message"]
        policy(client, "kafka", "main", {"cluster": {"bootstrapServers": kafka.bootstrap_servers}, "mode": "Manual"})

        proposal = wait(
            "the legitimate policy's proposal", lambda: status(client, "kafka", "main").get("proposal"), [op]
        )
        assert proposal["moves"] > 0
        assert condition(client, "kafka", "main", "Stalled").get("status") == "False"
        assert "observedCluster" not in status(client, "squat", "mine"), "the squatter never read the cluster"

        reconciled = reconciliations(op)
        wait("ten more reconciliations", lambda: reconciliations(op) >= reconciled + 10, [op])
        lists = [c for c in api.calls("operator") if c.resource == "balancepolicies" and c.verb == "list"]
        assert len(lists) <= 2, f"the operator listed every policy {len(lists)} times: {lists}"

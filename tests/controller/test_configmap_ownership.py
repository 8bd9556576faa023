"""The operator never takes over a ConfigMap it did not create (issue 37, item 14).

A ConfigMap named like a policy's proposal (``<policy>-proposal``) may already exist, created by a
person or another tool. Writing the proposal into it would replace their keys and add an
ownerReference to the policy, so deleting the policy would make the garbage collector delete their
ConfigMap. The operator must leave it as it is and say why (Stalled, ConfigMapConflict).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kafka_balancer.sandbox import EmulatedCluster

from .conftest import Cluster, Operator, policy_manifest
from .test_e2e import skewed_model

pytestmark = pytest.mark.timeout(120)


def _policy(bootstrap: str) -> dict[str, Any]:
    return policy_manifest("main", {"cluster": {"bootstrapServers": bootstrap}, "mode": "Manual"})


def test_an_existing_configmap_of_the_proposal_name_is_left_alone(
    kube: Cluster, operator: Operator, emulator: Callable[..., EmulatedCluster]
) -> None:
    cluster = emulator(skewed_model(), time_scale=10.0)
    theirs = {"metadata": {"name": "main-proposal", "labels": {"team": "payments"}}, "data": {"owner": "payments"}}
    kube.core.create_namespaced_config_map("kafka", theirs)
    kube.apply(_policy(cluster.bootstrap_servers))

    def settled() -> dict[str, Any] | None:
        if (kube.policy("main").get("status") or {}).get("proposal"):
            found = kube.core.read_namespaced_config_map("main-proposal", "kafka")
            owners = found.metadata.owner_references
            pytest.fail(f"the operator took the ConfigMap over: {sorted(found.data)}, owners {owners}")
        cond = kube.condition("main", "Stalled")
        return cond if cond and cond["status"] == "True" else None

    stalled = kube.wait_for("Stalled", settled, timeout=60)
    assert stalled["reason"] == "ConfigMapConflict"
    assert "ConfigMap kafka/main-proposal exists and is not owned by BalancePolicy kafka/main" in stalled["message"]
    assert not (kube.policy("main").get("status") or {}).get("proposal")
    found = kube.core.read_namespaced_config_map("main-proposal", "kafka")
    assert found.data == {"owner": "payments"}, "their keys are untouched"
    assert not found.binary_data
    assert not found.metadata.owner_references, "no ownerReference: deleting the policy cannot delete it"
    assert found.metadata.labels == {"team": "payments"}

    # Once they move it away, the policy proposes into a ConfigMap of its own.
    kube.core.delete_namespaced_config_map("main-proposal", "kafka")
    proposal = kube.wait_for("a proposal", lambda: (kube.policy("main").get("status") or {}).get("proposal"))
    owners = kube.core.read_namespaced_config_map(proposal["configMap"], "kafka").metadata.owner_references
    assert [(o.kind, o.name, o.uid) for o in owners] == [
        ("BalancePolicy", "main", kube.policy("main")["metadata"]["uid"])
    ]
    assert kube.condition("main", "Stalled")["status"] == "False"  # type: ignore[index]

"""Invalid specs end in Stalled=True with a reason naming the problem (real kopf against kmock)."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Cluster

pytestmark = pytest.mark.timeout(120)


def _policy(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"cluster": {"bootstrapServers": f"{name}.invalid:9092"}, "mode": "Manual"}
    body.update(spec)
    return {"apiVersion": "kafkabalancer.io/v1alpha1", "kind": "BalancePolicy", "metadata": {"name": name}, "spec": body}


def _group(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kafkabalancer.io/v1alpha1", "kind": "ResourceGroup", "metadata": {"name": name}, "spec": spec}


def _stalled(kube: Cluster, name: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        cond = kube.condition(name, "Stalled")
        return cond if cond and cond["status"] == "True" else None

    cond: dict[str, Any] = kube.wait_for(f"{name} Stalled", probe)
    return cond


def test_invalid_specs_are_stalled_with_a_reason(kube: Cluster, operator: Any) -> None:
    kube.apply(_group("payments", {"brokers": {"ids": [1, 2]}}))
    kube.apply(_group("analytics", {"brokers": {"ids": [2, 3]}}))
    kube.apply(_policy("overlap", resourceGroups=["payments", "analytics"]))
    kube.apply(_policy("unknown", resourceGroups=["payments", "nope"]))
    kube.apply(_policy("throttle", execution={"throttleBytesPerSec": -10}))
    kube.apply(
        _policy(
            "nosecret",
            cluster={
                "bootstrapServers": "nosecret.invalid:9093",
                "securityProtocol": "SASL_SSL",
                "saslMechanism": "SCRAM-SHA-512",
                "credentialsSecret": {"name": "kafka-creds"},
            },
        )
    )
    kube.apply(_policy("badcron", triggers={"schedule": "61 * * * *"}))

    overlap = _stalled(kube, "overlap")
    assert overlap["reason"] == "OverlappingResourceGroups"
    assert "broker 2 is in two groups: 'payments' and 'analytics'" in overlap["message"]
    unknown = _stalled(kube, "unknown")
    assert unknown["reason"] == "UnknownResourceGroup" and "'nope'" in unknown["message"]
    throttle = _stalled(kube, "throttle")
    assert throttle["reason"] == "InvalidSpec"
    assert "spec.execution.throttleBytesPerSec" in throttle["message"] and "-10" in throttle["message"]
    nosecret = _stalled(kube, "nosecret")
    assert nosecret["reason"] == "MissingSecret" and "kafka/kafka-creds" in nosecret["message"]
    badcron = _stalled(kube, "badcron")
    assert badcron["reason"] == "InvalidSpec" and "minute" in badcron["message"]

    for name in ("overlap", "unknown", "throttle", "nosecret"):
        status = kube.policy(name)["status"]
        assert status["state"] == "Stalled"
        assert status["observedGeneration"] == 1
        assert kube.condition(name, "Ready")["status"] == "False"  # type: ignore[index]
        assert "proposal" not in status or status["proposal"] is None
    # A Warning event tells `kubectl describe` readers the same.
    kube.wait_for("an event", lambda: [e for e in kube.events("overlap") if e.get("type") == "Warning"])

    # Fixing the spec clears Stalled: the groups no longer overlap, so the policy moves on (to the cluster).
    kube.custom.patch_namespaced_custom_object(
        "kafkabalancer.io", "v1alpha1", "kafka", "resourcegroups", "analytics", {"spec": {"brokers": {"ids": [3]}}}
    )
    kube.wait_for(
        "overlap no longer stalled on groups",
        lambda: (kube.condition("overlap", "Stalled") or {}).get("reason") != "OverlappingResourceGroups",
    )


def test_a_second_policy_for_the_same_cluster_is_refused(kube: Cluster, operator: Any) -> None:
    kube.apply(_policy("first", cluster={"bootstrapServers": "shared.invalid:9092"}))
    kube.apply(_policy("second", cluster={"bootstrapServers": "other.invalid:9092,shared.invalid:9092"}))
    cond = _stalled(kube, "second")
    assert cond["reason"] == "DuplicateCluster"
    assert "kafka/first" in cond["message"]
    assert (kube.condition("first", "Stalled") or {}).get("reason") != "DuplicateCluster"


def test_resource_group_status_reports_its_own_validity(kube: Cluster, operator: Any) -> None:
    kube.apply(_group("good", {"brokers": {"racks": ["r1"]}}))
    kube.apply(_group("bad", {"brokers": {"ids": [1], "racks": ["r1"]}}))

    def ready(name: str) -> str | None:
        conds = (kube.get("resourcegroups", name).get("status") or {}).get("conditions", [])
        return next((c["status"] for c in conds if c["type"] == "Ready"), None)

    kube.wait_for("good Ready", lambda: ready("good") == "True")
    kube.wait_for("bad not Ready", lambda: ready("bad") == "False")

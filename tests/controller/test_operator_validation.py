"""Invalid specs end in Stalled=True with a reason naming the problem (real kopf against kmock)."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable
from typing import Any

import pytest
from emulator_fixtures import six_broker_model
from kafka_balancer.sandbox import EmulatedCluster

from .conftest import Cluster, Operator

pytestmark = pytest.mark.timeout(240)


INVALID = ("overlap", "unknown", "throttle", "nosecret", "badcron")
ALTER_PARTITION_REASSIGNMENTS, ELECT_LEADERS, INCREMENTAL_ALTER_CONFIGS = 45, 43, 44


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _policy(name: str, bootstrap: str | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"cluster": {"bootstrapServers": bootstrap or f"{name}.invalid:9092"}, "mode": "Manual"}
    body.update(spec)
    return {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BalancePolicy",
        "metadata": {"name": name},
        "spec": body,
    }


def _group(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "ResourceGroup",
        "metadata": {"name": name},
        "spec": spec,
    }


def _stalled(kube: Cluster, name: str, timeout: float = 30.0) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        cond = kube.condition(name, "Stalled")
        return cond if cond and cond["status"] == "True" else None

    cond: dict[str, Any] = kube.wait_for(f"{name} Stalled", probe, timeout=timeout)
    return cond


def test_invalid_specs_are_stalled_with_a_reason(
    kube: Cluster, operator: Operator, emulator: Callable[..., EmulatedCluster], no_unlisted_calls: None
) -> None:
    cluster = emulator(six_broker_model(), time_scale=10.0)
    # One broker address each: the same Kafka cluster, but no two policies share a bootstrap list.
    address = {name: f"127.0.0.1:{cluster.port_of(i + 1)}" for i, name in enumerate(INVALID)}
    kube.apply(_group("payments", {"brokers": {"ids": [1, 2]}}))
    kube.apply(_group("analytics", {"brokers": {"ids": [2, 3]}}))
    kube.apply(_policy("overlap", address["overlap"], resourceGroups=["payments", "analytics"]))
    kube.apply(_policy("unknown", address["unknown"], resourceGroups=["payments", "nope"]))
    kube.apply(_policy("throttle", address["throttle"], execution={"throttleBytesPerSec": -10}))
    sasl = {"securityProtocol": "SASL_SSL", "saslMechanism": "SCRAM-SHA-512", "credentialsSecret": {"name": "creds"}}
    kube.apply(_policy("nosecret", address["nosecret"], cluster={"bootstrapServers": address["nosecret"], **sasl}))
    kube.apply(_policy("badcron", address["badcron"], triggers={"schedule": "61 * * * *"}))
    kube.apply(_policy("unreachable", f"127.0.0.1:{_closed_port()}"))
    # 54 replicas on 6 brokers cannot fit 2 per broker: the hard goal replica-capacity is unsatisfiable.
    # (A cluster of its own: a policy that reached the cluster claims it, see the duplicate-cluster test.)
    small = emulator(dataclasses.replace(six_broker_model(), cluster_name="small"), time_scale=10.0)
    kube.apply(_policy("capacity", small.bootstrap_servers, goals={"maxReplicasPerBroker": 2}))

    overlap = _stalled(kube, "overlap")
    assert overlap["reason"] == "OverlappingResourceGroups"
    assert "broker 2 is in two groups: 'payments' and 'analytics'" in overlap["message"]
    unknown = _stalled(kube, "unknown")
    assert unknown["reason"] == "UnknownResourceGroup"
    assert "'nope'" in unknown["message"]
    throttle = _stalled(kube, "throttle")
    assert throttle["reason"] == "InvalidSpec"
    assert "spec.execution.throttleBytesPerSec" in throttle["message"]
    assert "-10" in throttle["message"]
    nosecret = _stalled(kube, "nosecret")
    assert nosecret["reason"] == "MissingSecret"
    assert "kafka/creds" in nosecret["message"]
    badcron = _stalled(kube, "badcron")
    assert badcron["reason"] == "InvalidSpec"
    assert "minute" in badcron["message"]
    # Reported once a request timed out: the operator's request timeout (30 s, tests/controller/conftest.py).
    unreachable = _stalled(kube, "unreachable", timeout=90)
    assert unreachable["reason"] == "ClusterUnreachable"
    assert "spec.cluster.bootstrapServers 127.0.0.1:" in unreachable["message"]

    capacity = _stalled(kube, "capacity")
    assert capacity["reason"] == "UnsatisfiableGoal"
    assert "replica-capacity" in capacity["message"]

    for name in (*INVALID, "unreachable", "capacity"):
        status = kube.policy(name)["status"]
        assert status["state"] == "Stalled"
        assert status["observedGeneration"] == 1
        assert kube.condition(name, "Ready")["status"] == "False"  # type: ignore[index]
        assert status.get("proposal") is None
    # A Warning event tells `kubectl describe` readers the same.
    kube.wait_for("an event", lambda: [e for e in kube.events("overlap") if e.get("type") == "Warning"])
    # The cluster is untouched: no reassignment, no leader election, no config change.
    for api_key in (ALTER_PARTITION_REASSIGNMENTS, ELECT_LEADERS, INCREMENTAL_ALTER_CONFIGS):
        assert cluster.request_count(api_key) == 0
        assert small.request_count(api_key) == 0

    # Fixing the spec clears Stalled: the groups no longer overlap, so the policy proposes.
    kube.custom.patch_namespaced_custom_object(
        "kafkabalancer.io", "v1alpha1", "kafka", "resourcegroups", "analytics", {"spec": {"brokers": {"ids": [3]}}}
    )
    kube.wait_for("overlap to propose", lambda: (kube.policy("overlap").get("status") or {}).get("proposal"))
    assert kube.condition("overlap", "Stalled")["status"] == "False"  # type: ignore[index]
    assert kube.condition("overlap", "Ready")["status"] == "True"  # type: ignore[index]
    assert cluster.request_count(ALTER_PARTITION_REASSIGNMENTS) == 0  # Manual, not approved


def test_a_second_policy_for_the_same_cluster_is_refused(
    kube: Cluster, operator: Operator, emulator: Callable[..., EmulatedCluster]
) -> None:
    cluster = emulator(six_broker_model(), time_scale=10.0)
    first, other = f"127.0.0.1:{cluster.port_of(1)}", f"127.0.0.1:{cluster.port_of(2)}"
    kube.apply(_policy("first", first))
    kube.wait_for("first to reach its cluster", lambda: (kube.policy("first").get("status") or {}).get("proposal"))
    # Refused on the bootstrap list before connecting, and on the cluster id when the address differs.
    kube.apply(_policy("second", f"other.invalid:9092,{first}"))
    kube.apply(_policy("third", other))
    for name in ("second", "third"):
        cond = _stalled(kube, name)
        assert cond["reason"] == "DuplicateCluster"
        assert "kafka/first" in cond["message"]
    assert kube.condition("first", "Stalled")["status"] == "False"  # type: ignore[index]


def test_resource_group_status_reports_its_own_validity(kube: Cluster, operator: Operator) -> None:
    kube.apply(_group("good", {"brokers": {"racks": ["r1"]}}))
    kube.apply(_group("bad", {"brokers": {"ids": [1], "racks": ["r1"]}}))

    def ready(name: str) -> str | None:
        conds = (kube.get("resourcegroups", name).get("status") or {}).get("conditions", [])
        return next((c["status"] for c in conds if c["type"] == "Ready"), None)

    kube.wait_for("good Ready", lambda: ready("good") == "True")
    kube.wait_for("bad not Ready", lambda: ready("bad") == "False")

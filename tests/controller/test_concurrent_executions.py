"""Every approved execution runs at once, however many policies there are (issue 37, item 11).

Executions wait on Kafka most of the time. With a pool of four worker threads, a fifth approved
policy showed Executing while its executor waited for a free thread, and deleting it waited up to
120 s for an execution that had not started. Here five policies, each with its own Kafka cluster,
are approved together: all five must have reassignments in flight in their clusters together, and
deleting one stops its execution at once (moves cancelled, throttles removed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import kubernetes
import pytest
from kafka_balancer.sandbox import EmulatedCluster

from .conftest import GROUP, VERSION, Cluster, Operator, policy_manifest
from .test_e2e import skewed_model

pytestmark = pytest.mark.timeout(240)

POLICIES = 6


def _policy(name: str, bootstrap: str) -> dict[str, Any]:
    # Slow on purpose: one move per broker at a time, 10 MB at 1 MB/s of emulated time (real time here):
    # each execution lasts minutes, so none frees its thread for another.
    execution = {"throttleBytesPerSec": 1_000_000, "concurrentMovesPerBroker": 1}
    return policy_manifest(name, {"cluster": {"bootstrapServers": bootstrap}, "mode": "Auto", "execution": execution})


def _moving(cluster: EmulatedCluster) -> bool:
    with cluster.state.lock:
        return bool(cluster.state.reassigning)


def _throttled(cluster: EmulatedCluster) -> bool:
    with cluster.state.lock:
        return any("leader.replication.throttled.rate" in b.configs for b in cluster.state.brokers.values())


def test_every_approved_execution_runs_at_once_and_stops_at_once(
    kube: Cluster, operator: Operator, emulator: Callable[..., EmulatedCluster]
) -> None:
    # Six clusters (a cluster id each: one policy per cluster).
    models = {f"p{i}": dataclasses.replace(skewed_model(), cluster_name=f"skewed-{i}") for i in range(POLICIES)}
    clusters = {name: emulator(model, time_scale=1.0) for name, model in models.items()}
    for name, cluster in clusters.items():
        kube.apply(_policy(name, cluster.bootstrap_servers))

    def all_moving() -> bool:
        return all(_moving(c) for c in clusters.values())

    waiting = []
    try:
        kube.wait_for("reassignments in flight in every cluster at once", all_moving, timeout=60)
    except AssertionError:
        waiting = [name for name, c in clusters.items() if not _moving(c)]
    states = {name: (kube.policy(name).get("status") or {}).get("state") for name in clusters}
    assert not waiting, f"approved executions not running: {waiting}; policy states {states}"

    last = f"p{POLICIES - 1}"
    kubernetes.client.CustomObjectsApi(kube.api).delete_namespaced_custom_object(
        GROUP, VERSION, "kafka", "balancepolicies", last
    )

    def gone() -> bool:
        return not [p for p in kube.server.objects("balancepolicies") if p["metadata"]["name"] == last]

    # At once: the defect this guards against held the deletion for 120 s (an execution waiting for a
    # free thread); a correct stop takes a few requests, far within the deadline on a busy machine too.
    kube.wait_for("the deleted policy to go", gone, timeout=60)
    assert not _moving(clusters[last]), "its in-flight moves are cancelled"
    assert not _throttled(clusters[last]), "its throttles are removed"
    assert all(_moving(c) for name, c in clusters.items() if name != last), "the others run on"

"""Every approved execution runs at once, however many policies there are (issue 37, item 11).

Executions wait on Kafka most of the time. With a pool of four worker threads, a fifth approved
policy showed Executing while its executor waited for a free thread, and deleting it waited up to
120 s for an execution that had not started. Here five policies, each with its own Kafka cluster,
are approved together: each must have submitted its first moves while all of them are still
Executing, and deleting one stops its execution at once (moves cancelled, throttles removed) while the
others go on.

An execution moves in waves (one move per broker at a time): between a wave's end and the next poll's
submissions its cluster has nothing in flight for a moment, and on a busy machine those moments of six
clusters overlap. So the test asks whether each execution has started and not ended, never whether
six clusters happen to be moving at one instant.
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

pytestmark = pytest.mark.timeout(360)

POLICIES = 6


def _policy(name: str, bootstrap: str) -> dict[str, Any]:
    # Slow on purpose: one move per broker at a time, 10 MB at 0.5 MB/s of emulated time (real time here):
    # each execution lasts over three minutes (7 waves of about 40 s), so none frees its thread for another.
    execution = {"throttleBytesPerSec": 500_000, "concurrentMovesPerBroker": 1}
    return policy_manifest(name, {"cluster": {"bootstrapServers": bootstrap}, "mode": "Auto", "execution": execution})


def _moving(cluster: EmulatedCluster) -> bool:
    with cluster.state.lock:
        return bool(cluster.state.reassigning)


def _finished(cluster: EmulatedCluster) -> int:
    with cluster.state.lock:
        return len(cluster.state.completed)


def _moves_seen(cluster: EmulatedCluster) -> int:
    """Moves submitted so far: those finished and those in flight."""
    with cluster.state.lock:
        return len(cluster.state.completed) + len(cluster.state.reassigning)


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

    def all_started() -> bool:
        return all(_moves_seen(c) for c in clusters.values())

    started = True
    try:
        kube.wait_for("every execution's first moves", all_started, timeout=90)
    except AssertionError:
        started = False
    states = {name: (kube.policy(name).get("status") or {}).get("state") for name in clusters}
    waiting = [name for name, c in clusters.items() if not _moves_seen(c)]
    assert started, f"approved executions not running: {waiting}; policy states {states}"
    # Each lasts minutes: one that ended before the last one started ran before it, not beside it.
    assert set(states.values()) == {"Executing"}, f"every execution runs at once: {states}"

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
    others = {name: c for name, c in clusters.items() if name != last}
    before = {name: _finished(c) for name, c in others.items()}
    went_on: set[str] = set()

    def others_go_on() -> bool:
        # Sticky: each cluster only has to be seen moving (or to finish a move) once after the deletion.
        went_on.update(n for n, c in others.items() if _moving(c) or _finished(c) > before[n])
        return went_on == set(others)

    kube.wait_for("the other executions to go on", others_go_on, timeout=60)

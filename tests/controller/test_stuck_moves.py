"""Stuck moves are shown (issue 37, item 19): a move that copies nothing for `stuckAfterSeconds` is
counted and named in `status.progress`, counted by `kafka_balancer_execution_stuck_moves`, and
announced by a `MovesStuck` event; once it copies again it leaves all three, and the run completes.
The real operator (kopf) against the emulated Kubernetes API and the Kafka emulator, whose
``stick_reassignment`` stops a reassignment's copy as a broker with a broken fetcher would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kafka_balancer.sandbox import EmulatedCluster

from .conftest import Cluster, Operator
from .test_e2e import _groups, _policy, _status, skewed_model

pytestmark = pytest.mark.timeout(180)

STUCK_METRIC = "kafka_balancer_execution_stuck_moves"


def _in_flight(cluster: EmulatedCluster) -> list[tuple[str, int]]:
    with cluster.state.lock:
        return sorted(cluster.state.reassigning)


def test_a_move_that_copies_nothing_is_reported_stuck_then_recovers(
    kube: Cluster, operator: Operator, emulator: Callable[..., EmulatedCluster]
) -> None:
    cluster = emulator(skewed_model(), time_scale=2.0)
    _groups(kube)
    policy = _policy("main", cluster.bootstrap_servers, mode="Auto")
    policy["spec"]["execution"] = {
        "throttleBytesPerSec": 4_000_000,
        "concurrentMovesPerBroker": 1,
        "stuckAfterSeconds": 1,
    }
    kube.apply(policy)
    # Hold every move that is in flight: nothing copies, nothing finishes.
    held = kube.wait_for("moves in flight", lambda: _in_flight(cluster), timeout=60, interval=0.05)
    for topic, partition in held:
        cluster.stick_reassignment(topic, partition)
    names = {f"{topic}-{partition}" for topic, partition in held}

    def reported() -> dict[str, Any] | None:
        progress = _status(kube, "main").get("progress") or {}
        return progress if progress.get("stuckMoves", 0) >= len(held) else None

    progress = kube.wait_for("the held moves reported stuck", reported, timeout=60)
    assert progress["stuckMoves"] == len(held)
    assert set(progress["stuck"]) == names
    assert operator.metric(STUCK_METRIC, policy="main", namespace="kafka") == len(held)
    stuck_events = [e for e in kube.events("main") if e.get("reason") == "MovesStuck"]
    assert stuck_events
    assert stuck_events[0]["type"] == "Warning"
    assert all(name in " ".join(e["message"] for e in stuck_events) for name in names)
    assert "stuckAfterSeconds (1s)" in stuck_events[0]["message"]
    assert _status(kube, "main")["state"] == "Executing"  # reported, not cancelled (cancelStuck is off)

    for topic, partition in held:
        cluster.stick_reassignment(topic, partition, stuck=False)

    def completed() -> dict[str, Any] | None:
        status = _status(kube, "main")
        return status if (status.get("lastRun") or {}).get("result") == "Completed" else None

    status = kube.wait_for("the run to complete", completed, timeout=120)
    assert status["progress"]["stuckMoves"] == 0
    assert status["progress"]["stuck"] == []
    assert operator.metric(STUCK_METRIC, policy="main", namespace="kafka") == 0

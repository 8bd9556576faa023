"""Approval in Manual mode beyond the happy path (issue 37, item 21): an approval withdrawn while its
execution runs, and an approval naming a proposal that was valid once but has been replaced since.
The real operator (kopf) against the emulated Kubernetes API and the Kafka emulator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kafka_balancer.sandbox import EmulatedCluster

from .conftest import Cluster, Operator
from .test_e2e import (
    ALTER_PARTITION_REASSIGNMENTS,
    _groups,
    _policy,
    _proposal,
    _reconciliations,
    _some_moves_done,
    _status,
    skewed_model,
)

pytestmark = pytest.mark.timeout(180)


def _manual_slow(kube: Cluster, bootstrap: str) -> None:
    """A Manual policy "main" whose execution is slow on purpose (one move per broker at 4 MB/s)."""
    _groups(kube)
    policy = _policy("main", bootstrap, mode="Manual")
    policy["spec"]["execution"] = {"throttleBytesPerSec": 4_000_000, "concurrentMovesPerBroker": 1}
    kube.apply(policy)


def _ready(kube: Cluster) -> dict[str, Any]:
    found: dict[str, Any] = kube.wait_for(
        "a proposal", lambda: (s := _status(kube, "main")).get("state") == "ProposalReady" and s["proposal"]
    )
    return found


def test_withdrawing_the_approval_mid_run_stops_the_execution_cleanly(
    kube: Cluster, operator: Operator, emulator: Callable[..., EmulatedCluster]
) -> None:
    cluster = emulator(skewed_model(), time_scale=5.0)
    _manual_slow(kube, cluster.bootstrap_servers)
    proposal = _ready(kube)
    kube.patch_policy("main", {"approvedProposal": proposal["id"]})
    kube.wait_for("the first completed moves", lambda: _some_moves_done(kube), timeout=60)

    kube.patch_policy("main", {"approvedProposal": None})

    def stopped() -> dict[str, Any] | None:
        last = _status(kube, "main").get("lastRun") or {}
        return last if last.get("result") == "Stopped" else None

    last = kube.wait_for("the execution to stop", stopped, timeout=60)
    assert last["message"] == "ApprovalWithdrawn"
    assert last["proposalId"] == proposal["id"]
    with cluster.state.lock:
        assert not cluster.state.reassigning, "in-flight moves are cancelled"
        assert not any("throttled" in k for b in cluster.state.brokers.values() for k in b.configs)
        assert not any("throttled" in k for t in cluster.state.topics.values() for k in t.configs)
    # Nothing runs without an approval: no more submissions, and a proposal for what is left.
    submitted = cluster.request_count(ALTER_PARTITION_REASSIGNMENTS)
    seen = _reconciliations(operator, "main")
    kube.wait_for("two more reconciliations", lambda: _reconciliations(operator, "main") >= seen + 2)
    assert cluster.request_count(ALTER_PARTITION_REASSIGNMENTS) == submitted
    assert "approvedProposal" not in kube.policy("main")["spec"]
    assert "ExecutionStopped" in {e.get("reason") for e in kube.events("main")}


def test_an_approval_of_a_proposal_replaced_since_is_refused_and_nothing_runs(
    kube: Cluster, operator: Operator, emulator: Callable[..., EmulatedCluster]
) -> None:
    cluster = emulator(skewed_model(), time_scale=5.0)
    _manual_slow(kube, cluster.bootstrap_servers)
    first = _ready(kube)
    # The goals change: the proposal that was reviewed is replaced by another one.
    kube.patch_policy("main", {"goals": {"balanceThreshold": 1.05}})
    second = kube.wait_for(
        "a new proposal", lambda: (p := _proposal(kube, "main")).get("id") not in (None, first["id"]) and p
    )

    kube.patch_policy("main", {"approvedProposal": first["id"]})

    stale = kube.wait_for(
        "StaleApproval", lambda: (c := kube.condition("main", "Stalled")) and c["reason"] == "StaleApproval" and c
    )
    assert first["id"] in stale["message"]
    assert second["id"] in stale["message"]
    seen = _reconciliations(operator, "main")
    kube.wait_for("two more reconciliations", lambda: _reconciliations(operator, "main") >= seen + 2)
    assert cluster.request_count(ALTER_PARTITION_REASSIGNMENTS) == 0
    assert (_status(kube, "main").get("lastRun") or {}).get("proposalId") is None

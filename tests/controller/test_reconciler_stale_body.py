"""A reconciliation that starts from a body older than the status the previous one returned.

kopf writes the status a handler returns after the handler (and our per-policy lock) is done, so a
timer that was waiting on the lock can reconcile from a body in which the execution that has just
finished still looks unfinished. The operator must neither resume that execution nor start its proposal
again. Here the interleaving is made by hand: the real Reconciler, the real Kubernetes client against
kmock, the real Kafka clients against the emulator over TCP, the real planner and executor; the bodies a
late timer could see are read from the API at the moments it could have read them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka_balancer.controller.kubeapi import KubeApi
from kafka_balancer.controller.reconcile import Outcome, Reconciler, ReconcilerOptions
from kafka_balancer.controller.services import AdapterConnector, ModulePlanner, Runs
from kafka_balancer.executor import ExecutionState
from kafka_balancer.metrics import Metrics
from kafka_balancer.sandbox import EmulatedCluster
from prometheus_client import CollectorRegistry

from .conftest import Cluster
from .test_e2e import ALTER_PARTITION_REASSIGNMENTS, _groups, _policy, skewed_model

pytestmark = pytest.mark.timeout(120)

KEY = ("kafka", "main")


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def reconciler(kube: Cluster, registry: CollectorRegistry) -> Iterator[Reconciler]:
    """The Reconciler wired as the operator wires it (controller/operator.py), without kopf around it."""
    api = KubeApi.from_environment()  # the kube fixture points KUBECONFIG at kmock
    runs = Runs()
    reconciler = Reconciler(
        kube=api,
        connector=AdapterConnector(3.0),
        planner=ModulePlanner(),
        runs=runs,
        metrics=Metrics(registry),
        options=ReconcilerOptions(execution_poll_seconds=0.05),
    )
    try:
        yield reconciler
    finally:
        runs.detach_all()
        api.close()


def _reconcile(kube: Cluster, reconciler: Reconciler, body: dict[str, Any]) -> Outcome:
    """One reconciliation, its status then written the way the operator's kopf handler writes it."""
    outcome = reconciler.reconcile(body)
    status = outcome.status.model_dump(mode="json", by_alias=True, exclude={"execution_checkpoint"})
    reconciler.kube.patch_policy_status(*KEY, status)
    return outcome


def _checkpoint_state(body: dict[str, Any]) -> ExecutionState | None:
    text = (body.get("status") or {}).get("executionCheckpoint")
    return ExecutionState(json.loads(text).get("state", "Pending")) if text else None


def _moved_bytes_total(registry: CollectorRegistry) -> float:
    """kafka_balancer_moved_bytes_total of policy main, as a scrape would read it."""
    return sum(
        sample.value
        for family in registry.collect()
        for sample in family.samples
        if sample.name == "kafka_balancer_moved_bytes_total" and sample.labels.get("policy") == "main"
    )


def test_a_late_reconciliation_from_an_old_body_neither_resumes_nor_repeats_the_finished_execution(
    kube: Cluster, reconciler: Reconciler, registry: CollectorRegistry, emulator: Callable[..., EmulatedCluster]
) -> None:
    cluster = emulator(skewed_model(), time_scale=20.0)
    _groups(kube)
    policy = _policy("main", cluster.bootstrap_servers, mode="Auto")
    policy["spec"]["execution"] = {"throttleBytesPerSec": 4_000_000, "concurrentMovesPerBroker": 1}
    kube.apply(policy)

    started = _reconcile(kube, reconciler, kube.policy("main"))
    assert ("Normal", "ExecutionStarted") in {(kind, reason) for kind, reason, _ in started.events}
    run = reconciler.runs.get(KEY)
    assert run is not None
    assert run.future is not None

    # What a late timer could have read while the execution ran: an unfinished checkpoint, no lastRun.
    in_flight = kube.wait_for(
        "an unfinished checkpoint in status",
        lambda: (b := kube.policy("main")) and (state := _checkpoint_state(b)) is not None and not state.finished and b,
    )
    assert "lastRun" not in in_flight["status"]
    result = run.future.result(timeout=90)
    assert result.state == ExecutionState.COMPLETED
    # ... and after it ended, before the reconciliation that reports it: a finished checkpoint, no lastRun.
    ended = kube.policy("main")
    assert _checkpoint_state(ended) == ExecutionState.COMPLETED
    assert "lastRun" not in ended["status"]

    finished = _reconcile(kube, reconciler, ended)
    assert finished.status.last_run is not None
    assert finished.status.last_run.result == "Completed"
    proposal_id = finished.status.last_run.proposal_id
    moved = finished.status.last_run.bytes_moved
    assert moved > 0
    assert _moved_bytes_total(registry) == moved
    requests = cluster.request_count(ALTER_PARTITION_REASSIGNMENTS)

    for stale in (in_flight, ended):
        late = _reconcile(kube, reconciler, stale)
        assert reconciler.runs.get(KEY) is None, "the finished execution was started again"
        reasons = {reason for _, reason, _ in late.events}
        assert not reasons & {"ExecutionResumed", "ExecutionStarted"}, reasons
        assert late.status.last_run == finished.status.last_run
        assert late.status.state == "Completed"
        assert late.status.proposal is not None
        assert late.status.proposal.id == proposal_id

    assert cluster.request_count(ALTER_PARTITION_REASSIGNMENTS) == requests
    assert _moved_bytes_total(registry) == moved
    status = kube.policy("main")["status"]
    assert status["lastRun"]["result"] == "Completed"
    assert status["lastRun"]["proposalId"] == proposal_id

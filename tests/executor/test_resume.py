"""An executor that dies mid-execution, against the emulator over TCP: the next one resumes from
the store (in-flight moves adopted, completed ones never submitted again, throttles cleaned), or
`abandon` ends it from the record alone. Submissions are counted at the emulator's controller."""

from __future__ import annotations

import pytest
from kafka_balancer.executor import (
    ExecutionConflictError,
    ExecutionState,
    Executor,
    ExecutorOptions,
    MemoryExecutionStore,
    Progress,
    abandon,
)
from kafka_balancer.model import PartitionTarget, ReassignmentPlan

from executor.harness import assignment, cluster_model, leftover_throttles, observe, spread_plan


class Crash(BaseException):
    """Raised from the progress callback: the executor dies there, as under SIGKILL, without
    running any clean-up (BaseException, so no ``except Exception`` on the way catches it)."""


def _crash_when(done: int) -> object:
    def on_progress(p: Progress) -> None:
        if p.partitions_done >= done and p.partitions_in_progress > 0:
            raise Crash

    return on_progress


def test_killed_executor_resumes_without_resubmitting_and_cleans_throttles(emulator, connect, submissions) -> None:
    model = cluster_model(brokers=7, used=4, partitions={"orders": 30, "audit": 10}, size=10e6)
    cluster = emulator(model)
    observer = observe(cluster)
    plan = spread_plan(model, onto=[5, 6, 7], every=1, reorder_every=0)
    store = MemoryExecutionStore()
    options = ExecutorOptions(throttle_bytes_per_sec=10_000_000, poll_interval_seconds=0.5)
    clock = cluster

    first = Executor(connect(cluster), plan, store, options, clock=clock, on_progress=_crash_when(10))
    with pytest.raises(Crash):
        first.run()
    # The dead executor left moves in flight and throttles set, and its record says so.
    saved = store.load()
    assert saved is not None
    assert saved["state"] == "MovingReplicas"
    in_flight = {(t, p) for t, p, *_ in saved["inFlight"]}
    assert in_flight
    assert in_flight <= set(cluster.state.reassigning)
    assert leftover_throttles(cluster)
    cluster.advance(30)  # time passes while nobody runs: some of those moves finish meanwhile
    submitted_before = dict(submissions.moves)

    second = Executor(connect(cluster), plan, store, options, clock=clock)
    result = second.run()
    assert result.state is ExecutionState.COMPLETED, result.reason
    # Each partition was submitted exactly once over both runs; the second run adopted the moves
    # the first had started and submitted only the ones never started.
    assert all(n == 1 for n in submissions.moves.values()), submissions.moves
    assert set(submissions.moves) == {(t.topic, t.partition) for t in plan.partitions}
    assert result.submitted == len(plan) - len(submitted_before)
    after = assignment(cluster)
    for t in plan.partitions:
        replicas, isr, leader = after[(t.topic, t.partition)]
        assert replicas == list(t.replicas)
        assert sorted(isr) == sorted(t.replicas)
        assert leader == t.replicas[0]
    assert leftover_throttles(cluster) == {}
    assert observer.violations == []
    assert store.load()["state"] == "Completed"
    # Bytes count across both runs, including moves that finished while no executor ran.
    copied = sum(p.size_bytes for p in model.partitions() if (p.topic, p.partition) in submissions.moves)
    assert result.progress.bytes_moved == result.progress.bytes_total == copied


def test_abandon_after_a_crash_cancels_recorded_moves_and_removes_throttles(emulator, connect, submissions) -> None:
    model = cluster_model(brokers=6, used=3, partitions={"orders": 24}, size=20e6)
    cluster = emulator(model)
    observer = observe(cluster)
    plan = spread_plan(model, onto=[4, 5, 6])
    store = MemoryExecutionStore()
    options = ExecutorOptions(throttle_bytes_per_sec=5_000_000, poll_interval_seconds=0.5)
    with pytest.raises(Crash):
        Executor(connect(cluster), plan, store, options, clock=cluster, on_progress=_crash_when(3)).run()
    in_flight = {(t, p) for t, p, *_ in store.load()["inFlight"]}
    assert in_flight

    record = abandon(connect(cluster), store)
    assert record is not None
    assert record.state is ExecutionState.STOPPED
    assert not cluster.state.reassigning
    for topic, p in in_flight:
        assert submissions.cancels[(topic, p)] == 1
        assert cluster.partition_view(topic, p)[0] == list(model.partition(model.partition_index(topic, p)).replicas)
    assert leftover_throttles(cluster) == {}
    assert observer.violations == []
    saved = store.load()
    assert saved["state"] == "Stopped"
    assert saved["inFlight"] == []
    assert saved["throttles"]["brokers"] == {}


def test_an_unfinished_execution_of_another_plan_is_refused(emulator, connect) -> None:
    model = cluster_model(brokers=5, used=3, partitions={"orders": 12}, size=20e6)
    cluster = emulator(model)
    plan = spread_plan(model, onto=[4, 5])
    store = MemoryExecutionStore()
    options = ExecutorOptions(throttle_bytes_per_sec=5_000_000, poll_interval_seconds=0.5)
    with pytest.raises(Crash):
        Executor(connect(cluster), plan, store, options, clock=cluster, on_progress=_crash_when(1)).run()
    other = ReassignmentPlan.of([PartitionTarget("orders", 11, (1, 2, 5))])
    with pytest.raises(ExecutionConflictError, match="unfinished execution of plan"):
        Executor(connect(cluster), other, store, options, clock=cluster).run()
    # Nothing was touched by the refused run: the first run's moves are still in flight.
    assert cluster.state.reassigning

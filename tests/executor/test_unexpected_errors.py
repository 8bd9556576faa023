"""An unexpected error at any point of a run, on the emulator (issue 52): the run winds down.

A bug (ours or a library's) raises an ordinary exception, neither a Kafka error nor a signal. Wherever it
strikes (before any of the run's calls to Kafka or saves of its record, in every stage), the executor
cancels its moves in flight and removes its throttles, and the run ends Failed with the error as its
reason; before the first save nothing was sent and the error is raised. The same on real brokers:
tests/realkafka/test_unexpected_errors_real.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka_balancer.executor import ExecutionResult, ExecutionState, Executor, ExecutorOptions
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.sandbox import EmulatedCluster, EmulatorOptions

from executor.harness import assignment, cluster_model, leftover_throttles, spread_plan
from executor.injection import FaultyPort, FaultyStore, InjectedError, Points

MODEL = cluster_model(brokers=6, used=3, partitions={"orders": 6}, size=4e6)
# Half the partitions move a replica onto a new broker that then leads; the other half only change order.
PLAN = spread_plan(MODEL, onto=[4, 5, 6], every=2, reorder_every=2, lead_new=True)
OPTIONS = ExecutorOptions(throttle_bytes_per_sec=2_000_000, poll_interval_seconds=0.5)
ORIGINAL = {(p.topic, p.partition): list(p.replicas) for p in MODEL.partitions()}
TARGET = {(t.topic, t.partition): list(t.replicas) for t in PLAN.partitions}


@dataclass
class Outcome:
    result: ExecutionResult | None  # None: the error was raised out of run()
    running: list[Any]
    throttles: dict[str, dict[str, str]]
    replicas: dict[tuple[str, int], list[int]]


def _run(points: Points) -> Outcome:
    with EmulatedCluster.start(MODEL, options=EmulatorOptions(time_scale=0)) as cluster:
        adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=3))
        try:
            executor = Executor(FaultyPort(adapter, points), PLAN, FaultyStore(points), OPTIONS, clock=cluster)  # type: ignore[arg-type]
            try:
                result: ExecutionResult | None = executor.run()
            except InjectedError:
                result = None
        finally:
            adapter.close()
        with cluster.state.lock:
            running = sorted(cluster.state.reassigning)
        replicas = {key: view[0] for key, view in assignment(cluster).items()}
        return Outcome(result, running, leftover_throttles(cluster), replicas)


def test_an_unexpected_error_at_any_point_winds_the_run_down_and_leaves_nothing_behind() -> None:
    clean = Points()
    outcome = _run(clean)
    assert outcome.result is not None
    assert outcome.result.state is ExecutionState.COMPLETED, outcome.result.reason
    assert {state for state, _ in clean.seen} >= {"Pending", "MovingReplicas", "ElectingLeaders"}
    assert len(clean.seen) > 30, clean.seen

    with_throttles = 0
    for at in range(len(clean.seen)):
        points = Points(fail_at=at)
        outcome = _run(points)
        where = f"fault before point {at} {points.raised}"
        assert points.raised is not None, where
        if outcome.result is None:
            # Raised out of run() only before the record was first saved: nothing was sent yet.
            assert points.raised[0] == "-", where
        else:
            assert outcome.result.state is ExecutionState.FAILED, where
            assert outcome.result.reason.startswith("unexpected error: InjectedError: injected"), (
                where,
                outcome.result.reason,
            )
        assert outcome.running == [], f"{where}: reassignments left running: {outcome.running}"
        assert outcome.throttles == {}, f"{where}: throttles left: {outcome.throttles}"
        for key, replicas in outcome.replicas.items():
            assert sorted(replicas) in (sorted(ORIGINAL[key]), sorted(TARGET.get(key, ORIGINAL[key]))), (where, key)
        with_throttles += points.raised_throttled
    # Most faults struck while throttles were set: the wind-down had them to remove.
    assert with_throttles > len(clean.seen) // 2, with_throttles

"""An unexpected error at each point of a run on real Kafka 4.3.1 brokers (issue 52): the run winds down.

As tests/executor/test_unexpected_errors.py on the emulator, where every single point of a run is tried
in emulated time: here, in real time, polls repeat as often as the copies take, so each distinct point
(the record's state as last saved and the call) of a clean run is tried once, at its first occurrence.
The run ends Failed with the error as its reason (or raises before its first save, having sent nothing),
no reassignment of ours is left running, no throttle is left on a broker or topic, and every partition is
on its original or its target replicas.
"""

from __future__ import annotations

from executor.injection import FaultyPort, FaultyStore, InjectedError, Point, Points
from kafka_balancer.executor import ExecutionResult, ExecutionState, Executor, ExecutorOptions
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.model import PartitionTarget, ReassignmentPlan
from kafka_targets import no_throttle_left
from real_kafka import RealKafka

# Three partitions on brokers 1-3: one moves a replica onto broker 4, which then leads; one moves its
# follower onto broker 5; one only changes the order of its replicas (a leader change).
ORIGINAL = ((1, 2), (2, 3), (3, 1))
TARGET = ((4, 2), (2, 5), (1, 3))
RECORDS, RECORD_BYTES = 150, 10_000  # 1.5 MB per partition: each copy takes seconds at the throttle
OPTIONS = ExecutorOptions(throttle_bytes_per_sec=1_000_000, poll_interval_seconds=0.5)


def _run(kafka: RealKafka, topic: str, points: Points) -> ExecutionResult | None:
    kafka.create_topic(topic, ORIGINAL)
    kafka.produce(topic, partitions=range(len(ORIGINAL)), records_per_partition=RECORDS, record_bytes=RECORD_BYTES)
    plan = ReassignmentPlan.of([PartitionTarget(topic, p, t) for p, t in enumerate(TARGET)])
    adapter = KafkaAdapter(ConnectionSpec(kafka.bootstrap_servers))
    try:
        executor = Executor(FaultyPort(adapter, points), plan, FaultyStore(points), OPTIONS)  # type: ignore[arg-type]
        try:
            return executor.run()
        except InjectedError:
            return None
        finally:
            running = [tp for tp in adapter.list_reassignments() if tp.topic == topic]
            assert running == [], f"{topic} {points.raised}: reassignments left running: {running}"
    finally:
        adapter.close()


def _distinct(seen: list[Point]) -> list[Point]:
    return list(dict.fromkeys(seen))


def test_an_unexpected_error_at_each_point_of_a_run_on_real_kafka_leaves_nothing_behind(real_kafka: RealKafka) -> None:
    clean = Points()
    result = _run(real_kafka, "clean", clean)
    assert result is not None
    assert result.state is ExecutionState.COMPLETED, result.reason
    points = _distinct(clean.seen)
    assert {state for state, _ in points} >= {"Pending", "MovingReplicas", "ElectingLeaders"}, points
    no_throttle_left(real_kafka.throttle_leftovers)

    for i, point in enumerate(points):
        topic = f"fault-{i}"
        injected = Points(first_of=point)
        result = _run(real_kafka, topic, injected)
        where = f"{topic}: fault before {point}"
        assert injected.raised == point, f"{where}: the run never reached it ({_distinct(injected.seen)})"
        if result is None:
            assert point[0] == "-", f"{where}: raised out of run() after the record was saved"
        else:
            assert result.state is ExecutionState.FAILED, (where, result.reason)
            assert result.reason.startswith("unexpected error: InjectedError: injected"), (where, result.reason)
        no_throttle_left(real_kafka.throttle_leftovers)
        now = real_kafka.partitions()
        for p, (original, target) in enumerate(zip(ORIGINAL, TARGET, strict=True)):
            assert set(now[topic, p].replicas) in (set(original), set(target)), (where, p, now[topic, p])

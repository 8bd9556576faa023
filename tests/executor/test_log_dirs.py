"""JBOD execution against the emulator over TCP: one plan moves replicas between brokers into named log
directories and between a broker's own directories (AlterReplicaLogDirs), under both throttles, with
the same progress, stop, crash and resume as moves between brokers. Observed from the emulator's side."""

from __future__ import annotations

from typing import Any

import pytest
from kafka_balancer.executor import ExecutionState, Executor, ExecutorOptions, MemoryExecutionStore, Progress, abandon
from kafka_balancer.kafka.port import LOG_DIR_THROTTLE_RATE
from kafka_balancer.model import ClusterBuilder, ClusterModel, ModelError, PartitionTarget, ReassignmentPlan
from kafka_balancer.model.cluster import LogDir
from kafka_balancer.sandbox import EmulatedCluster
from kafka_balancer.sandbox.state import ClusterState

from executor.harness import leftover_throttles, observe

MB = 1_000_000
THROTTLED = ExecutorOptions(throttle_bytes_per_sec=20 * MB, poll_interval_seconds=0.5)


def _dir(b: int, k: str) -> str:
    return f"/kafka/broker-{b}/{k}"


def _model() -> ClusterModel:
    """4 brokers with directories a and b; every replica in a (the skewed directory), b empty."""
    builder = ClusterBuilder(cluster_name="jbod")
    for b in range(1, 5):
        builder.add_broker(b, rack=f"rack-{b % 2}", log_dirs=[LogDir(_dir(b, "a")), LogDir(_dir(b, "b"))])
    builder.set_topic("orders", min_insync_replicas=1)
    for p in range(6):
        replicas = [1 + p % 3, 1 + (p + 1) % 3]
        builder.add_partition("orders", p, replicas, size_bytes=40 * MB, log_dirs=[_dir(b, "a") for b in replicas])
    return builder.build()


def _plan() -> ReassignmentPlan:
    """orders-0..2: between the brokers' own directories (same replicas); orders-3..5: one replica moves
    to broker 4 into its directory b, and for orders-5 the other replica also changes directory."""
    return ReassignmentPlan.of([
        PartitionTarget("orders", 0, (1, 2), (_dir(1, "b"), "any")),
        PartitionTarget("orders", 1, (2, 3), (_dir(2, "b"), _dir(3, "b"))),
        PartitionTarget("orders", 2, (3, 1), ("any", _dir(1, "b"))),
        PartitionTarget("orders", 3, (1, 4), ("any", _dir(4, "b"))),
        PartitionTarget("orders", 4, (2, 4), ("any", _dir(4, "b"))),
        PartitionTarget("orders", 5, (3, 4), (_dir(3, "b"), _dir(4, "b"))),
    ])  # fmt: skip


def _dirs(cluster: EmulatedCluster) -> dict[tuple[str, int], tuple[list[int], dict[int, str], dict[int, str]]]:
    """Per partition: replicas, each replica's directory, and the destination of each copy between directories."""
    with cluster.state.lock:
        return {
            (p.topic, p.index): (list(p.replicas), dict(p.dirs), {b: f.path for b, f in p.future.items()})
            for p in cluster.state.rows
        }


class _DirThrottleSeen:
    def __init__(self) -> None:
        self.brokers: set[int] = set()

    def __call__(self, state: ClusterState) -> None:
        self.brokers |= {b for b, broker in state.brokers.items() if LOG_DIR_THROTTLE_RATE in broker.configs}


def _start(emulator: Any) -> tuple[EmulatedCluster, Any, _DirThrottleSeen]:
    cluster = emulator(_model())
    seen = _DirThrottleSeen()
    cluster.on_tick(seen)
    return cluster, observe(cluster), seen


def test_one_plan_moves_replicas_between_brokers_and_between_directories(emulator, connect) -> None:
    cluster, observer, seen = _start(emulator)
    plan = _plan()
    progress: list[Progress] = []

    result = Executor(connect(cluster), plan, MemoryExecutionStore(), THROTTLED, clock=cluster,
                      on_progress=progress.append).run()  # fmt: skip

    assert result.state is ExecutionState.COMPLETED, result.reason
    after = _dirs(cluster)
    for target in plan.partitions:
        replicas, dirs, future = after[(target.topic, target.partition)]
        assert replicas == list(target.replicas)
        assert future == {}
        for b, path in target.named_log_dirs.items():
            assert dirs[b] == path, (target, dirs)
    assert seen.brokers == {1, 2, 3}  # the brokers that copied between their own directories, throttled
    assert leftover_throttles(cluster) == {}
    assert observer.violations == []
    # 6 copies between directories (orders-0,1,1,2,5 and 5's broker 3) and 3 onto broker 4, 40 MB each.
    assert result.progress.bytes_total == result.progress.bytes_moved == 8 * 40 * MB
    assert any(0 < p.bytes_moved < 8 * 40 * MB for p in progress)  # measured as the copies ran
    received = {b.broker: (b.bytes_in_moved, b.bytes_in_total) for b in result.progress.brokers}
    assert received[1] == (80 * MB, 80 * MB)  # orders-0 and orders-2 moved between its directories
    assert received[4] == (120 * MB, 120 * MB)


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        (PartitionTarget("orders", 0, (1, 2), (_dir(2, "a"), "any")), ["'/kafka/broker-2/a' for broker 1", "log_dirs"]),
        (PartitionTarget("orders", 3, (1, 9), ("any", _dir(9, "a"))), ["for broker 9", "not known"]),
    ],
)
def test_a_directory_the_broker_lacks_is_refused_by_name_and_nothing_runs(
    emulator, connect, entry: PartitionTarget, words: list[str]
) -> None:
    cluster, _, _ = _start(emulator)
    before = _dirs(cluster)
    plan = ReassignmentPlan.of([entry, PartitionTarget("orders", 4, (2, 4), ("any", _dir(4, "b")))])
    with pytest.raises(ModelError) as refused:
        Executor(connect(cluster), plan, MemoryExecutionStore(), THROTTLED, clock=cluster).run()
    assert "plan: partitions[" in str(refused.value)
    for word in words:
        assert word in str(refused.value)
    cluster.advance(5)
    assert _dirs(cluster) == before
    assert leftover_throttles(cluster) == {}


def test_a_cordoned_directory_takes_no_replica_from_a_plan(emulator, connect) -> None:
    cluster, _, _ = _start(emulator)
    with cluster.state.lock:
        cluster.state.brokers[4].configs["cordoned.log.dirs"] = _dir(4, "b")
    plan = ReassignmentPlan.of([PartitionTarget("orders", 4, (2, 4), ("any", _dir(4, "b")))])
    with pytest.raises(ModelError, match=r"partitions\[0\] \(orders-4\): field 'log_dirs' names '/kafka/broker-4/b'"):
        Executor(connect(cluster), plan, MemoryExecutionStore(), THROTTLED, clock=cluster).run()


def _stop_when_copying(executor_box: list[Executor]) -> Any:
    def on_progress(p: Progress) -> None:
        if p.bytes_moved > 0 and p.partitions_in_progress > 0:
            executor_box[0].request_stop()

    return on_progress


def test_stop_cancels_copies_between_directories_and_removes_both_throttles(emulator, connect) -> None:
    cluster, observer, seen = _start(emulator)
    box: list[Executor] = []
    slow = ExecutorOptions(throttle_bytes_per_sec=2 * MB, poll_interval_seconds=0.5)
    executor = Executor(connect(cluster), _plan(), MemoryExecutionStore(), slow, clock=cluster,
                        on_progress=_stop_when_copying(box))  # fmt: skip
    box.append(executor)
    result = executor.run()

    assert result.state is ExecutionState.STOPPED, result.reason
    assert result.aborted
    cluster.advance(60)  # nothing copies on after the stop
    after = _dirs(cluster)
    for key, (replicas, dirs, future) in after.items():
        assert future == {}, key
        assert replicas == list(_model().partition(_model().partition_index(*key)).replicas), key
        if key in {("orders", int(t.split("-")[1])) for t in result.aborted}:
            assert set(dirs.values()) == {_dir(b, "a") for b in replicas}, (key, dirs)
    assert seen.brokers
    assert leftover_throttles(cluster) == {}
    assert observer.violations == []


class Crash(BaseException):
    """Raised from the progress callback: the executor dies there, without any clean-up."""


def _crash_when_copying(p: Progress) -> None:
    if p.bytes_moved > 20 * MB and p.partitions_in_progress > 0:
        raise Crash


def test_killed_mid_copy_resumes_to_the_named_directories_or_is_abandoned(emulator, connect) -> None:
    for ending in ("resume", "abandon"):
        cluster, observer, _ = _start(emulator)
        store = MemoryExecutionStore()
        slow = ExecutorOptions(throttle_bytes_per_sec=5 * MB, poll_interval_seconds=0.5)
        with pytest.raises(Crash):
            Executor(connect(cluster), _plan(), store, slow, clock=cluster, on_progress=_crash_when_copying).run()
        saved = store.load()
        assert saved is not None
        assert any(len(entry) == 7 for entry in saved["inFlight"])  # the directories of moves in flight are recorded
        assert saved["throttles"]["dirBrokers"]
        assert any(future for _, _, future in _dirs(cluster).values())
        if ending == "resume":
            result = Executor(connect(cluster), _plan(), store, slow, clock=cluster).run()
            assert result.state is ExecutionState.COMPLETED, result.reason
            for target in _plan().partitions:
                replicas, dirs, future = _dirs(cluster)[(target.topic, target.partition)]
                assert (replicas, future) == (list(target.replicas), {})
                assert all(dirs[b] == path for b, path in target.named_log_dirs.items()), dirs
        else:
            record = abandon(connect(cluster), store)
            assert record is not None
            assert record.state is ExecutionState.STOPPED
            cluster.advance(60)
            assert not any(future for _, _, future in _dirs(cluster).values())
            assert not cluster.state.reassigning
        assert leftover_throttles(cluster) == {}
        assert observer.violations == []
        cluster.close()


def test_a_directory_cordoned_during_the_run_ends_its_move_with_the_reason(emulator, connect) -> None:
    """Checked before the run, a directory may still be cordoned once the run has begun: Kafka then refuses
    the move into it (INVALID_REPLICA_ASSIGNMENT), the task is given up with that reason, the others finish."""
    cluster, observer, _ = _start(emulator)
    plan = ReassignmentPlan.of([
        PartitionTarget("orders", 0, (1, 2), (_dir(1, "b"), "any")),
        PartitionTarget("orders", 3, (1, 4), ("any", _dir(4, "b"))),
    ])  # fmt: skip

    def cordon_once_checked(p: Progress) -> None:  # the first progress: the plan was checked, nothing sent
        with cluster.state.lock:
            cluster.state.brokers[4].configs["cordoned.log.dirs"] = _dir(4, "b")

    result = Executor(connect(cluster), plan, MemoryExecutionStore(), THROTTLED, clock=cluster,
                      on_progress=cordon_once_checked).run()  # fmt: skip

    assert result.state is ExecutionState.FAILED
    assert result.completed == ["orders-0"]
    assert result.dead == {
        "orders-3": "log directory move refused: INVALID_REPLICA_ASSIGNMENT for orders-3: "
        "Replication assignment is invalid."
    }
    assert _dirs(cluster)[("orders", 3)][0] == [1, 2]  # nothing was started for it
    assert leftover_throttles(cluster) == {}
    assert observer.violations == []

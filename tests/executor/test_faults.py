"""Faults during an execution, against the emulator over TCP: a broker dies, a move sticks, someone
stops the run, a partition sits at its min ISR. "Nothing lost" is checked at every emulator tick."""

from __future__ import annotations

import time

from kafka_balancer.executor import (
    ExecutionState,
    Executor,
    ExecutorOptions,
    Limits,
    MemoryExecutionStore,
    Progress,
    abandon,
)
from kafka_balancer.kafka.port import FOLLOWER_THROTTLE_RATE, LEADER_THROTTLE_RATE
from kafka_balancer.model import ClusterBuilder, PartitionTarget, ReassignmentPlan

from executor.harness import assignment, cluster_model, leftover_throttles, observe, spread_plan


def test_broker_stopped_mid_execution_stalls_its_moves_only_and_the_run_finishes(emulator, connect) -> None:
    model = cluster_model(brokers=8, used=5, partitions={"orders": 48}, size=8e6)
    cluster = emulator(model)
    observer = observe(cluster, faulted={7})
    plan = spread_plan(model, onto=[6, 7, 8])
    polls_while_down: list[Progress] = []
    window: list[float] = []

    def fault(p: Progress) -> None:
        down = not cluster.state.brokers[7].alive
        if not down and p.partitions_done >= 6 and not window:
            window.append(cluster.state.clock)
            cluster.stop_broker(7)
        elif down:
            polls_while_down.append(p)
            if len(polls_while_down) == 40:
                window.append(cluster.state.clock)
                cluster.start_broker(7)

    options = ExecutorOptions(throttle_bytes_per_sec=10_000_000, poll_interval_seconds=0.5)
    result = Executor(connect(cluster), plan, MemoryExecutionStore(), options, clock=cluster, on_progress=fault).run()
    assert result.state is ExecutionState.COMPLETED, result.reason
    # While broker 7 was down (20 emulated seconds), moves onto it stalled and the others went on.
    onto_7 = {(t.topic, t.partition) for t in plan.partitions if 7 in t.replicas}
    during = [(t, p) for t, p, at in cluster.state.completed if window[0] < at < window[1]]
    assert during
    assert not [key for key in during if key in onto_7]
    assert polls_while_down[-1].partitions_done > polls_while_down[0].partitions_done
    after = assignment(cluster)
    for target in plan.partitions:
        assert after[(target.topic, target.partition)][0] == list(target.replicas)
    assert observer.violations == []
    assert leftover_throttles(cluster) == {}


def test_broker_that_stays_down_is_reported_exactly(emulator, connect) -> None:
    model = cluster_model(brokers=8, used=5, partitions={"orders": 48}, size=8e6)
    cluster = emulator(model)
    observer = observe(cluster, faulted={7})
    plan = spread_plan(model, onto=[6, 7, 8])

    def fault(p: Progress) -> None:
        if p.partitions_done >= 6 and cluster.state.brokers[7].alive:
            cluster.stop_broker(7)

    store = MemoryExecutionStore()
    port = connect(cluster)

    options = ExecutorOptions(
        throttle_bytes_per_sec=10_000_000,
        poll_interval_seconds=0.5,
        stuck_after_seconds=60,
        cancel_stuck=True,
        blocked_after_seconds=120,
    )
    result = Executor(port, plan, store, options, clock=cluster, on_progress=fault).run()
    assert result.state is ExecutionState.FAILED
    onto_7 = {f"{t.topic}-{t.partition}" for t in plan.partitions if 7 in t.replicas}
    dead = set(result.dead)
    # Exactly the moves onto the dead broker that had not finished are given up, each with a reason...
    assert dead
    assert dead <= onto_7
    assert set(result.completed) == {f"{t.topic}-{t.partition}" for t in plan.partitions} - dead
    reasons = set(result.dead.values())
    assert reasons <= {"stuck: no progress for 60s, reassignment cancelled", "not started: target broker 7 is offline"}
    assert "partitions not moved" in result.reason
    # ... and are back on their original replicas, nothing lost.
    after = assignment(cluster)
    for name in dead:
        topic, _, p = name.rpartition("-")
        assert after[(topic, int(p))][0] == list(model.partition(model.partition_index(topic, int(p))).replicas)
    assert observer.violations == []
    assert not cluster.state.reassigning
    # The rate on the dead broker cannot be removed while it is down: reported, kept in the record...
    assert leftover_throttles(cluster) == {
        "broker 7": {LEADER_THROTTLE_RATE: "10000000", FOLLOWER_THROTTLE_RATE: "10000000"}
    }
    assert "throttles not removed: broker 7" in result.reason
    assert list(store.load()["throttles"]["brokers"]) == ["7"]
    # ... and removed by the clean-up `kafka-balancer stop` runs, once the broker is back.
    cluster.start_broker(7)
    deadline = time.monotonic() + 20
    while store.load()["throttles"]["brokers"] and time.monotonic() < deadline:
        abandon(port, store)  # the client reconnects to the restarted broker within a few seconds
        time.sleep(0.2)
    assert leftover_throttles(cluster) == {}
    assert store.load()["throttles"]["brokers"] == {}


def test_stop_mid_execution_cancels_in_flight_moves_and_keeps_original_replicas(emulator, connect, submissions) -> None:
    model = cluster_model(brokers=7, used=4, partitions={"orders": 40}, size=10e6)
    cluster = emulator(model)
    observer = observe(cluster)
    plan = spread_plan(model, onto=[5, 6, 7])
    store = MemoryExecutionStore()

    def stop_later(p: Progress) -> None:
        if p.partitions_done >= 8:
            store.request_stop()

    options = ExecutorOptions(throttle_bytes_per_sec=10_000_000, poll_interval_seconds=0.5)
    executor = Executor(connect(cluster), plan, store, options, clock=cluster, on_progress=stop_later)
    result = executor.run()
    assert result.state is ExecutionState.STOPPED
    assert result.aborted, "some moves were in flight when the stop came"
    after = assignment(cluster)
    targets = {f"{t.topic}-{t.partition}": t for t in plan.partitions}
    for name in result.aborted:
        t = targets[name]
        original = model.partition(model.partition_index(t.topic, t.partition)).replicas
        assert after[(t.topic, t.partition)][0] == list(original)
        assert submissions.cancels[(t.topic, t.partition)] == 1
    for name in result.completed:
        t = targets[name]
        assert after[(t.topic, t.partition)][0] == list(t.replicas)
    for name in result.pending:  # never started: never submitted
        t = targets[name]
        assert (t.topic, t.partition) not in submissions.moves
    assert len(result.completed) >= 8
    assert not cluster.state.reassigning
    assert leftover_throttles(cluster) == {}
    assert observer.violations == []
    assert store.load()["state"] == "Stopped"


def test_partition_at_min_isr_is_never_touched(emulator, connect, submissions) -> None:
    b = ClusterBuilder()
    for i in range(1, 6):
        b.add_broker(i)
    b.set_topic("critical", min_insync_replicas=3)  # RF 3: the ISR is always at its minimum
    b.set_topic("orders", min_insync_replicas=2)
    for p in range(4):
        b.add_partition("critical", p, [1, 2, 3], size_bytes=5e6)
        b.add_partition("orders", p, [1, 2, 3], size_bytes=5e6)
    model = b.build()
    cluster = emulator(model)
    observer = observe(cluster)
    plan = ReassignmentPlan.of(
        [PartitionTarget(t, p, (1, 2, 4 + p % 2)) for t in ("critical", "orders") for p in range(4)]
    )
    options = ExecutorOptions(throttle_bytes_per_sec=10_000_000, poll_interval_seconds=1, blocked_after_seconds=600)
    result = Executor(connect(cluster), plan, MemoryExecutionStore(), options, clock=cluster).run()
    assert result.state is ExecutionState.FAILED
    assert sorted(result.dead) == [f"critical-{p}" for p in range(4)]
    # The emulator reports eligible leader replicas as Kafka 4.x does: none at min ISR.
    assert set(result.dead.values()) == {
        "not started: ISR size 3 is at or below min.insync.replicas=3 and no eligible leader replica (KIP-966)"
    }
    assert sorted(result.completed) == [f"orders-{p}" for p in range(4)]
    assert not any(topic == "critical" for topic, _ in submissions.moves)  # never submitted at all
    for p in range(4):
        assert cluster.partition_view("critical", p)[0] == [1, 2, 3]
    assert observer.violations == []


def test_under_replicated_partition_waits_until_it_recovers(emulator, connect, submissions) -> None:
    b = ClusterBuilder()
    for i in range(1, 6):
        b.add_broker(i)
    b.set_topic("orders", min_insync_replicas=2)
    b.add_partition("orders", 0, [1, 2, 3], isr=[1, 2], leader=1, size_bytes=50e6)  # broker 3 lags
    b.add_partition("orders", 1, [1, 2, 3], size_bytes=5e6)
    model = b.build()
    cluster = emulator(model)
    cluster.slow_broker(3, 1_000_000)  # broker 3 needs ~50 s to catch up on orders-0
    plan = ReassignmentPlan.of([PartitionTarget("orders", 0, (1, 2, 4)), PartitionTarget("orders", 1, (1, 2, 5))])
    blocked: list[dict[str, str]] = []
    options = ExecutorOptions(poll_interval_seconds=1)
    result = Executor(
        connect(cluster),
        plan,
        MemoryExecutionStore(),
        options,
        clock=cluster,
        on_progress=lambda p: blocked.append(dict(p.blocked)),
    ).run()
    assert result.state is ExecutionState.COMPLETED, result.reason
    assert any(
        "orders-0" in b and b["orders-0"].startswith("ISR size 2 is at or below min.insync.replicas=2") for b in blocked
    )
    # It was moved only once its ISR was whole again.
    assert submissions.isr_at_submit[("orders", 0)] == [[1, 2, 3]]
    assert cluster.partition_view("orders", 0)[0] == [1, 2, 4]


def test_stuck_move_is_reported_then_cancelled(emulator, connect) -> None:
    model = cluster_model(brokers=5, used=3, partitions={"orders": 6}, size=20e6)
    cluster = emulator(model)
    plan = spread_plan(model, onto=[4, 5])
    stuck_seen: list[tuple[str, ...]] = []

    def stick(p: Progress) -> None:
        with cluster.state.lock:
            running = ("orders", 0) in cluster.state.reassigning
            already = running and cluster.state.reassigning[("orders", 0)].reassignment.stuck
        if running and not already:
            cluster.stick_reassignment("orders", 0)
        stuck_seen.append(p.stuck)

    options = ExecutorOptions(
        throttle_bytes_per_sec=5_000_000, poll_interval_seconds=5, stuck_after_seconds=120, cancel_stuck=True,
        limits=Limits(per_broker=1),
    )  # fmt: skip
    result = Executor(connect(cluster), plan, MemoryExecutionStore(), options, clock=cluster, on_progress=stick).run()
    assert result.state is ExecutionState.FAILED
    assert result.dead == {"orders-0": "stuck: no progress for 120s, reassignment cancelled"}
    # Progress named it stuck while it ran (before the cancel), and only it.
    assert ("orders-0",) in stuck_seen, stuck_seen
    assert {name for names in stuck_seen for name in names} == {"orders-0"}
    assert cluster.partition_view("orders", 0)[0] == list(model.partition(0).replicas)
    assert sorted(result.completed) == [f"orders-{p}" for p in range(1, 6)]
    assert leftover_throttles(cluster) == {}


def test_offline_partition_anywhere_fails_the_run_and_lists_it(emulator, connect) -> None:
    b = ClusterBuilder()
    for i in range(1, 7):
        b.add_broker(i)
    b.set_topic("orders", min_insync_replicas=2)
    for p in range(20):
        b.add_partition("orders", p, [1, 2, 3], size_bytes=20e6)
    b.add_partition("solo", 0, [4], size_bytes=1e6)  # RF 1 on a broker the plan does not touch
    model = b.build()
    cluster = emulator(model)
    observer = observe(cluster, faulted={4})
    plan = ReassignmentPlan.of([PartitionTarget("orders", p, (1, 2, 5 + p % 2)) for p in range(20)])

    def fault(p: Progress) -> None:
        if p.partitions_done >= 2 and cluster.state.brokers[4].alive:
            cluster.stop_broker(4)

    options = ExecutorOptions(throttle_bytes_per_sec=10_000_000, poll_interval_seconds=0.5)
    result = Executor(connect(cluster), plan, MemoryExecutionStore(), options, clock=cluster, on_progress=fault).run()
    assert result.state is ExecutionState.FAILED
    assert result.reason == "1 offline partitions: solo-0"
    assert result.aborted, "moves in flight when the partition went offline are cancelled"
    for name in result.aborted:
        p = int(name.rpartition("-")[2])
        assert cluster.partition_view("orders", p)[0] == [1, 2, 3]
    for name in result.pending:  # nothing new started once a partition was offline
        assert cluster.partition_view("orders", int(name.rpartition("-")[2]))[0] == [1, 2, 3]
    assert not cluster.state.reassigning
    assert leftover_throttles(cluster) == {}
    assert observer.violations == []


def test_replicas_on_a_dead_broker_are_moved_off_it(emulator, connect) -> None:
    b = ClusterBuilder()
    for i in range(1, 6):
        b.add_broker(i)
    b.set_topic("orders", min_insync_replicas=1)
    for p in range(6):
        b.add_partition("orders", p, [1 + p % 3, 4, 1 + (p + 1) % 3], size_bytes=10e6)
    model = b.build()
    cluster = emulator(model)
    cluster.stop_broker(4)  # dead before the plan runs: its replicas are out of sync everywhere
    cluster.advance(1)
    observer = observe(cluster, faulted={4})
    plan = ReassignmentPlan.of([PartitionTarget("orders", p, (1 + p % 3, 5, 1 + (p + 1) % 3)) for p in range(6)])
    options = ExecutorOptions(throttle_bytes_per_sec=10_000_000, poll_interval_seconds=0.5)
    result = Executor(connect(cluster), plan, MemoryExecutionStore(), options, clock=cluster).run()
    assert result.state is ExecutionState.COMPLETED, result.reason
    for p in range(6):
        replicas, isr, _ = cluster.partition_view("orders", p)
        assert replicas == [1 + p % 3, 5, 1 + (p + 1) % 3]
        assert sorted(isr) == sorted(replicas)
    assert leftover_throttles(cluster) == {}
    assert observer.violations == []

"""Executions against the emulator over TCP with the real clients: completes, limits, leaders, throttles."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafka.protocol.admin.configs import DescribeConfigsRequest, IncrementalAlterConfigsRequest
from kafka_balancer.executor import ExecutionState, Executor, ExecutorOptions, Limits, MemoryExecutionStore, Progress
from kafka_balancer.executor.state import ThrottleRecord
from kafka_balancer.executor.tasks import build_tasks
from kafka_balancer.executor.throttle import ThrottleManager
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.port import (
    FOLLOWER_THROTTLE_RATE,
    LEADER_THROTTLE_RATE,
    LEADER_THROTTLED_REPLICAS,
    ConfigValue,
    TopicPartition,
)
from kafka_balancer.model import ClusterBuilder, PartitionTarget, ReassignmentPlan
from kafka_balancer.sandbox.state import ClusterState

from executor.harness import assignment, cluster_model, leftover_throttles, observe, spread_plan


def test_small_rebalance_completes_with_throttle_and_leaves_nothing_behind(emulator, connect, submissions) -> None:
    model = cluster_model(brokers=6, used=4, partitions={"orders": 12, "audit": 6}, size=5e6)
    cluster = emulator(model)
    observer = observe(cluster)
    plan = spread_plan(model, onto=[5, 6], every=2, reorder_every=4)
    seen: list[Progress] = []
    store = MemoryExecutionStore()
    options = ExecutorOptions(throttle_bytes_per_sec=10_000_000, poll_interval_seconds=0.5)
    result = Executor(connect(cluster), plan, store, options, clock=cluster, on_progress=seen.append).run()
    assert result.state is ExecutionState.COMPLETED, result.reason
    after = assignment(cluster)
    for target in plan.partitions:
        replicas, isr, leader = after[(target.topic, target.partition)]
        assert replicas == list(target.replicas)
        assert sorted(isr) == sorted(target.replicas)
        assert leader == target.replicas[0]
    assert leftover_throttles(cluster) == {}
    assert observer.violations == []
    assert max(observer.max_per_broker.values()) <= 5
    assert all(n == 1 for n in submissions.moves.values()), submissions.moves
    # Throttles went only on the replicas being added and the replicas they copied from.
    moves = {(t.topic, t.partition): t.replicas for t in plan.partitions}
    originals = {(p.topic, p.partition): p.replicas for p in model.partitions()}
    assert observer.follower_throttled
    assert all(b in moves[(t, p)] and b not in originals[(t, p)] for t, p, b in observer.follower_throttled)
    assert all(b in originals[(t, p)] for t, p, b in observer.leader_throttled)
    assert observer.rate_brokers == {b for t in moves for b in (*moves[t], *originals[t])
                                     if set(moves[t]) != set(originals[t])}  # fmt: skip
    assert seen[-1].partitions_done == len(plan)
    assert seen[-1].bytes_moved == seen[-1].bytes_total > 0
    assert seen[-1].leaders_done == seen[-1].leaders_total > 0
    # Per broker: the new brokers 5 and 6 received everything the plan sends them; mid-run some
    # moves were in flight on them, within the limit.
    final = {b.broker: b for b in seen[-1].brokers}
    assert {5, 6} <= set(final)
    assert all(final[b].bytes_in_moved == final[b].bytes_in_total > 0 for b in (5, 6))
    assert max(b.moves_in_flight for p in seen for b in p.brokers) in range(1, 6)


def test_2000_partition_rebalance_equals_the_plan(emulator, connect, submissions) -> None:
    model = cluster_model(brokers=9, used=6, partitions={f"topic-{i}": 200 for i in range(10)}, size=2e6)
    cluster = emulator(model)
    observer = observe(cluster)
    plan = spread_plan(model, onto=[7, 8, 9], every=3, reorder_every=3, lead_new=True)
    assert len(plan) == 667 + 667  # replica moves + leader-only changes
    options = ExecutorOptions(
        throttle_bytes_per_sec=50_000_000, limits=Limits(per_broker=20), poll_interval_seconds=0.5
    )
    port = connect(cluster)
    elections_before = cluster.request_count(43)
    result = Executor(port, plan, MemoryExecutionStore(), options, clock=cluster).run()
    assert result.state is ExecutionState.COMPLETED, result.reason
    after = assignment(cluster)
    wanted = {(t.topic, t.partition): list(t.replicas) for t in plan.partitions}
    for key, (replicas, isr, leader) in after.items():
        expected = wanted.get(key, model.partition(model.partition_index(*key)).replicas)
        assert replicas == list(expected), key
        assert sorted(isr) == sorted(expected), key
        assert leader == expected[0], key
    assert leftover_throttles(cluster) == {}
    assert observer.violations == []
    assert max(observer.max_per_broker.values()) <= 20
    moves = sum(
        1
        for t in plan.partitions
        if set(t.replicas) != set(model.partition(model.partition_index(t.topic, t.partition)).replicas)
    )
    assert sum(submissions.moves.values()) == len(plan)  # every partition submitted exactly once
    assert all(n == 1 for n in submissions.moves.values())
    # Leadership last, in batches: a thousand partitions per ElectLeaders request.
    leader_changes = result.progress.leaders_total
    assert leader_changes > 1000
    assert cluster.request_count(43) - elections_before == -(-leader_changes // 1000)
    assert moves == 667


def test_concurrency_limits_hold_as_the_emulator_sees_them(emulator, connect) -> None:
    model = cluster_model(brokers=8, used=5, partitions={"orders": 60}, size=4e6)
    cluster = emulator(model)
    observer = observe(cluster)
    plan = spread_plan(model, onto=[6, 7, 8])
    options = ExecutorOptions(
        throttle_bytes_per_sec=5_000_000, limits=Limits(per_broker=3, total=7), poll_interval_seconds=0.5
    )
    result = Executor(connect(cluster), plan, MemoryExecutionStore(), options, clock=cluster).run()
    assert result.state is ExecutionState.COMPLETED, result.reason
    assert max(observer.max_per_broker.values()) == 3  # reached, never exceeded
    assert observer.max_total == 7
    assert observer.violations == []


def test_default_per_broker_limit_is_five(emulator, connect) -> None:
    model = cluster_model(brokers=4, used=3, partitions={"orders": 30}, size=4e6)
    cluster = emulator(model)
    observer = observe(cluster)
    plan = spread_plan(model, onto=[4])
    options = ExecutorOptions(throttle_bytes_per_sec=20_000_000, poll_interval_seconds=0.5)
    result = Executor(connect(cluster), plan, MemoryExecutionStore(), options, clock=cluster).run()
    assert result.state is ExecutionState.COMPLETED, result.reason
    assert observer.max_per_broker[4] == 5


def test_pipe_stays_full_copy_rate_near_the_throttle(emulator, connect) -> None:
    """A small version of bench/executor_pipe.py: B receivers throttled at T copy at >= 90% of B x T
    over the whole run, measured from the emulator's side (first submission to last completion)."""
    b = ClusterBuilder()
    for i in range(1, 10):
        b.add_broker(i)
    incoming = dict.fromkeys((7, 8, 9), 0.0)
    targets = []
    for p in range(45):
        replicas = [1 + (p + k) % 6 for k in range(3)]
        size = 20e6 + (p * 37 % 19) * 10e6  # 20..200 MB, mixed
        b.add_partition("data", p, replicas, size_bytes=size)
        new = min(incoming, key=lambda r: (incoming[r], r))  # receivers get about the same bytes
        incoming[new] += size
        targets.append(PartitionTarget("data", p, (replicas[0], replicas[1], new)))
    model = b.build()
    cluster = emulator(model)
    first: list[float] = []
    cluster.on_tick(lambda st: first.append(st.clock) if st.reassigning and not first else None)
    throttle = 50_000_000
    options = ExecutorOptions(throttle_bytes_per_sec=throttle, poll_interval_seconds=2)
    plan = ReassignmentPlan.of(targets)
    result = Executor(connect(cluster), plan, MemoryExecutionStore(), options, clock=cluster).run()
    assert result.state is ExecutionState.COMPLETED, result.reason
    elapsed = max(at for _, _, at in cluster.state.completed) - first[0]
    achieved = sum(incoming.values()) / elapsed
    assert achieved >= 0.9 * 3 * throttle, f"{achieved / 1e6:.1f} MB/s of {3 * throttle / 1e6:.0f}"


def test_max_bytes_per_run_leaves_the_rest_for_the_next_run(emulator, connect, submissions) -> None:
    model = cluster_model(brokers=6, used=4, partitions={"orders": 16}, size=10e6)  # 10, 20, 30, 40 MB
    cluster = emulator(model)
    observer = observe(cluster)
    plan = spread_plan(model, onto=[5, 6])
    total = sum(model.size_bytes[model.partition_index(t.topic, t.partition)] for t in plan.partitions)
    store = MemoryExecutionStore()
    budget = int(total / 3)
    options = ExecutorOptions(throttle_bytes_per_sec=20_000_000, poll_interval_seconds=0.5, max_bytes_per_run=budget)
    first = Executor(connect(cluster), plan, store, options, clock=cluster).run()
    assert first.state is ExecutionState.STOPPED
    assert "maxBytesPerRun" in first.reason
    assert "left for the next run" in first.reason
    assert first.pending
    assert 0 < first.progress.bytes_moved <= budget
    assert leftover_throttles(cluster) == {}
    # The same plan run again picks up what is left (completed moves are part of the cluster now).
    second = Executor(connect(cluster), plan, MemoryExecutionStore(), ExecutorOptions(poll_interval_seconds=0.5),
                      clock=cluster).run()  # fmt: skip
    assert second.state is ExecutionState.COMPLETED, second.reason
    assert sorted(second.completed) == sorted(f"{t.topic}-{t.partition}" for t in plan.partitions)
    assert all(n == 1 for n in submissions.moves.values())
    for t in plan.partitions:
        assert cluster.partition_view(t.topic, t.partition)[0] == list(t.replicas)
    assert observer.violations == []


def test_throttles_set_by_someone_else_are_left_as_they_were(emulator, connect) -> None:
    model = cluster_model(brokers=6, used=4, partitions={"orders": 12}, size=5e6)
    cluster = emulator(model)
    port = connect(cluster)
    # An operator throttled broker 1 by hand and listed one replica of orders as leader-throttled.
    port.alter_broker_configs({1: {LEADER_THROTTLE_RATE: "30000000", FOLLOWER_THROTTLE_RATE: "40000000"}})
    port.alter_topic_configs({"orders": {LEADER_THROTTLED_REPLICAS: "11:4"}})
    rates_on_1: set[tuple[str | None, str | None]] = set()
    leader_lists: set[str] = set()

    def watch(state: ClusterState) -> None:
        configs = state.brokers[1].configs
        rates_on_1.add((configs.get(LEADER_THROTTLE_RATE), configs.get(FOLLOWER_THROTTLE_RATE)))
        leader_lists.add(state.topics["orders"].configs.get(LEADER_THROTTLED_REPLICAS, ""))

    cluster.on_tick(watch)
    plan = spread_plan(model, onto=[5, 6])
    options = ExecutorOptions(throttle_bytes_per_sec=10_000_000, poll_interval_seconds=0.5)
    result = Executor(port, plan, MemoryExecutionStore(), options, clock=cluster).run()
    assert result.state is ExecutionState.COMPLETED, result.reason
    assert rates_on_1 == {("30000000", "40000000")}  # never overwritten, not even during the run
    assert all("11:4" in value.split(",") for value in leader_lists)  # kept beside ours throughout
    assert any(len(value.split(",")) > 1 for value in leader_lists)  # ours were added meanwhile
    assert leftover_throttles(cluster) == {
        "broker 1": {LEADER_THROTTLE_RATE: "30000000", FOLLOWER_THROTTLE_RATE: "40000000"},
        "topic orders": {LEADER_THROTTLED_REPLICAS: "11:4"},
    }


def test_leader_changes_outside_the_plan_are_elected(emulator, connect, submissions) -> None:
    """After a rolling restart many partitions keep their replica order but are led by a
    follower: the plan cannot list them (nothing to reassign), the proposal's leader changes do,
    and the executor elects them with the plan's partitions, in the same batched requests."""
    b = ClusterBuilder(cluster_name="restarted")
    for i in range(1, 4):
        b.add_broker(i, rack=f"rack-{i}")
    b.set_topic("orders", min_insync_replicas=2)
    for p in range(6):
        replicas = [1 + (p + k) % 3 for k in range(3)]
        # Partitions 0-3 are led by their second replica; 4 and 5 by their preferred one.
        leader = replicas[1] if p < 4 else replicas[0]
        b.add_partition("orders", p, replicas, leader=leader, size_bytes=1e6)
    model = b.build()
    cluster = emulator(model)
    port = connect(cluster)
    plan = ReassignmentPlan.of([PartitionTarget("orders", 0, (3, 1, 2))])  # reorder: 3 becomes preferred
    elections = [TopicPartition("orders", p) for p in (0, 1, 2, 4)]  # 4 is already led by its preferred
    before = cluster.request_count(43)
    result = Executor(port, plan, MemoryExecutionStore(), ExecutorOptions(), clock=cluster, elections=elections).run()
    assert result.state is ExecutionState.COMPLETED, result.reason
    after = assignment(cluster)
    assert after[("orders", 0)][2] == 3  # the plan's reorder, elected
    assert after[("orders", 1)][2] == after[("orders", 1)][0][0]
    assert after[("orders", 2)][2] == after[("orders", 2)][0][0]
    assert after[("orders", 3)][2] == after[("orders", 3)][0][1]  # not asked for: left alone
    assert result.progress.leaders_total == 3
    assert cluster.request_count(43) - before == 1
    assert dict(submissions.moves) == {("orders", 0): 1}  # the extra elections reassign nothing


class _LaggingConfigReads:
    """The real client, except that DescribeConfigs of topics answers as it would have before the last
    write to topic configs: a broker answers from its own copy of the metadata, which on real Kafka may
    lag a write by some milliseconds (seen as an empty ``*.throttled.replicas`` left after a run)."""

    def __init__(self, port: KafkaAdapter) -> None:
        self._port = port
        self._before_last_write: dict[str, dict[str, str]] | None = None
        self.stale_reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._port, name)

    def alter_topic_configs(self, changes: Mapping[str, Mapping[str, ConfigValue]]) -> None:
        self._before_last_write = self._port.topic_configs(sorted(changes))
        self._port.alter_topic_configs(changes)

    def topic_configs(self, topics: Sequence[str]) -> dict[str, dict[str, str]]:
        fresh = self._port.topic_configs(topics)
        stale = self._before_last_write or {}
        if all(t in stale for t in topics) and any(stale[t] != fresh.get(t) for t in topics):
            self.stale_reads += 1
            return {t: stale[t] for t in topics}
        return fresh


def test_throttle_lists_read_from_lagging_metadata_are_still_removed_whole(emulator, connect) -> None:
    """The lists the executor created go away entirely, even when every read it makes of them is one
    write behind: entries it took out mid-run are its own, not someone else's to keep."""
    model = cluster_model(brokers=6, used=4, partitions={"orders": 12}, size=5e6)
    cluster = emulator(model)
    port = _LaggingConfigReads(connect(cluster))
    plan = spread_plan(model, onto=[5, 6], every=3)
    options = ExecutorOptions(throttle_bytes_per_sec=10_000_000, poll_interval_seconds=0.5, limits=Limits(per_broker=1))
    result = Executor(port, plan, MemoryExecutionStore(), options, clock=cluster).run()  # type: ignore[arg-type]
    assert result.state is ExecutionState.COMPLETED, result.reason
    assert port.stale_reads > 0
    assert leftover_throttles(cluster) == {}


class _LaggingReplicaReads:
    """The real client, except that the next reads of the cluster after a reassignment answer as before
    it: a broker's copy of the metadata may lag the controller's (seen on real Kafka at load average 16:
    a reorder whose reassignment was gone, read back in its old order)."""

    def __init__(self, port: KafkaAdapter, lagging_reads: int) -> None:
        self._port = port
        self._lagging_reads = lagging_reads
        self._before: Any = None
        self._left = 0
        self.stale_reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._port, name)

    def alter_reassignments(self, targets: Mapping[TopicPartition, Sequence[int] | None]) -> Any:
        self._before = self._port.read_cluster(with_sizes=False)
        self._left = self._lagging_reads
        return self._port.alter_reassignments(targets)

    def read_cluster(self, *, with_sizes: bool = True) -> Any:
        if self._left > 0:
            self._left -= 1
            self.stale_reads += 1
            return self._before
        return self._port.read_cluster(with_sizes=with_sizes)


def test_a_reorder_read_back_from_lagging_metadata_is_read_again_not_given_up(emulator, connect) -> None:
    model = cluster_model(brokers=3, used=3, partitions={"orders": 6}, size=1e6)
    cluster = emulator(model)
    port = _LaggingReplicaReads(connect(cluster), lagging_reads=2)
    current = assignment(cluster)[("orders", 0)][0]
    rotated = (*current[1:], current[0])
    plan = ReassignmentPlan.of([PartitionTarget("orders", 0, rotated)])  # the same replicas, another order
    result = Executor(port, plan, MemoryExecutionStore(), ExecutorOptions(), clock=cluster).run()  # type: ignore[arg-type]
    assert result.state is ExecutionState.COMPLETED, result.reason
    assert port.stale_reads == 2
    assert tuple(assignment(cluster)[("orders", 0)][0]) == rotated


def test_the_executor_attributes_show_the_run_while_it_runs_and_after(emulator, connect) -> None:
    """The attributes the CLI and the operator read (record, tasks, in_flight, stuck, blocked, submitted,
    throttles, progress()) are the run's own, live while it runs."""
    model = cluster_model(brokers=4, used=3, partitions={"orders": 8}, size=4e6)
    cluster = emulator(model)
    plan = spread_plan(model, onto=[4])
    options = ExecutorOptions(throttle_bytes_per_sec=20_000_000, poll_interval_seconds=0.5)
    box: list[Executor] = []
    live: list[tuple[int, int, ExecutionState]] = []

    def watch(progress: Progress) -> None:
        if box:
            ex = box[0]
            live.append((len(ex.in_flight), progress.partitions_in_progress, ex.record.state))

    executor = Executor(connect(cluster), plan, MemoryExecutionStore(), options, clock=cluster, on_progress=watch)
    box.append(executor)
    result = executor.run()
    assert result.state is ExecutionState.COMPLETED, result.reason
    assert any(flight > 0 for flight, _, _ in live)
    assert all(flight == shown for flight, shown, _ in live)
    assert ExecutionState.MOVING_REPLICAS in {state for _, _, state in live}
    assert executor.record.state is ExecutionState.COMPLETED
    assert [t.tp for t in executor.tasks] == [t.tp for t, _ in result.tasks]
    assert (executor.in_flight, executor.stuck, executor.blocked) == ({}, set(), {})
    assert executor.submitted == result.submitted == len(plan)
    assert executor.throttles.record is executor.record.throttles
    assert executor.progress().partitions_done == len(plan)


def test_the_throttles_of_many_topics_go_in_a_read_and_a_write(emulator, connect) -> None:
    # A dense cluster's run throttles hundreds of topics: undone one topic at a time, a read and a
    # write each, the throttles stayed 10 s longer at 300 topics (bench.real_scale).
    model = cluster_model(brokers=4, used=2, rf=2, partitions={f"topic-{i}": 1 for i in range(60)})
    cluster = emulator(model)
    tasks = build_tasks(spread_plan(model, onto=[3, 4]), model, {})
    throttles = ThrottleManager(connect(cluster), 10_000_000, ThrottleRecord(), save=lambda: None)
    throttles.update_replicas(tasks)
    assert len(leftover_throttles(cluster)) == 60
    before = dict(cluster.state.requests)

    assert throttles.clear() == []

    assert leftover_throttles(cluster) == {}
    served = {key: n - before.get(key, 0) for key, n in cluster.state.requests.items()}
    reads, writes = (
        served.get(DescribeConfigsRequest[0].API_KEY, 0),
        served.get(IncrementalAlterConfigsRequest[0].API_KEY, 0),
    )
    assert (reads, writes) == (1, 1)

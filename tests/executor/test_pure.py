"""The executor's pure parts: task states and the resumable record, scheduling, throttle values, rates.

These need no cluster: scheduling decisions are functions of tasks and counts, and the record is
plain JSON. Behaviour against a cluster is in the emulator tests next to this file.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka_balancer.executor import (
    ExecutionRecord,
    ExecutionState,
    FileExecutionStore,
    Limits,
    MemoryExecutionStore,
    TaskState,
    parse_rate,
    parse_size,
    plan_id,
)
from kafka_balancer.executor.progress import RateMeter, eta
from kafka_balancer.executor.safety import PollView, move_blocker, offline_partitions
from kafka_balancer.executor.scheduler import HelpfulFirst, SmallFirst, broker_counts, pick_moves, strategy_named
from kafka_balancer.executor.state import InFlight, ThrottleRecord, decode_states, encode_states
from kafka_balancer.executor.tasks import SMALL_MOVE_BYTES, DirMove, Task, TaskKind, build_tasks
from kafka_balancer.executor.throttle import LIST_BUDGET_BYTES, ListBudget, wanted_entries
from kafka_balancer.kafka.port import (
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_REPLICAS,
    OngoingReassignment,
    TopicPartition,
)
from kafka_balancer.model import ClusterBuilder, ClusterModel, ModelError, PartitionTarget, ReassignmentPlan
from kafka_balancer.model.cluster import LogDir


def _task(i: int, original: tuple[int, ...], target: tuple[int, ...], size: float = 100e6, topic: str = "t") -> Task:
    return Task(i, TopicPartition(topic, i), original, target, size)


def _cluster() -> ClusterModel:
    b = ClusterBuilder()
    for broker in range(1, 5):
        b.add_broker(broker, rack=f"r{broker}", alive=broker != 4)
    b.set_topic("t", min_insync_replicas=2)
    b.add_partition("t", 0, [1, 2, 3], size_bytes=1000)
    b.add_partition("t", 1, [1, 2, 3], isr=[1, 2], size_bytes=10)  # under-replicated and at min ISR
    b.add_partition("t", 2, [1, 2], size_bytes=10)  # healthy, but ISR 2 is at min ISR 2
    b.add_partition("u", 0, [1, 2, 3], isr=[1, 2], size_bytes=10)  # under-replicated, no min ISR set
    b.add_partition("u", 1, [4], leader=None, leader_given=True, isr=[4], size_bytes=10)  # offline
    return b.build()


# ----- record ---------------------------------------------------------------------------------
@given(st.lists(st.sampled_from(list(TaskState)), max_size=300))
def test_task_states_run_length_round_trip(states: list[TaskState]) -> None:
    text = encode_states(states)
    assert decode_states(text, len(states)) == states
    assert len(text) <= 2 + 4 * len(states)


def test_run_length_is_compact_for_a_large_execution() -> None:
    states = [TaskState.COMPLETED] * 150_000 + [TaskState.IN_PROGRESS] * 1000 + [TaskState.PENDING] * 49_000
    assert encode_states(states) == "c150000i1000p49000"


def test_states_finished_out_of_order_stay_small() -> None:
    # Mid-run, moves finish in strategy order, not plan order: short runs everywhere.
    rng = random.Random(5)
    states = [rng.choice([TaskState.COMPLETED, TaskState.PENDING]) for _ in range(200_000)]
    states[1000:1005] = [TaskState.IN_PROGRESS] * 5
    text = encode_states(states)
    assert text.startswith("z:")
    assert len(text) < 45_000  # under 2 bits per partition
    assert decode_states(text, len(states)) == states
    with pytest.raises(ModelError, match="field 'tasks' has a corrupt packed form"):
        decode_states("z:!!", None)


def test_record_round_trips_through_json_and_checks_the_plan() -> None:
    plan = ReassignmentPlan.of([PartitionTarget("t", p, (1, 2)) for p in range(5)])
    record = ExecutionRecord(
        plan_id(plan),
        ExecutionState.MOVING_REPLICAS,
        [TaskState.COMPLETED, TaskState.IN_PROGRESS, TaskState.PENDING, TaskState.DEAD, TaskState.ABORTED],
        throttles=ThrottleRecord(
            brokers={1: "2000000", 2: "2000000"},
            topics={"t": {"follower.replication.throttled.replicas": ["1:3"]}},
            created={"t": ["follower.replication.throttled.replicas"]},
            retired={"t": {"follower.replication.throttled.replicas": ["0:3"]}},
            dir_brokers={1: "2000000"},
        ),
        dead_reasons={"t-3": "stuck"},
        in_flight=[InFlight("t", 1, 2e6, (1, 2), (1, 3), 1, ((1, "/d/b", "/d/a"), (3, "/d/b", None)))],
        bytes_done=12.5,
    )
    text = json.dumps(record.to_dict())
    again = ExecutionRecord.from_dict(json.loads(text), plan)
    assert again == record
    assert len(text) < 700
    other = ReassignmentPlan.of([PartitionTarget("t", p, (1, 2)) for p in range(6)])
    assert plan_id(other) != plan_id(plan)
    with pytest.raises(ModelError, match="covers 5 partitions, the plan has 6"):
        ExecutionRecord.from_dict(json.loads(text), other)


def test_a_version_1_record_still_resumes_and_cleans_up() -> None:
    """Records written before version 2 kept whole original lists and no in-flight targets."""
    plan = ReassignmentPlan.of([PartitionTarget("t", p, (1, 2)) for p in range(2)])
    old = {
        "version": 1, "planId": plan_id(plan), "state": "MovingReplicas", "tasks": "c1i1",
        "throttles": {"brokers": [1, 2], "topics": {"t": [None, "0:3"]}},
        "inFlight": [["t", 1, 2e6]],
    }  # fmt: skip
    record = ExecutionRecord.from_dict(old, plan)
    assert record.throttles.brokers == {1: "", 2: ""}  # the rate we wrote is not known: removed as before
    assert record.throttles.legacy_topics == {"t": (None, "0:3")}
    assert record.in_flight == [InFlight("t", 1, 2e6, None, None)]


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"version": 3}, "field 'version' must be 1 or 2, got 3"),
        ({"state": "Running"}, "field 'state' is not a state, got 'Running'"),
        ({"tasks": "c3x"}, "field 'tasks' is not a run-length state string"),
        ({"tasks": "q3"}, "unknown state code 'q'"),
        ({"inFlight": [["t"]]}, "field 'inFlight' must be a list of \\[topic, partition, bytes, original, target"),
        ({"throttles": {"brokers": ["a"]}}, "field 'throttles.brokers' must map broker ids to rates"),
        ({"throttles": {"dirBrokers": {"1": 5}}}, "field 'throttles.dirBrokers' must map broker ids to rates"),
        ({"inFlight": [["t", 0, 1.0, [1], [1], 0, [[1, 2, None]]]]}, "where log directories move"),
    ],
)
def test_bad_records_name_the_field(patch: dict[str, object], message: str) -> None:
    good = ExecutionRecord("abc", ExecutionState.PENDING, [TaskState.PENDING] * 3).to_dict()
    with pytest.raises(ModelError, match=message):
        ExecutionRecord.from_dict({**good, **patch})


def test_file_store_is_atomic_and_stop_is_a_separate_file(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "exec.json"
    store = FileExecutionStore(path)
    assert store.load() is None
    store.save({"version": 1, "a": [1, 2]})
    assert store.load() == {"version": 1, "a": [1, 2]}
    assert [p.name for p in path.parent.iterdir()] == ["exec.json"]  # no temp file left behind
    assert not store.stop_requested()
    FileExecutionStore(path).request_stop()  # another process
    assert store.stop_requested()
    store.save({"version": 1})  # the executor saving does not erase the request
    assert store.stop_requested()
    store.clear_stop()
    assert not store.stop_requested()
    path.write_text("{oops")
    with pytest.raises(ModelError, match=r"exec\.json: not valid JSON"):
        store.load()


def test_memory_store_rejects_what_json_cannot_hold() -> None:
    store = MemoryExecutionStore()
    store.save({"a": 1})
    with pytest.raises(TypeError):
        store.save({"a": {1, 2}})
    assert store.load() == {"a": 1}


# ----- tasks ----------------------------------------------------------------------------------
def test_task_kinds_and_moved_brokers() -> None:
    move = _task(0, (1, 2, 3), (1, 2, 4), size=50)
    assert move.kind is TaskKind.MOVE
    assert move.adding == (4,)
    assert move.removing == (3,)
    assert move.brokers == {3, 4}
    assert move.bytes_to_move == 50
    assert _task(1, (1, 2, 3), (2, 1, 3)).kind is TaskKind.REORDER
    assert _task(2, (1, 2, 3), (1, 2, 3)).kind is TaskKind.NOOP
    grow = _task(3, (1, 2), (1, 2, 3, 4), size=10)
    assert grow.bytes_to_move == 20


def test_named_log_dirs_make_moves_between_and_into_directories() -> None:
    """JBOD: a named directory the replica is not in is a move of its own (same replicas: LOG_DIR), counted
    on that broker and in the bytes; one the replica is in already is nothing to do; a new replica's
    directory rides on the move that adds it."""
    dirs = {b: (LogDir(f"/b{b}/a"), LogDir(f"/b{b}/b")) for b in (1, 2, 3, 4)}
    builder = ClusterBuilder()
    for b in (1, 2, 3, 4):
        builder.add_broker(b, log_dirs=dirs[b])
    builder.add_partition("t", 0, [1, 2], size_bytes=100, log_dirs=["/b1/a", "/b2/a"])
    cluster = builder.build()

    def task(replicas: tuple[int, ...], log_dirs: tuple[str, ...]) -> Task:
        return build_tasks(ReassignmentPlan.of([PartitionTarget("t", 0, replicas, log_dirs)]), cluster, {})[0]

    between = task((1, 2), ("/b1/b", "/b2/a"))
    assert between.kind is TaskKind.LOG_DIR
    assert [(d.broker, d.path, d.original) for d in between.dirs] == [(1, "/b1/b", "/b1/a")]
    assert (between.brokers, between.bytes_to_move, between.copies) == ({1}, 100, True)
    assert task((1, 2), ("/b1/a", "any")).kind is TaskKind.NOOP
    both = task((4, 2), ("/b4/b", "/b2/b"))
    assert both.kind is TaskKind.MOVE
    assert [(d.broker, d.original) for d in both.between_dirs] == [(2, "/b2/a")]
    assert (both.brokers, both.bytes_to_move) == ({1, 2, 4}, 200)
    with pytest.raises(ModelError, match=r"field 'log_dirs' names '/b1/b' for broker 2; its log directories are"):
        task((1, 2), ("any", "/b1/b"))


def test_a_brokers_only_log_directory_is_not_named_to_kafka() -> None:
    """A broker with one log directory puts every replica there: naming it would cost an AlterReplicaLogDirs
    and a DescribeLogDirs of the move at every poll for nothing, so the task names only the JBOD broker's."""
    builder = ClusterBuilder()
    builder.add_broker(1, log_dirs=(LogDir("/b1/a"),))
    builder.add_broker(2, log_dirs=(LogDir("/b2/a"), LogDir("/b2/b")))
    builder.add_broker(3, log_dirs=(LogDir("/b3/a"),))
    builder.add_partition("t", 0, [1, 2], size_bytes=100, log_dirs=["/b1/a", "/b2/a"])
    cluster = builder.build()
    plan = ReassignmentPlan.of([PartitionTarget("t", 0, (3, 2), ("/b3/a", "/b2/b"))])
    (moved,) = build_tasks(plan, cluster, {})
    assert moved.kind is TaskKind.MOVE
    assert [(d.broker, d.path, d.original) for d in moved.dirs] == [(2, "/b2/b", "/b2/a")]
    stay = ReassignmentPlan.of([PartitionTarget("t", 0, (1, 2), ("/b1/a", "/b2/a"))])
    assert build_tasks(stay, cluster, {})[0].kind is TaskKind.NOOP


def test_build_tasks_recovers_original_replicas_of_a_running_reassignment() -> None:
    cluster = _cluster()
    plan = ReassignmentPlan.of([PartitionTarget("t", 0, (1, 2, 4)), PartitionTarget("t", 2, (2, 1))])
    running = {TopicPartition("t", 0): OngoingReassignment(replicas=(1, 2, 4, 3), adding=(4,), removing=(3,))}
    tasks = build_tasks(plan, cluster, running)
    assert tasks[0].original == (1, 2, 3)
    assert tasks[0].size_bytes == 1000
    assert tasks[1].kind is TaskKind.REORDER


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (PartitionTarget("nope", 0, (1,)), r"partitions\[0\] \(nope-0\): the cluster has no such partition"),
    ],
)
def test_plan_that_does_not_fit_the_cluster_is_refused(target: PartitionTarget, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        build_tasks(ReassignmentPlan.of([target]), _cluster(), {})


# ----- safety ---------------------------------------------------------------------------------
def test_health_checks() -> None:
    cluster = _cluster()
    assert offline_partitions(cluster) == ["u-1"]
    move = Task(0, TopicPartition("t", 0), (1, 2, 3), (1, 3, 2), 1.0)
    assert move_blocker(Task(0, TopicPartition("t", 0), (1, 2, 3), (1, 2, 4), 1.0), PollView.of(cluster, {})) == (
        "target broker 4 is offline"
    )
    assert move_blocker(move, PollView.of(cluster, {})) is None
    at_min = move_blocker(Task(1, TopicPartition("t", 1), (1, 2, 3), (1, 2), 1.0), PollView.of(cluster, {}))
    assert at_min == "ISR size 2 is at or below min.insync.replicas=2"
    assert move_blocker(Task(2, TopicPartition("t", 2), (1, 2), (1, 3), 1.0), PollView.of(cluster, {})) == (
        "ISR size 2 is at or below min.insync.replicas=2"
    )
    urp = move_blocker(Task(3, TopicPartition("u", 0), (1, 2, 3), (1, 3), 1.0), PollView.of(cluster, {}))
    assert urp == "under-replicated: replicas [3] are out of sync"
    # Moving the out-of-sync replica away is what fixes it (remove-brokers, fix-offline-replicas).
    assert move_blocker(Task(3, TopicPartition("u", 0), (1, 2, 3), (1, 2), 1.0), PollView.of(cluster, {})) is None
    foreign = {TopicPartition("t", 0): OngoingReassignment((1, 2, 3), (), ())}
    assert move_blocker(move, PollView.of(cluster, foreign)) == "another reassignment of this partition is in progress"


def test_health_checks_name_the_eligible_leader_replicas_where_the_cluster_reports_them() -> None:
    """KIP-966: at min ISR Kafka keeps the ELR empty (at risk: never moved); below it, the replicas that
    left are eligible leaders, and the partition still does not move (acks=all writes already fail)."""
    b = ClusterBuilder()
    for broker in range(1, 5):
        b.add_broker(broker, alive=broker != 3)
    b.set_topic("t", min_insync_replicas=2)
    b.set_topic("f", min_insync_replicas=3)
    b.add_partition("t", 0, [1, 2, 3], isr=[1, 2], elr=[])  # at min ISR, no eligible leader
    b.add_partition("f", 0, [1, 2, 3], isr=[1, 2], elr=[3])  # below min ISR, broker 3 eligible
    b.add_partition("t", 1, [1, 2, 4], elr=[])  # healthy
    cluster = b.build()
    at_min = move_blocker(Task(0, TopicPartition("t", 0), (1, 2, 3), (1, 2, 4), 1.0), PollView.of(cluster, {}))
    assert at_min == "ISR size 2 is at or below min.insync.replicas=2 and no eligible leader replica (KIP-966)"
    below = move_blocker(Task(1, TopicPartition("f", 0), (1, 2, 3), (1, 2, 4), 1.0), PollView.of(cluster, {}))
    assert below == "ISR size 2 is at or below min.insync.replicas=3 (eligible leader replicas [3])"
    assert move_blocker(Task(2, TopicPartition("t", 1), (1, 2, 4), (2, 4, 1), 1.0), PollView.of(cluster, {})) is None


# ----- scheduling -----------------------------------------------------------------------------
def test_pick_respects_per_broker_and_total_limits_and_skips_busy_brokers() -> None:
    # Five moves onto broker 9 saturate it; the sixth waits, but a move elsewhere still starts.
    onto_nine = [_task(i, (1, 2), (1, 9)) for i in range(6)]
    elsewhere = _task(10, (3, 4), (3, 5))
    picked = pick_moves([*onto_nine, elsewhere], [], Limits(per_broker=5, total=100))
    assert [t.index for t in picked] == [0, 1, 2, 3, 4, 10]
    assert pick_moves([*onto_nine, elsewhere], [], Limits(per_broker=5, total=3)) == onto_nine[:3]
    # One in flight on broker 9 leaves room for four more.
    again = pick_moves(onto_nine[1:], onto_nine[:1], Limits(per_broker=5, total=100))
    assert [t.index for t in again] == [1, 2, 3, 4]


def test_small_moves_take_no_broker_slot_only_the_total() -> None:
    # A dense cluster's near-empty partitions: a first fetch copies each, so they do not queue behind
    # the five slots of the receiving broker; the total limit still bounds them.
    small = [_task(i, (1, 2), (1, 9), size=SMALL_MOVE_BYTES) for i in range(40)]
    large = [_task(100 + i, (1, 2), (1, 9), size=SMALL_MOVE_BYTES + 1) for i in range(6)]
    picked = pick_moves([*large, *small], [], Limits(per_broker=5, total=30))
    assert [t.index for t in picked] == [100, 101, 102, 103, 104, *range(25)]
    assert all(t.small for t in small)
    assert not any(t.small for t in large)
    assert broker_counts([*large[:5], *small]) == {2: 5, 9: 5}
    # A move between a broker's directories is never small: its copy is the broker's own, uncounted by Kafka.
    between = Task(7, TopicPartition("t", 7), (1,), (1,), 10.0, (DirMove(1, "/b", "/a"),))
    assert not between.small


def test_a_tiered_move_costs_what_its_new_replica_copies() -> None:
    # 40 MB on the leader's disk, of which 0.5 MB past the last tiered offset: the brokers fetch from there
    # (KIP-1023), so the move, maxBytesPerRun, the ETA and the slot it takes count 0.5 MB per added replica.
    b = ClusterBuilder()
    for broker in range(1, 5):
        b.add_broker(broker, rack=f"r{broker}", fetch_last_tiered=True)
    b.add_partition("t", 0, [1, 2], size_bytes=40e6, remote_bytes=400e6, untiered_bytes=0.5e6)
    b.add_partition("t", 1, [1, 2], size_bytes=40e6)
    cluster = b.build()
    plan = ReassignmentPlan.of([PartitionTarget("t", 0, (3, 4)), PartitionTarget("t", 1, (1, 3))])
    tiered, plain = build_tasks(plan, cluster, {})
    assert tiered.bytes_to_move == 2 * 0.5e6
    assert tiered.small
    assert plain.bytes_to_move == 40e6
    assert not plain.small


def test_throttle_lists_of_a_topic_stay_within_the_budget() -> None:
    # 3,000 partitions of one topic moving at once would need throttle lists of ~24 KB and ~12 KB each;
    # moves wait once our entries would take more than half a config value (Kafka reads 32,767 bytes).
    queue = [_task(i, (1000 + i % 7, 2000 + i % 5), (1000 + i % 7, 3000 + i % 3), size=0.0) for i in range(3000)]
    budget = ListBudget([])
    admitted = []
    for task in queue:
        if budget.fits(task):
            budget.add(task)
            admitted.append(task)
    assert 0 < len(admitted) < len(queue)
    for key, entries in wanted_entries(admitted)["t"].items():
        assert len(",".join(sorted(entries))) <= LIST_BUDGET_BYTES, key
    # Another topic has a budget of its own.
    assert ListBudget(admitted).fits(_task(5000, (1, 2), (1, 3), topic="other"))


def test_pick_refills_a_freed_slot_at_once() -> None:
    queue = [_task(i, (1,), (2,)) for i in range(20)]
    in_flight = queue[:5]
    assert pick_moves(queue[5:], in_flight, Limits(per_broker=5)) == []
    # One finishes: exactly one new move starts on the next poll, not a new wave of five.
    assert pick_moves(queue[5:], in_flight[1:], Limits(per_broker=5)) == [queue[5]]


def test_pick_skips_ineligible_without_taking_their_slot() -> None:
    queue = [_task(i, (1,), (2,)) for i in range(4)]
    picked = pick_moves(queue, [], Limits(per_broker=2), eligible=lambda t: t.index != 0)
    assert [t.index for t in picked] == [1, 2]


@given(
    st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), min_size=1, max_size=80),
    st.integers(1, 6),
    st.integers(1, 30),
)
def test_pick_never_exceeds_limits(pairs: list[tuple[int, int]], per_broker: int, total: int) -> None:
    tasks = [_task(i, (a,), (b,)) for i, (a, b) in enumerate(pairs) if a != b]
    rng = random.Random(len(tasks))
    in_flight = pick_moves(tasks, [], Limits(per_broker, total))
    rest = [t for t in tasks if t not in in_flight]
    for _ in range(5):
        if in_flight:
            in_flight.pop(rng.randrange(len(in_flight)))
        started = pick_moves(rest, in_flight, Limits(per_broker, total))
        in_flight += started
        rest = [t for t in rest if t not in started]
        assert len(in_flight) <= total
        assert all(n <= per_broker for n in broker_counts(in_flight).values())


def test_helpful_first_then_small_before_large() -> None:
    b = ClusterBuilder()
    for broker in (1, 2, 3, 4):
        b.add_broker(broker)
    # Broker 1 is hot (three big partitions), broker 4 empty.
    b.add_partition("t", 0, [1, 2], size_bytes=1000)
    b.add_partition("t", 1, [1, 3], size_bytes=800)
    b.add_partition("t", 2, [1, 2], size_bytes=100)
    b.add_partition("t", 3, [2, 3], size_bytes=50)
    cluster = b.build()
    plan = ReassignmentPlan.of(
        [
            PartitionTarget("t", 0, (4, 2)),  # hot -> empty, large
            PartitionTarget("t", 2, (4, 2)),  # hot -> empty, small
            PartitionTarget("t", 3, (4, 3)),  # from 2 (about average) -> empty
            PartitionTarget("t", 1, (4, 3)),  # hot -> empty, medium
        ]
    )
    tasks = build_tasks(plan, cluster, {})
    helpful = [str(t.tp) for t in HelpfulFirst().order(tasks, cluster)]
    assert helpful[:2] == ["t-0", "t-1"]  # the biggest relief of broker 1 and filling of broker 4
    assert [str(t.tp) for t in SmallFirst().order(tasks, cluster)] == ["t-3", "t-2", "t-1", "t-0"]
    assert strategy_named("small-first").name == "small-first"
    with pytest.raises(ModelError, match="field 'strategy' must be one of"):
        strategy_named("random")


def test_limits_name_the_field() -> None:
    with pytest.raises(ModelError, match="concurrentMovesPerBroker' must be >= 1, got 0"):
        Limits(per_broker=0)


# ----- throttles, rates -----------------------------------------------------------------------
def test_throttled_replica_entries_are_the_sources_as_leaders_and_the_added_as_followers() -> None:
    moving = Task(0, TopicPartition("t", 3), (1, 2, 3), (1, 2, 4), 100.0)
    other = Task(1, TopicPartition("u", 0), (5, 6), (6, 7), 100.0)
    assert wanted_entries([moving, other]) == {
        "t": {LEADER_THROTTLED_REPLICAS: {"3:1", "3:2", "3:3"}, FOLLOWER_THROTTLED_REPLICAS: {"3:4"}},
        "u": {LEADER_THROTTLED_REPLICAS: {"0:5", "0:6"}, FOLLOWER_THROTTLED_REPLICAS: {"0:7"}},
    }


@pytest.mark.parametrize(
    ("text", "rate"),
    [("50MiB/s", 50 * 1024**2), ("20MB/s", 20_000_000), ("1048576", 1048576), ("1.5 GiB/s", int(1.5 * 1024**3))],
)
def test_parse_rate(text: str, rate: int) -> None:
    assert parse_rate(text) == rate


def test_parse_rate_errors() -> None:
    with pytest.raises(ModelError, match="unknown unit 'furlongs'"):
        parse_rate("5furlongs/s")
    with pytest.raises(ModelError, match="not a rate like 50MiB/s"):
        parse_rate("fast")


def test_parse_size() -> None:
    assert parse_size("500GB") == 500 * 1000**3
    assert parse_size("1.5TiB") == int(1.5 * 1024**4)
    with pytest.raises(ModelError, match="--max-bytes-per-run: not a size like 500GB, got 'lots'"):
        parse_size("lots")


def test_rate_meter_and_eta() -> None:
    meter = RateMeter(window=10)
    for t in range(30):
        meter.add(float(t), 100.0 * t)
    assert meter.rate() == pytest.approx(100.0)
    assert eta(1000, 100.0) == pytest.approx(10.0)
    assert eta(1000, 0.0) is None
    assert eta(0, 0.0) == 0.0

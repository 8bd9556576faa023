"""Order within a poll and crashes between any two calls (issue 37, item 18), against the emulator.

One journal records, in order, every call the executor makes to Kafka (through the port) and every
save of its record. From it the tests check what the emulator's clock cannot show: a move's
throttle entries and its record are written *before* it is submitted, and its entries leave the
throttled-replicas lists once it finished. Then the executor is crashed right before each of its
calls in turn (a BaseException, as under SIGKILL: no clean-up runs), and from every one of those
points the next run finishes the plan exactly once, and `stop` (``abandon``) leaves nothing running
and no throttle behind.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from kafka_balancer.executor import ExecutionState, Executor, ExecutorOptions, MemoryExecutionStore, abandon
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import FOLLOWER_THROTTLED_REPLICAS, KafkaPort, ListChange
from kafka_balancer.sandbox import EmulatedCluster, EmulatorOptions

from executor.harness import assignment, cluster_model, leftover_throttles, spread_plan
from executor.injection import InterceptedPort

THROTTLED = ExecutorOptions(throttle_bytes_per_sec=2_000_000, poll_interval_seconds=0.5)
# Without a throttle no throttle write saves the record on the way: the save before each submission
# must stand on its own.
UNTHROTTLED = ExecutorOptions(poll_interval_seconds=0.5)
options = pytest.mark.parametrize("opts", [THROTTLED, UNTHROTTLED], ids=["throttled", "unthrottled"])


class Crash(BaseException):
    """The executor dies here, as under SIGKILL: BaseException, so no ``except Exception`` catches it."""


@dataclass
class Journal:
    """Every port call and every save, in order: (kind, detail)."""

    entries: list[tuple[str, Any]] = field(default_factory=list)
    crash_at: int | None = None  # crash right before this port call (0-based)
    calls: int = 0


class JournalingPort(InterceptedPort):
    """A KafkaPort that logs each call into the journal (and may crash before one)."""

    def __init__(self, port: KafkaPort, journal: Journal) -> None:
        super().__init__(port, self._log)
        self._journal = journal

    def _log(self, name: str, args: tuple[Any, ...]) -> None:
        journal = self._journal
        if journal.crash_at is not None and journal.calls == journal.crash_at:
            raise Crash(f"before call {journal.calls}: {name}")
        journal.calls += 1
        journal.entries.append((name, args[0] if args else None))


class JournalingStore(MemoryExecutionStore):
    def __init__(self, journal: Journal) -> None:
        super().__init__()
        self.journal = journal

    def save(self, record: dict[str, Any]) -> None:
        super().save(record)
        self.journal.entries.append(("save", record))


MODEL = cluster_model(brokers=6, used=3, partitions={"orders": 5}, size=4e6)
PLAN = spread_plan(MODEL, onto=[4, 5, 6])  # every partition moves one replica onto a new broker
ORIGINALS = {(p.topic, p.partition): set(p.replicas) for p in MODEL.partitions()}


@contextlib.contextmanager
def _cluster() -> Iterator[EmulatedCluster]:
    """A fresh emulated cluster per crash point, closed (ports and client threads) right after."""
    with EmulatedCluster.start(MODEL, options=EmulatorOptions(time_scale=0)) as cluster:
        yield cluster


def _run(cluster: EmulatedCluster, journal: Journal, store: Any, opts: ExecutorOptions = THROTTLED) -> Any:
    adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=3))
    try:
        port = JournalingPort(adapter, journal)
        return Executor(port, PLAN, store, opts, clock=cluster).run()  # type: ignore[arg-type]
    finally:
        adapter.close()


def _in_flight_of(record: dict[str, Any]) -> set[tuple[str, int]]:
    return {(t, p) for t, p, *_ in record.get("inFlight", [])}


@options
def test_throttles_and_the_record_come_before_each_submission_and_the_lists_narrow(opts: ExecutorOptions) -> None:
    journal = Journal()
    with _cluster() as cluster:
        result = _run(cluster, journal, JournalingStore(journal), opts)
        assert result.state is ExecutionState.COMPLETED, result.reason
        assert leftover_throttles(cluster) == {}

    saved_in_flight: set[tuple[str, int]] = set()
    appended: set[tuple[str, str]] = set()  # (topic, entry) appended to the follower list so far
    submitted: list[tuple[str, int]] = []
    subtracted_after_finish = 0
    for kind, detail in journal.entries:
        if kind == "save":
            saved_in_flight |= _in_flight_of(detail)
        elif kind == "alter_topic_configs":
            for topic, configs in detail.items():
                change = configs.get(FOLLOWER_THROTTLED_REPLICAS)
                if isinstance(change, ListChange):
                    appended |= {(topic, e) for e in change.append}
                    appended -= {(topic, e) for e in change.subtract}
                    subtracted_after_finish += len(change.subtract)
        elif kind == "alter_reassignments":
            for tp, target in detail.items():
                key = (tp.topic, tp.partition)
                added = [] if target is None else [b for b in target if b not in ORIGINALS[key]]
                if not added:
                    continue  # a cancel, or an order-only change: nothing to copy
                submitted.append(key)
                # Write-ahead: the record names the move before it is submitted...
                assert key in saved_in_flight, f"{tp} submitted before the record named it"
                # ... and the replicas it adds are follower-throttled before the copy can start.
                for b in added if opts.throttle_bytes_per_sec else ():
                    assert (tp.topic, f"{tp.partition}:{b}") in appended, f"{tp} submitted before {b} was throttled"
    assert len(submitted) == len(PLAN.partitions)
    # Lists narrow as moves finish: every entry added was taken out again before the end, entry by entry.
    assert not appended
    assert subtracted_after_finish >= (len(PLAN.partitions) if opts.throttle_bytes_per_sec else 0)


def _calls_of_a_clean_run(opts: ExecutorOptions = THROTTLED) -> int:
    journal = Journal()
    with _cluster() as cluster:
        assert _run(cluster, journal, MemoryExecutionStore(), opts).state is ExecutionState.COMPLETED
    return journal.calls


def _submissions(cluster: EmulatedCluster) -> Counter[tuple[str, int]]:
    with cluster.state.lock:
        return Counter((topic, p) for topic, p, _ in cluster.state.completed)


def test_a_crash_before_any_call_then_a_rerun_finishes_the_plan_exactly_once() -> None:
    total = _calls_of_a_clean_run()
    assert total > 20
    for crash_at in range(total):
        with _cluster() as cluster:
            store = MemoryExecutionStore()
            with pytest.raises(Crash):
                _run(cluster, Journal(crash_at=crash_at), store)
            cluster.advance(2)  # time passes while nobody runs
            result = _run(cluster, Journal(), store)
            assert result.state is ExecutionState.COMPLETED, (crash_at, result.reason)
            after = assignment(cluster)
            for t in PLAN.partitions:
                replicas, _, leader = after[(t.topic, t.partition)]
                assert replicas == list(t.replicas), (crash_at, t)
                assert leader == t.replicas[0], (crash_at, t)
            # Each move completed once: none submitted again after it was done.
            assert all(n == 1 for n in _submissions(cluster).values()), (crash_at, _submissions(cluster))
            assert leftover_throttles(cluster) == {}, crash_at


@options
def test_a_crash_before_any_call_then_stop_leaves_nothing_running(opts: ExecutorOptions) -> None:
    total = _calls_of_a_clean_run(opts)
    for crash_at in range(total):
        with _cluster() as cluster:
            store = MemoryExecutionStore()
            with pytest.raises(Crash):
                _run(cluster, Journal(crash_at=crash_at), store, opts)
            adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=3))
            try:
                record = abandon(adapter, store)
            finally:
                adapter.close()
            assert record is None or record.state.finished, crash_at
            with cluster.state.lock:
                running = sorted(cluster.state.reassigning)
            assert running == [], f"crash before call {crash_at}: stop left {running} running"
            assert leftover_throttles(cluster) == {}, crash_at

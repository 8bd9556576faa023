"""A cluster that cannot answer for a while, on real Kafka 4.3.1 (issue 55): the KRaft controller killed
for a short and a long outage, one broker hung (SIGSTOP), while `execute` runs. Each run waits (its
progress says for what), goes on when the cluster answers, and ends Completed with no throttle and no
reassignment left, every record intact, no partition below its min.insync.replicas.

Before: a ListPartitionReassignments that timed out (kafka-python's RequestTimedOutError, error 7) ended
the run "Failed: unexpected error" and its wind-down cancelled every move in flight; in a long outage
the wind-down failed too, leaving throttles and reassignments behind.

Time is scaled by a tenth through the command's own settings, not by sleeping: requests time out after
3 s (30 s by default), so the short outage (the controller down until the run has seen a request time
out, then restarted: the "30 s" case) and the long one (ten more timeouts: the "100 s" case) cost seconds.
The hung broker stays stopped 12 s: longer than Kafka's broker session (9 s), so the controller fences
it and moves its leaderships away, as in the 40 s case; Kafka's own timings are not scaled.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_targets import no_throttle_left
from real_kafka import RealKafka, Written

from realkafka.workflow import Watch, execute, finish, in_flight, snapshot_and_plan, state_record, targets, watch_for

RECORD = 10_000
MIN_ISR = {"orders": 2, "events": 1}
SCALED = ("--request-timeout", "3", "--give-up-unavailable-after", "120", "--throttle", "1MB/s")
LONG_OUTAGE_S = 30.0  # ten request timeouts more


def _fill(kafka: RealKafka) -> dict[str, dict[int, Written]]:
    """orders: 6 x 3 MB, RF 3; events: 4 x 2 MB, RF 2; all on brokers 1-4 (5 and 6 are empty)."""
    kafka.create_topic("orders", [[1 + (p + k) % 4 for k in range(3)] for p in range(6)], {"min.insync.replicas": "2"})
    kafka.create_topic("events", [[1 + (p + k) % 4 for k in range(2)] for p in range(4)])
    return {
        "orders": kafka.produce("orders", partitions=range(6), records_per_partition=300, record_bytes=RECORD),
        "events": kafka.produce("events", partitions=range(4), records_per_partition=200, record_bytes=RECORD),
    }


def _watched(kafka: RealKafka, proc: subprocess.Popen[bytes], watch: Watch, until: Any = None) -> None:
    """Watch the cluster while ``proc`` runs (or until ``until`` holds); a read the fault makes fail is skipped."""
    deadline = time.monotonic() + 300
    while proc.poll() is None and not (until is not None and until()):
        assert time.monotonic() < deadline, "execute still running after 300 s"
        with contextlib.suppress(KafkaException):  # the hung broker answered nothing this time
            watch.check(kafka)
        time.sleep(0.3)


def _waiting(work: Path, proc: subprocess.Popen[bytes]) -> bool:
    """The run says it waits for the cluster (or it ended: the caller's assertions say how)."""
    return proc.poll() is not None or "for the cluster" in (work / "execute.log").read_text(errors="replace")


def _nothing_left(kafka: RealKafka, work: Path, proposal: dict[str, Any], before: dict[Any, Any]) -> None:
    record = state_record(work)
    assert record["state"] == "Completed", record.get("reason")
    assert record["inFlight"] == []
    adapter = KafkaAdapter(ConnectionSpec(kafka.bootstrap_servers))
    try:
        assert adapter.list_reassignments() == {}
    finally:
        adapter.close()
    no_throttle_left(kafka.throttle_leftovers)
    # The plan's partitions on their targets, led by their preferred replica; the others on their replicas
    # (a broker the test hung lost its leaderships to the fault: not the run's business).
    wanted = targets(proposal)

    def planned_led() -> bool:
        views = kafka.partitions()
        return all(views[key].leader == views[key].replicas[0] for key in wanted)

    kafka.wait_until(planned_led, "the plan's partitions led by their preferred replicas")
    for key, view in kafka.partitions().items():
        assert view.replicas == wanted.get(key, before[key].replicas), key
        assert key not in wanted or view.leader == view.replicas[0], (key, view)


def _no_failure_logged(log: Path) -> None:
    text = log.read_text()
    assert "unexpected error" not in text, text[-3000:]
    assert "Traceback" not in text, text[-3000:]


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Kill the run if a failed assertion left it running."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _intact(kafka: RealKafka, written: dict[str, dict[int, Written]]) -> None:
    for topic, partitions in written.items():
        assert kafka.read_back(topic, sorted(partitions)) == partitions, topic


def _run_through(kafka: RealKafka, work: Path, fault: Callable[[subprocess.Popen[bytes], Watch], None]) -> None:
    """Fill, plan and execute; once moves are in flight, ``fault(proc, watch)`` (which undoes what it does,
    also when it fails); then the run ends Completed, nothing left behind, every record intact."""
    written = _fill(kafka)
    proposal = snapshot_and_plan(kafka, work)
    before = kafka.partitions()
    watch = watch_for(kafka, MIN_ISR)
    proc = execute(kafka, work, *SCALED)
    try:
        _watched(kafka, proc, watch, until=lambda: in_flight(work))
        fault(proc, watch)
        _watched(kafka, proc, watch)
        assert finish(proc) == 0, (work / "execute.log").read_text()[-5000:]
    finally:
        _end(proc)
    _no_failure_logged(work / "execute.log")
    assert not watch.violations, watch.violations
    _nothing_left(kafka, work, proposal, before)
    _intact(kafka, written)


@pytest.mark.parametrize("outage", ["short", "long"])
def test_a_controller_down_is_waited_for_and_the_run_completes(
    real_kafka: RealKafka, tmp_path: Path, outage: str
) -> None:
    def controller_down(proc: subprocess.Popen[bytes], _watch: Watch) -> None:
        real_kafka.stop_controller()
        try:
            real_kafka.wait_until(lambda: _waiting(tmp_path, proc), "the run to wait for the cluster", timeout_s=60)
            assert proc.poll() is None, (tmp_path / "execute.log").read_text()[-3000:]
            if outage == "long":
                time.sleep(LONG_OUTAGE_S)  # the outage itself, not a synchronisation
                assert proc.poll() is None, (tmp_path / "execute.log").read_text()[-3000:]
        finally:
            real_kafka.start_controller()

    _run_through(real_kafka, tmp_path, controller_down)


def test_a_broker_hung_past_its_session_is_waited_for_and_the_run_completes(
    real_kafka: RealKafka, tmp_path: Path
) -> None:
    def broker_hung(proc: subprocess.Popen[bytes], watch: Watch) -> None:
        watch.faulted.add(3)
        real_kafka.pause_broker(3)
        try:
            hung_until = time.monotonic() + 12.0
            _watched(real_kafka, proc, watch, until=lambda: time.monotonic() >= hung_until)
            assert proc.poll() is None, (tmp_path / "execute.log").read_text()[-3000:]
        finally:
            real_kafka.pause_broker(3, paused=False)

    _run_through(real_kafka, tmp_path, broker_hung)


def test_a_run_after_a_failed_one_removes_the_throttles_that_one_left(real_kafka: RealKafka, tmp_path: Path) -> None:
    """The record a run leaves when it ends Failed with a throttle it could not remove (its broker hung at
    the end): the next run of the same state file adopts those throttles and removes them at its end."""
    real_kafka.create_topic("orders", [[1, 2], [2, 3]])
    real_kafka.produce("orders", partitions=[0, 1], records_per_partition=20, record_bytes=1000)
    left = {3: {"leader.replication.throttled.rate": "3000000", "follower.replication.throttled.rate": "3000000"}}
    real_kafka.set_broker_configs(left)
    adapter = KafkaAdapter(ConnectionSpec(real_kafka.bootstrap_servers))
    try:
        adapter.alter_topic_configs({"orders": {"leader.replication.throttled.replicas": "1:2,1:3"}})
    finally:
        adapter.close()
    failed = {
        "version": 2,
        "planId": "0123456789abcdef",
        "state": "Failed",
        "tasks": "c1",
        "throttles": {
            "brokers": {"3": "3000000"},
            "topics": {"orders": {"leader.replication.throttled.replicas": ["1:2", "1:3"]}},
            "created": {"orders": ["leader.replication.throttled.replicas"]},
        },
        "deadReasons": {},
        "reason": "throttles not removed: broker 3: REQUEST_TIMED_OUT",
        "inFlight": [],
    }
    (tmp_path / "state.json").write_text(json.dumps(failed))
    (tmp_path / "proposal.json").write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [1, 4]}]})
    )
    proc = execute(real_kafka, tmp_path, "--throttle", "20MB/s")
    assert finish(proc) == 0, (tmp_path / "execute.log").read_text()
    assert state_record(tmp_path)["throttles"]["brokers"] == {}
    no_throttle_left(real_kafka.throttle_leftovers)

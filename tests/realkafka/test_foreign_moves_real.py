"""Another tool re-targets a partition `execute` is moving, on real Kafka 4.3.1 (issue 55).

Kafka keeps one reassignment per partition: a second AlterPartitionReassignments replaces the target of
the one in flight. The executor compares the target Kafka lists with its own before it waits for a move
or cancels it: a partition re-targeted by someone else is reported taken over and left to them, never
waited for (before: for ever) and never cancelled when the run stops (before: `stop` cancelled the other
tool's reassignment, and the partition went back to its original replicas).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import TopicPartition
from kafka_targets import no_throttle_left
from real_kafka import RealKafka

from realkafka.workflow import cli, execute, finish, snapshot_and_plan, state_record, targets

RECORD = 10_000
# Slow enough that a move takes tens of seconds (Kafka lets a throttled follower fetch up to 1 MiB,
# replica.fetch.max.bytes, per quota window of 11 s before it holds back: a 3 MB replica needs three),
# against the milliseconds between seeing our move in Kafka and re-targeting it.
THROTTLE = "5KB/s"


def _copying(work: Path) -> list[list[Any]]:
    """The moves in flight that add a replica (only those take the throttle's time): [topic, partition,
    bytes, original, target, ...]."""
    return [m for m in state_record(work).get("inFlight", []) if set(m[4]) - set(m[3])]


def test_a_move_another_tool_retargets_is_taken_over_and_left_to_it_when_the_run_stops(
    real_kafka: RealKafka, tmp_path: Path
) -> None:
    real_kafka.create_topic("orders", [[1 + (p + k) % 4 for k in range(3)] for p in range(6)])
    written = real_kafka.produce("orders", partitions=range(6), records_per_partition=300, record_bytes=RECORD)
    proposal = snapshot_and_plan(real_kafka, tmp_path)
    before = real_kafka.partitions()
    proc = execute(real_kafka, tmp_path, "--throttle", THROTTLE, "--concurrent-moves-per-broker", "2")
    adapter = KafkaAdapter(ConnectionSpec(real_kafka.bootstrap_servers))
    try:
        real_kafka.wait_until(lambda: bool(_copying(tmp_path)), "a move copying data in flight", timeout_s=120)
        topic, partition, _bytes, original, target, *_ = _copying(tmp_path)[0]
        tp = TopicPartition(topic, partition)

        # The executor records a move in flight before it submits it: re-targeting it before Kafka lists
        # ours would only have ours replace theirs. So: ours in Kafka first.
        def ours_submitted() -> bool:
            running = adapter.list_reassignments().get(tp)
            return running is not None and set(running.target) == set(target)

        real_kafka.wait_until(ours_submitted, f"{tp} reassigned to {target} in Kafka", timeout_s=60)
        # The other tool's target: the original replicas with one of them swapped for a broker of neither list.
        spare = next(b for b in real_kafka.broker_ids if b not in original and b not in target)
        theirs = [*original[:-1], spare]
        assert adapter.alter_reassignments({tp: theirs}) == {tp: None}

        def reported() -> bool:
            why = state_record(tmp_path).get("deadReasons", {}).get(str(tp), "")
            return why.startswith("taken over") or proc.poll() is not None

        real_kafka.wait_until(reported, f"{tp} reported taken over", timeout_s=60)
        assert proc.poll() is None, (tmp_path / "execute.log").read_text()[-3000:]
        assert str(theirs) in state_record(tmp_path)["deadReasons"][str(tp)]

        stopped = cli("stop", "--state", str(tmp_path / "state.json"), "--timeout", "60")
        assert stopped.returncode == 0, stopped.stderr
        assert finish(proc) == 3, (tmp_path / "execute.log").read_text()[-3000:]
        log = (tmp_path / "execute.log").read_text()
        assert f"taken over by another reassignment (left to it): {tp}" in log, log[-3000:]
        # Theirs was never cancelled: it ends where they sent it.
        deadline = time.monotonic() + 120
        while tp in adapter.list_reassignments():
            assert time.monotonic() < deadline, f"{tp}: their reassignment did not finish"
            time.sleep(0.5)
        assert set(real_kafka.partitions()[(topic, partition)].replicas) == set(theirs)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        adapter.close()
    record = state_record(tmp_path)
    assert record["state"] == "Stopped"
    assert record["inFlight"] == []
    wanted = targets(proposal)
    for key, view in real_kafka.partitions().items():  # ours: done or back where they were
        if key != (topic, partition):
            assert view.replicas in (before[key].replicas, wanted.get(key, before[key].replicas)), key
    no_throttle_left(real_kafka.throttle_leftovers)
    assert real_kafka.read_back("orders", range(6)) == written

"""Faults during an execution on real Kafka 4.3.1 brokers (issue 32): the `execute` process killed with
SIGKILL and run again, a broker stopped mid-run, `kafka-balancer stop` from another process, and a
throttle an operator set by hand before the run. Each run is watched: no partition ever below its
min.insync.replicas, no ISR smaller than before except by the broker a test stopped."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from kafka_balancer.kafka.port import FOLLOWER_THROTTLE_RATE, LEADER_THROTTLE_RATE
from kafka_targets import no_throttle_left
from real_kafka import RealKafka, Written

from realkafka.workflow import (
    cli,
    execute,
    finish,
    in_flight,
    run_watched,
    snapshot_and_plan,
    state_record,
    targets,
    task_runs,
    watch_for,
)

MB = 1_000_000
RECORD = 10_000
THROTTLE = "3MB/s"  # per broker: each move of a 6-8 MB replica takes seconds, so a run can be caught mid-way
MIN_ISR = {"orders": 2, "events": 1}


def _fill(kafka: RealKafka) -> dict[str, dict[int, Written]]:
    """orders: 6 x 8 MB, RF 3; events: 6 x 6 MB, RF 2; all on brokers 1-4 (5 and 6 are empty)."""
    kafka.create_topic("orders", [[1 + (p + k) % 4 for k in range(3)] for p in range(6)], {"min.insync.replicas": "2"})
    kafka.create_topic("events", [[1 + (p + k) % 4 for k in range(2)] for p in range(6)])
    return {
        "orders": kafka.produce("orders", partitions=range(6), records_per_partition=800, record_bytes=RECORD),
        "events": kafka.produce("events", partitions=range(6), records_per_partition=600, record_bytes=RECORD),
    }


def _assert_intact(kafka: RealKafka, written: dict[str, dict[int, Written]]) -> None:
    for topic, partitions in written.items():
        assert kafka.read_back(topic, sorted(partitions)) == partitions, topic


def _assert_done(kafka: RealKafka, proposal: dict[str, Any], before: dict[Any, Any]) -> None:
    wanted = targets(proposal)
    for key, view in kafka.led_by_first_replicas().items():
        assert view.replicas == wanted.get(key, before[key].replicas), key


def test_execute_killed_with_sigkill_then_run_again_resumes_and_cleans_up(
    real_kafka: RealKafka, tmp_path: Path
) -> None:
    written = _fill(real_kafka)
    proposal = snapshot_and_plan(real_kafka, tmp_path)
    before = real_kafka.partitions()
    watch = watch_for(real_kafka, MIN_ISR)

    first = execute(real_kafka, tmp_path, "--throttle", THROTTLE)
    run_watched(real_kafka, first, watch, until=lambda: in_flight(tmp_path))
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert state_record(tmp_path)["state"] == "MovingReplicas"
    assert real_kafka.throttle_leftovers(), "the killed process could not remove its throttles"

    again = execute(real_kafka, tmp_path, "--throttle", THROTTLE)
    run_watched(real_kafka, again, watch)
    assert finish(again) == 0, (tmp_path / "execute.log").read_text()

    assert state_record(tmp_path)["state"] == "Completed"
    assert not watch.violations, watch.violations
    _assert_done(real_kafka, proposal, before)
    no_throttle_left(real_kafka.throttle_leftovers)
    _assert_intact(real_kafka, written)


def test_a_broker_stopped_mid_run_holds_its_moves_until_it_returns(real_kafka: RealKafka, tmp_path: Path) -> None:
    written = _fill(real_kafka)
    proposal = snapshot_and_plan(real_kafka, tmp_path)
    before = real_kafka.partitions()
    onto_6 = {key for key, replicas in targets(proposal).items() if 6 in replicas}
    assert onto_6, "the plan moves replicas onto broker 6"
    watch = watch_for(real_kafka, MIN_ISR)
    proc = execute(real_kafka, tmp_path, "--throttle", THROTTLE)
    run_watched(real_kafka, proc, watch, until=lambda: in_flight(tmp_path))

    real_kafka.stop_broker(6)  # SIGTERM: a controlled shutdown
    watch.faulted.add(6)

    # The replica moves that do not touch broker 6 finish; those onto it wait (nothing is given up).
    # Leader-only changes (same replicas, new order) come after every move, so they wait too.
    def only_broker_6_left() -> bool:
        now = real_kafka.partitions()
        pending = {k for k, t in targets(proposal).items() if set(now[k].replicas) != set(t)}
        return bool(pending) and pending <= onto_6

    run_watched(real_kafka, proc, watch, until=only_broker_6_left)
    assert proc.poll() is None, "execute ended while broker 6 was down"
    moved_elsewhere = sum(
        1 for k, t in targets(proposal).items() if set(t) != set(before[k].replicas) and k not in onto_6
    )

    def holds_broker_6() -> bool:
        # The run kept polling while broker 6 was down: it retired every other move (completed in its
        # record) and still holds the moves onto broker 6 in flight, none given up.
        record = state_record(tmp_path)
        flying = {(t, p) for t, p, *_ in record.get("inFlight", [])}
        completed = sum(int(n) for code, n in task_runs(record.get("tasks", "")) if code == "c")
        return bool(flying) and flying <= onto_6 and completed >= moved_elsewhere

    run_watched(real_kafka, proc, watch, until=holds_broker_6)
    assert proc.poll() is None, (tmp_path / "execute.log").read_text()[-3000:]
    assert "d" not in {code for code, _ in task_runs(state_record(tmp_path).get("tasks", ""))}, "a move was given up"
    real_kafka.start_broker(6)
    run_watched(real_kafka, proc, watch)
    assert finish(proc) == 0, (tmp_path / "execute.log").read_text()

    assert not watch.violations, watch.violations
    _assert_done(real_kafka, proposal, before)
    no_throttle_left(real_kafka.throttle_leftovers)
    _assert_intact(real_kafka, written)


def test_stop_from_another_process_cancels_in_flight_moves_back_to_their_replicas(
    real_kafka: RealKafka, tmp_path: Path
) -> None:
    written = _fill(real_kafka)
    proposal = snapshot_and_plan(real_kafka, tmp_path)
    before = real_kafka.partitions()
    watch = watch_for(real_kafka, MIN_ISR)
    proc = execute(real_kafka, tmp_path, "--throttle", THROTTLE)
    run_watched(real_kafka, proc, watch, until=lambda: in_flight(tmp_path))

    stopped = cli("stop", "--state", str(tmp_path / "state.json"), "--timeout", "60")

    assert stopped.returncode == 0, stopped.stderr
    assert finish(proc) == 3, (tmp_path / "execute.log").read_text()  # exit status 3: stopped
    record = state_record(tmp_path)
    assert record["state"] == "Stopped"
    assert record["inFlight"] == []
    summary = json.loads(stopped.stdout)
    assert summary["state"] == "Stopped"
    cancelled = [line for line in (tmp_path / "execute.log").read_text().splitlines() if line.startswith("cancelled")]
    assert cancelled, (tmp_path / "execute.log").read_text()
    after = real_kafka.partitions()
    wanted = targets(proposal)
    for name in cancelled[0].split(": ", 1)[1].split(", "):
        topic, _, p = name.rpartition("-")
        key = (topic, int(p))
        assert after[key].replicas == before[key].replicas, f"{name} not back on its original replicas"
        assert set(after[key].isr) == set(before[key].replicas), name
    for key, view in after.items():
        assert view.replicas in (before[key].replicas, wanted.get(key, before[key].replicas)), key
    assert any(view.replicas != before[key].replicas for key, view in after.items()), "nothing completed"
    assert not watch.violations, watch.violations
    no_throttle_left(real_kafka.throttle_leftovers)
    _assert_intact(real_kafka, written)


def test_a_throttle_set_by_hand_before_the_run_is_still_there_afterwards(real_kafka: RealKafka, tmp_path: Path) -> None:
    written = _fill(real_kafka)
    proposal = snapshot_and_plan(real_kafka, tmp_path)
    before = real_kafka.partitions()
    by_hand = {"broker 5": {FOLLOWER_THROTTLE_RATE: "7000000"}, "broker 1": {LEADER_THROTTLE_RATE: "9000000"}}
    # The operator's own throttles, set with Kafka's tools before the run.
    real_kafka.set_broker_configs({5: {FOLLOWER_THROTTLE_RATE: "7000000"}, 1: {LEADER_THROTTLE_RATE: "9000000"}})
    real_kafka.wait_until(lambda: real_kafka.throttle_leftovers() == by_hand, "the operator's throttles")
    watch = watch_for(real_kafka, MIN_ISR)

    proc = execute(real_kafka, tmp_path, "--throttle", "20MB/s")
    run_watched(real_kafka, proc, watch)
    assert finish(proc) == 0, (tmp_path / "execute.log").read_text()

    assert not watch.violations, watch.violations
    _assert_done(real_kafka, proposal, before)
    assert real_kafka.throttle_leftovers() == by_hand
    _assert_intact(real_kafka, written)

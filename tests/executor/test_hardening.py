"""Execution safety under a careful operator and an unlucky cluster (issue 37, items 1-7), on the emulator
and on real Kafka 4.3.1 brokers: `kafka-balancer execute` and `stop` as separate processes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.kafka.port import (
    FOLLOWER_THROTTLE_RATE,
    LEADER_THROTTLE_RATE,
    LEADER_THROTTLED_REPLICAS,
    ListChange,
)
from kafka_targets import BACKENDS, KafkaTarget, converge, no_throttle_left, wait_until

CLI = str(Path(sys.executable).parent / "kafka-balancer")
RECORD = 10_000
backends = pytest.mark.parametrize("kafka_target", BACKENDS, indirect=True)


def _plan(path: Path, targets: dict[tuple[str, int], list[int]]) -> Path:
    doc = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in targets.items()]}
    path.write_text(json.dumps(doc))
    return path


def _execute(target: KafkaTarget, work: Path, *extra: str) -> subprocess.Popen[str]:
    args = [CLI, "execute", "--bootstrap-servers", target.bootstrap_servers, "--plan", str(work / "plan.json")]
    args += ["--state", str(work / "state.json"), "--poll-interval", "0.3", "--quiet", *extra]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str], timeout_s: float = 120) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def _record(work: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads((work / "state.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return data


def _replicas(target: KafkaTarget) -> dict[tuple[str, int], tuple[int, ...]]:
    model = target.adapter().read_cluster(with_sizes=False)
    return {(p.topic, p.partition): p.replicas for p in model.partitions()}


def _orders(target: KafkaTarget, partitions: int = 6, records: int = 600) -> None:
    """orders: partitions of 6 MB on brokers 1-3 (RF 3, min.insync.replicas 2)."""
    target.create_topic(
        "orders", [[1 + (p + k) % 3 for k in range(3)] for p in range(partitions)], {"min.insync.replicas": "2"}
    )
    for p in range(partitions):
        target.fill("orders", p, records=records, record_bytes=RECORD)


# ----- 1 and 2: min.insync.replicas --------------------------------------------------------------
@backends
def test_execute_refuses_targets_shorter_than_the_effective_min_isr_before_sending_anything(
    kafka_target: KafkaTarget, tmp_path: Path
) -> None:
    """orders sets min.insync.replicas=2 on the topic; plain inherits 2 from the cluster-wide broker
    default. Shrinking either to one replica would make acks=all producers fail: refused, nothing sent."""
    kafka_target.create_topic("orders", [[1, 2, 3]], {"min.insync.replicas": "2"})
    kafka_target.create_topic("plain", [[1, 2, 3]])
    kafka_target.set_cluster_default("min.insync.replicas", "2", effective="2")
    try:
        model = kafka_target.adapter().read_cluster(with_sizes=False)
        assert {s.name: s.min_insync_replicas for s in model.topic_settings()} == {"orders": 2, "plain": 2}
        _plan(tmp_path / "plan.json", {("orders", 0): [1], ("plain", 0): [2]})
        before = _replicas(kafka_target)

        code, _, err = _finish(_execute(kafka_target, tmp_path, "--throttle", "10MB/s"))

        assert code == 2, err
        assert "orders-0" in err
        assert "plain-0" in err
        assert "min.insync.replicas 2" in err
        assert not (tmp_path / "state.json").exists()
        assert _replicas(kafka_target) == before
        assert kafka_target.adapter().list_reassignments() == {}
        assert kafka_target.throttle_leftovers() == {}
    finally:
        # With eligible leader replicas (KIP-966, on by default in Kafka 4.x) the cluster-level
        # min.insync.replicas cannot be deleted, only set.
        kafka_target.set_cluster_default("min.insync.replicas", "1", effective="1")


# ----- 3: every exit path winds down ---------------------------------------------------------------
@backends
def test_a_topic_deleted_mid_run_is_dead_and_the_run_cleans_up(kafka_target: KafkaTarget, tmp_path: Path) -> None:
    _orders(kafka_target)
    kafka_target.create_topic("doomed", [[1, 2, 3], [2, 3, 1]])
    for p in (0, 1):
        kafka_target.fill("doomed", p, records=600, record_bytes=RECORD)
    targets = {("doomed", 0): [1, 2, 4], ("doomed", 1): [2, 3, 5]}
    targets |= {("orders", p): [*[1 + (p + k) % 3 for k in range(2)], 4 + p % 3] for p in range(6)}
    _plan(tmp_path / "plan.json", targets)
    proc = _execute(kafka_target, tmp_path, "--throttle", "2MB/s", "--concurrent-moves-per-broker", "2")
    wait_until(lambda: any(t == "doomed" for t, *_ in _record(tmp_path).get("inFlight", [])), "doomed in flight")

    admin = kafka_target.adapter()
    from confluent_kafka.admin import AdminClient

    deleter = AdminClient({"bootstrap.servers": kafka_target.bootstrap_servers})
    deleter.delete_topics(["doomed"])["doomed"].result(30)

    code, _out, err = _finish(proc, timeout_s=180)
    assert code == 1, err  # failed: two partitions could not be moved
    assert "Traceback" not in err
    record = _record(tmp_path)
    assert record["state"] == "Failed"
    assert record["inFlight"] == []
    assert "doomed-0" in record["deadReasons"]
    assert "no longer exists" in record["deadReasons"]["doomed-0"]
    assert "throttles not removed" not in record["reason"]
    assert all(_replicas(kafka_target)[("orders", p)] == tuple(targets[("orders", p)]) for p in range(6))
    assert admin.list_reassignments() == {}
    no_throttle_left(kafka_target.throttle_leftovers)
    stop = subprocess.run(
        [CLI, "stop", "--state", str(tmp_path / "state.json")], capture_output=True, text=True, check=False
    )
    assert stop.returncode == 0
    assert "throttles not removed" not in stop.stdout + stop.stderr


@pytest.mark.parametrize(
    "option", ["--poll-interval", "--stuck-after", "--give-up-blocked-after"], ids=lambda o: o.strip("-")
)
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_nan_and_infinity_are_refused_before_anything_is_sent(tmp_path: Path, option: str, value: str) -> None:
    _plan(tmp_path / "plan.json", {("orders", 0): [1, 2, 4]})
    result = subprocess.run(
        [CLI, "execute", "--bootstrap-servers", "127.0.0.1:1", "--plan", str(tmp_path / "plan.json"),
         "--state", str(tmp_path / "state.json"), f"{option}={value}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert option in result.stderr
    assert "finite" in result.stderr
    assert not (tmp_path / "state.json").exists()


# ----- 4: cancel and adopt only our own ------------------------------------------------------------
@backends
def test_stop_after_a_crash_cancels_only_our_own_moves_and_counts_finished_ones(
    kafka_target: KafkaTarget, tmp_path: Path
) -> None:
    # 12 MB partitions at 500 KB/s: a real broker's throttle lets about its first 10 s of quota through
    # at once (the rate is measured over 11 one-second windows), so smaller moves would end at once.
    _orders(kafka_target, records=1200)
    targets = {("orders", p): [*[1 + (p + k) % 3 for k in range(2)], 4 + p % 3] for p in range(6)}
    _plan(tmp_path / "plan.json", targets)
    proc = _execute(kafka_target, tmp_path, "--throttle", "500KB/s", "--concurrent-moves-per-broker", "1")
    adapter = kafka_target.adapter()
    from kafka_balancer.kafka.port import TopicPartition

    def running_in_kafka() -> list[tuple[str, int]]:
        # The record names a move before it is submitted: wait until Kafka runs them.
        running = adapter.list_reassignments()
        return [(t, p) for t, p, *_ in _record(tmp_path).get("inFlight", []) if TopicPartition(t, p) in running]

    wait_until(lambda: len(running_in_kafka()) >= 2, "two moves running in Kafka")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    ours = running_in_kafka()
    # Someone cancels one of our in-flight moves and starts their own reassignment of that partition.
    foreign_tp, finished_tp = ours[0], ours[1]
    first = TopicPartition(*foreign_tp)
    assert adapter.alter_reassignments({first: None}) == {first: None}
    wait_until(lambda: first not in adapter.list_reassignments(), "their cancel")
    current = _replicas(kafka_target)[foreign_tp]
    theirs = [*current[:2], 6 if 6 not in current else 5]
    # Throttled like ours (the brokers keep the killed run's rates), so it is still running at the stop.
    entry = f"{first.partition}:{theirs[2]}"
    adapter.alter_topic_configs({"orders": {"follower.replication.throttled.replicas": ListChange(append=(entry,))}})
    assert adapter.alter_reassignments({first: theirs}) == {first: None}
    # Our second move finishes while no executor runs.
    wait_until(lambda: TopicPartition(*finished_tp) not in adapter.list_reassignments(), "our move to finish", 60)

    stop = subprocess.run(
        [CLI, "stop", "--state", str(tmp_path / "state.json")], capture_output=True, text=True, check=False
    )

    assert stop.returncode == 0, stop.stderr
    # Not cancelled: their move goes on (at full speed once our throttles are gone) to their target.
    wait_until(lambda: _replicas(kafka_target)[foreign_tp] == tuple(theirs), "their move to finish", 60)
    after = _record(tmp_path)
    states = dict(zip(sorted(targets), _expand(after["tasks"]), strict=True))
    assert states[finished_tp] == "c", after
    assert states[foreign_tp] == "d", after
    assert "another reassignment" in after["deadReasons"][f"{foreign_tp[0]}-{foreign_tp[1]}"]


def _expand(tasks: str) -> list[str]:
    import re

    return [code for code, n in re.findall(r"([a-z])(\d+)", tasks) for _ in range(int(n))]


@backends
def test_a_fresh_run_does_not_adopt_a_foreign_reassignment_with_the_plans_target(
    kafka_target: KafkaTarget, tmp_path: Path
) -> None:
    _orders(kafka_target, partitions=2)
    from kafka_balancer.kafka.port import TopicPartition

    adapter = kafka_target.adapter()
    tp = TopicPartition("orders", 0)
    target = [1, 2, 4]
    # Someone else's reassignment, throttled to 1 KB/s: its 6 MB outlast the test, so the run, which must
    # not take it over, is still waiting for it when it is stopped (however slowly the machine runs).
    adapter.alter_broker_configs({4: {FOLLOWER_THROTTLE_RATE: "1000"}})
    adapter.alter_topic_configs({"orders": {"follower.replication.throttled.replicas": "0:4"}})
    assert adapter.alter_reassignments({tp: target}) == {tp: None}
    _plan(tmp_path / "plan.json", {("orders", 0): target, ("orders", 1): [2, 3, 5]})

    proc = _execute(kafka_target, tmp_path, "--throttle", "20MB/s")
    wait_until(lambda: _record(tmp_path).get("state") == "MovingReplicas", "the run to start")

    def own_move_submitted() -> bool:
        # Its own move (orders-1) in flight or done: the run has polled the cluster, seen the foreign
        # reassignment of orders-0 and left it alone, before it is stopped.
        record = _record(tmp_path)
        return any(m[:2] == ["orders", 1] for m in record.get("inFlight", [])) or "c" in record.get("tasks", "")

    wait_until(own_move_submitted, "the run to submit its own move")
    stop = subprocess.run(
        [CLI, "stop", "--state", str(tmp_path / "state.json")], capture_output=True, text=True, check=False
    )
    code, _out, err = _finish(proc)

    assert stop.returncode == 0, stop.stderr
    assert code == 3, err
    assert tp in adapter.list_reassignments(), "the run adopted, then cancelled, someone else's reassignment"
    assert adapter.list_reassignments()[tp].target == tuple(target)
    adapter.alter_reassignments({tp: None})
    adapter.alter_broker_configs({4: {FOLLOWER_THROTTLE_RATE: None}})
    adapter.alter_topic_configs({"orders": {"follower.replication.throttled.replicas": None}})


# ----- 5: throttles of others survive --------------------------------------------------------------
@backends
def test_throttle_entries_and_rates_others_change_mid_run_are_left_alone(
    kafka_target: KafkaTarget, tmp_path: Path
) -> None:
    _orders(kafka_target)
    targets = {("orders", p): [*[1 + (p + k) % 3 for k in range(2)], 4 + p % 3] for p in range(6)}
    _plan(tmp_path / "plan.json", targets)
    proc = _execute(kafka_target, tmp_path, "--throttle", "2MB/s", "--concurrent-moves-per-broker", "1")
    wait_until(lambda: bool(_record(tmp_path).get("inFlight")), "a move in flight")
    adapter = kafka_target.adapter()
    # Another person throttles a replica of a partition the plan does not move, with the
    # incremental APPEND of kafka-configs.sh --add-config, and sets their own rate on broker 2.
    from kafka.admin import AlterConfigOp, ConfigResourceType, KafkaAdminClient
    from kafka.admin import ConfigResource as KpConfigResource

    admin = KafkaAdminClient(bootstrap_servers=kafka_target.bootstrap_servers.split(","))
    try:
        entry = {LEADER_THROTTLED_REPLICAS: (AlterConfigOp.APPEND, "99:6")}
        admin.alter_configs([KpConfigResource(ConfigResourceType.TOPIC, "orders", entry)])
    finally:
        admin.close()
    adapter.alter_broker_configs({2: {LEADER_THROTTLE_RATE: "1234567"}})

    code, _, err = _finish(proc, timeout_s=180)

    assert code == 0, err
    converge(
        kafka_target.throttle_leftovers,
        {"topic orders": {LEADER_THROTTLED_REPLICAS: "99:6"}, "broker 2": {LEADER_THROTTLE_RATE: "1234567"}},
        "only the other person's throttles",
    )


# ----- 6: one executor per state file --------------------------------------------------------------
@backends
def test_a_second_execute_on_the_same_state_refuses_naming_the_first(kafka_target: KafkaTarget, tmp_path: Path) -> None:
    _orders(kafka_target)
    _plan(tmp_path / "plan.json", {("orders", p): [*[1 + (p + k) % 3 for k in range(2)], 4 + p % 3] for p in range(6)})
    first = _execute(kafka_target, tmp_path, "--throttle", "2MB/s")
    wait_until(lambda: bool(_record(tmp_path).get("inFlight")), "the first run to move")

    code, _, err = _finish(_execute(kafka_target, tmp_path, "--throttle", "2MB/s"), timeout_s=60)

    assert code == 2
    assert f"pid {first.pid}" in err
    assert err.count("\n") == 1, err
    assert first.poll() is None
    first.send_signal(signal.SIGTERM)
    assert _finish(first)[0] == 3


# ----- 7: a broker down at start ---------------------------------------------------------------------
@backends
def test_a_new_broker_down_at_start_waits_offline_and_is_throttled_when_it_returns(
    kafka_target: KafkaTarget, tmp_path: Path
) -> None:
    _orders(kafka_target)
    kafka_target.stop_broker(6)
    targets = {("orders", p): [*[1 + (p + k) % 3 for k in range(2)], 6 if p % 2 else 4] for p in range(6)}
    _plan(tmp_path / "plan.json", targets)
    proc = _execute(kafka_target, tmp_path, "--throttle", "2MB/s")

    # The moves onto broker 4 run; those onto broker 6 wait for it (not refused as "unknown").
    def only_broker_6_left() -> bool:
        assert proc.poll() is None, _finish(proc)
        now = _replicas(kafka_target)
        return all(now[k] == tuple(v) for k, v in targets.items() if 6 not in v)

    wait_until(only_broker_6_left, "the moves onto broker 4", timeout_s=120)
    assert all(6 not in r for r in _replicas(kafka_target).values())

    kafka_target.start_broker(6)
    adapter = kafka_target.adapter()
    wait_until(lambda: adapter.broker_configs([6])[6].get(FOLLOWER_THROTTLE_RATE) == "2000000", "broker 6 throttled")

    code, _, err = _finish(proc, timeout_s=180)
    assert code == 0, err
    assert all(_replicas(kafka_target)[k] == tuple(v) for k, v in targets.items())
    no_throttle_left(kafka_target.throttle_leftovers)

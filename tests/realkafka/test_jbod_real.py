"""JBOD on real Kafka 4.3.1 brokers (issue 34): one `kafka-balancer execute` of one reassignment JSON
(`log_dirs` as kafka-reassign-partitions.sh takes it) moves replicas between brokers into named log
directories and between a broker's own directories, off a skewed directory, under both throttles;
afterwards every replica is in its directory, every record is still there, no throttle is left.

The first test runs a hand-written plan (the executor alone); the second the planner's own, from a
`snapshot` of the cluster: every directory ends within its broker's band and under its limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import LOG_DIR_THROTTLE_RATE, LOG_DIRS, TopicPartition
from kafka_balancer.metrics import LOG_DIR_METRIC_NAMES, Metrics, PolicyKey, log_dir_samples
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.log_dir_usage import log_dir_usage
from kafka_balancer.report import render_report
from kafka_targets import no_throttle_left
from real_kafka import RealKafka

from realkafka.workflow import execute, finish, run_watched, snapshot_and_plan, watch_for

MB = 1_000_000
RECORD = 10_000
TOPIC = "ledger"
PARTITIONS = 6


def test_one_execute_moves_replicas_between_brokers_and_between_directories(
    real_kafka: RealKafka, tmp_path: Path
) -> None:
    adapter = KafkaAdapter(ConnectionSpec(real_kafka.bootstrap_servers))
    try:
        assignment = [[1 + p % 3, 1 + (p + 1) % 3] for p in range(PARTITIONS)]
        real_kafka.create_topic(TOPIC, assignment, {"min.insync.replicas": "1"})
        dirs, replicas = _skew_into_first_directories(adapter, real_kafka, TOPIC, assignment)
        written = real_kafka.produce(
            TOPIC, partitions=range(PARTITIONS), records_per_partition=8 * MB // RECORD, record_bytes=RECORD
        )
        second = {b: ds[1] for b, ds in dirs.items()}
        plan = {
            "version": 1,
            "partitions": [
                # Between a broker's directories: same replicas, another directory.
                {"topic": TOPIC, "partition": 0, "replicas": [1, 2], "log_dirs": [second[1], "any"]},
                {"topic": TOPIC, "partition": 1, "replicas": [2, 3], "log_dirs": [second[2], second[3]]},
                # Between brokers, into a named directory of the receiving broker.
                {"topic": TOPIC, "partition": 2, "replicas": [3, 4], "log_dirs": ["any", second[4]]},
                # Both at once, and a new preferred leader.
                {"topic": TOPIC, "partition": 3, "replicas": [5, 1], "log_dirs": [second[5], second[1]]},
            ],
        }
        (tmp_path / "plan.json").write_text(json.dumps(plan))
        watch = watch_for(real_kafka, {TOPIC: 1})
        dir_throttled: set[str] = set()

        def see_dir_throttles() -> bool:
            if watch.polls % 3 == 0:
                dir_throttled.update(
                    b for b, found in real_kafka.throttle_leftovers().items() if LOG_DIR_THROTTLE_RATE in found
                )
            return False

        proc = execute(real_kafka, tmp_path, "--throttle", "5MB/s", plan="plan.json")
        seconds = run_watched(real_kafka, proc, watch, until=see_dir_throttles)
        code = finish(proc)

        log = (tmp_path / "execute.log").read_text()
        assert code == 0, log
        assert not watch.violations, watch.violations
        assert dir_throttled, "no broker's replica.alter.log.dirs.io.max.bytes.per.second was seen during the run"
        after = real_kafka.led_by_first_replicas()
        named = {}
        for entry in plan["partitions"]:
            view = after[(TOPIC, entry["partition"])]
            assert list(view.replicas) == entry["replicas"], entry
            assert view.leader == entry["replicas"][0], entry
            for b, path in zip(entry["replicas"], entry["log_dirs"], strict=True):
                if path != "any":
                    named[(TopicPartition(TOPIC, entry["partition"]), b)] = path
        found = adapter.replica_log_dirs(named)
        assert {k: (d.path, d.future_path) for k, d in found.items()} == {k: (p, None) for k, p in named.items()}
        no_throttle_left(real_kafka.throttle_leftovers)
        assert real_kafka.read_back(TOPIC, range(PARTITIONS)) == written
        # broker 1's first directory, the skewed one, gave up what the plan moved off it
        on_first = {tp for (tp, b), d in adapter.replica_log_dirs(replicas).items() if b == 1 and d.path == dirs[1][0]}
        assert TopicPartition(TOPIC, 0) not in on_first
        _shows_the_real_directories(adapter.read_cluster(with_sizes=True), dirs, second)
        print(f"JBOD execute: {len(named)} replicas into named directories in {seconds:.1f} s ({watch.polls} polls)")
    finally:
        adapter.close()


SPREAD = "spread"
SPREAD_PARTITIONS = 48


def _skew_into_first_directories(
    adapter: KafkaAdapter, kafka: RealKafka, topic: str, assignment: list[list[int]]
) -> tuple[dict[int, list[str]], list[tuple[TopicPartition, int]]]:
    """The skew: every replica of ``topic`` (still empty) in its broker's first log directory. Returns
    each broker's directories and the replicas."""
    dirs = {b: adapter.broker_configs([b])[b][LOG_DIRS].split(",") for b in kafka.broker_ids}
    replicas = [(TopicPartition(topic, p), b) for p, rs in enumerate(assignment) for b in rs]
    assert all(e is None for e in adapter.alter_replica_log_dirs({r: dirs[r[1]][0] for r in replicas}).values())
    kafka.wait_until(
        lambda: all(d.path == dirs[b][0] and d.future_path is None
                    for (_, b), d in adapter.replica_log_dirs(replicas).items()),
        "every replica in the first directory",
    )  # fmt: skip
    return dirs, replicas


def _bytes_per_dir(kafka: RealKafka, topic: str) -> dict[int, dict[str, tuple[int, int, int]]]:
    """broker -> log directory -> (bytes of ``topic``'s replicas in it, its largest one, its volume's
    size), as DescribeLogDirs v4+ reports them."""
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        out: dict[int, dict[str, tuple[int, int, int]]] = {}
        for b in kafka.broker_ids:
            [entry] = admin.describe_log_dirs(brokers=[b])
            out[b] = {}
            for d in entry["log_dirs"]:
                sizes = [p["partition_size"] for t in d["topics"] if t["name"] == topic for p in t["partitions"]]
                out[b][d["log_dir"]] = (sum(sizes), max(sizes, default=0), d["total_bytes"])
        return out
    finally:
        admin.close()


def _outside_band(held: dict[int, dict[str, tuple[int, int, int]]], threshold: float) -> list[tuple[int, str, float]]:
    """Directories outside ±threshold of their broker's average (the volumes are equal: one file system),
    the band widened by the broker's largest replica (docs/goals.md, "Log directories")."""
    bad = []
    for b, dirs in held.items():
        avg = sum(h for h, _, _ in dirs.values()) / len(dirs)
        grain = max(g for _, g, _ in dirs.values())
        low, high = avg * (2 - threshold) - grain, avg * threshold + grain
        bad += [(b, d, h / avg) for d, (h, _, _) in dirs.items() if avg and not low <= h <= high]
    return bad


def test_a_planned_proposal_balances_brokers_and_their_directories_in_one_execute(
    real_kafka: RealKafka, tmp_path: Path
) -> None:
    adapter = KafkaAdapter(ConnectionSpec(real_kafka.bootstrap_servers))
    try:
        # Brokers 1-4 hold every replica, each in its first directory; brokers 5 and 6 are empty.
        assignment = [[1 + p % 4, 1 + (p + 1) % 4] for p in range(SPREAD_PARTITIONS)]
        real_kafka.create_topic(SPREAD, assignment, {"min.insync.replicas": "1"})
        _skew_into_first_directories(adapter, real_kafka, SPREAD, assignment)
        written = real_kafka.produce(
            SPREAD, partitions=range(SPREAD_PARTITIONS), records_per_partition=50, record_bytes=RECORD
        )
        before = _bytes_per_dir(real_kafka, SPREAD)
        assert _outside_band({b: before[b] for b in (1, 2, 3, 4)}, 1.10)  # the check below is not vacuous

        proposal = snapshot_and_plan(real_kafka, tmp_path, "--topics", SPREAD)
        summary = proposal["summary"]
        assert summary["hardGoals"]["log-dir-capacity"] is True
        assert summary["goals"]["log-dir-distribution"]["holdsAfter"] is True
        entries = proposal["plan"]["partitions"]
        original = {p: set(rs) for p, rs in enumerate(assignment)}
        between_brokers = [e for e in entries if set(e["replicas"]) != original[e["partition"]]]
        between_dirs = [
            e for e in entries
            if any(d != "any" and b in original[e["partition"]]
                   for b, d in zip(e["replicas"], e.get("log_dirs", ["any"] * len(e["replicas"])), strict=True))
        ]  # fmt: skip
        assert between_brokers
        assert between_dirs

        watch = watch_for(real_kafka, {SPREAD: 1})
        proc = execute(real_kafka, tmp_path, "--throttle", "10MB/s")
        seconds = run_watched(real_kafka, proc, watch)
        code = finish(proc)
        assert code == 0, (tmp_path / "execute.log").read_text()
        assert not watch.violations, watch.violations

        after = _bytes_per_dir(real_kafka, SPREAD)
        assert _outside_band(after, 1.10) == []
        assert all(h <= 0.8 * size for dirs in after.values() for h, _, size in dirs.values())
        assert all(sum(h for h, _, _ in after[b].values()) > 0 for b in (5, 6))
        assert real_kafka.read_back(SPREAD, range(SPREAD_PARTITIONS)) == written
        no_throttle_left(real_kafka.throttle_leftovers)
        worst = max(
            h / (sum(x for x, _, _ in ds.values()) / len(ds)) for ds in after.values() for h, _, _ in ds.values()
        )
        print(
            f"JBOD plan+execute: {len(between_brokers)} partitions between brokers, {len(between_dirs)} with a "
            f"replica between directories, in {seconds:.1f} s; largest directory over its broker's average: {worst:.3f}"
        )
    finally:
        adapter.close()


def _shows_the_real_directories(model: ClusterModel, dirs: dict[int, list[str]], second: dict[int, str]) -> None:
    """The report's per-directory table and the log-directory metrics, of the cluster as read after the
    run: every real directory, each holding the sizes of the replicas DescribeLogDirs lists in it."""
    usage = log_dir_usage(model)
    held = {(u.broker_id, u.path): u.bytes for u in usage}
    assert {b: [path for broker, path in held if broker == b] for b in dirs} == dirs
    expected: dict[tuple[int, str | None], float] = {}
    for p in range(model.num_partitions):
        for b in model.replica_ids(p):
            key = (b, model.replica_log_dir(p, b))
            expected[key] = expected.get(key, 0.0) + float(model.size_bytes[p])
    assert held == pytest.approx({key: expected.get(key, 0.0) for key in held})
    moved = sum(float(model.size_bytes[model.partition_index(TOPIC, p)]) for p in (0, 3))
    assert held[(1, second[1])] >= moved > 0  # broker 1's ledger-0 and ledger-3, put in its second directory
    html = render_report(model, model, {})
    assert all(f'data-log-dir="{path}"' in html for paths in dirs.values() for path in paths)
    metrics = Metrics()
    metrics.set_analysis_samples(PolicyKey("p", "ns", "c"), log_dir_samples(usage), replaces=LOG_DIR_METRIC_NAMES)
    assert f'broker="1",cluster="c",log_dir="{second[1]}"' in metrics.exposition().decode()
    print("log directories after:", {f"{b}:{path}": round(v / MB, 1) for (b, path), v in held.items() if v}, "MB")

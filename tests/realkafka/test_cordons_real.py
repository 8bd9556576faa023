"""Cordoned log directories (KIP-1066) on real Kafka 4.3.1 brokers: `snapshot`, `plan` and `execute`
as separate processes. Kafka itself accepts a reassignment onto a broker whose every log directory is
cordoned (it only keeps new topics off it), so it is the plan that must respect the cordon."""

from __future__ import annotations

import json
from pathlib import Path

from kafka.admin import KafkaAdminClient
from kafka_balancer.kafka.port import CORDONED_LOG_DIRS
from real_kafka import RealKafka

from realkafka.workflow import execute, finish, snapshot_and_plan, targets

RECORD = 10_000
CORDONED, HALF_CORDONED = 5, 6  # brokers 5 and 6 are new and empty; 1-4 hold every topic


def _replica_dirs(kafka: RealKafka, broker: int) -> dict[str, list[tuple[str, int]]]:
    """Each log directory of ``broker`` with the user partitions' replicas in it (DescribeLogDirs)."""
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        [entry] = admin.describe_log_dirs(brokers=[broker])
    finally:
        admin.close()
    return {
        d["log_dir"]: [
            (t["name"], p["partition_index"])
            for t in d["topics"]
            if not t["name"].startswith("__")
            for p in t["partitions"]
        ]
        for d in entry["log_dirs"]
    }


def test_a_cordoned_broker_receives_nothing_from_a_real_plan_and_a_cordoned_directory_nothing(
    real_kafka: RealKafka, tmp_path: Path
) -> None:
    for i, name in enumerate(("clicks", "orders")):
        real_kafka.create_topic(name, [[1 + (i + p + k) % 4 for k in range(2)] for p in range(8)])
        real_kafka.produce(name, partitions=range(8), records_per_partition=100, record_bytes=RECORD)
    half = sorted(_replica_dirs(real_kafka, HALF_CORDONED))[0]
    real_kafka.set_broker_configs({CORDONED: {CORDONED_LOG_DIRS: "*"}, HALF_CORDONED: {CORDONED_LOG_DIRS: half}})
    real_kafka.wait_until(lambda: _cordons_seen(real_kafka), "the brokers to report their cordons")

    proposal = snapshot_and_plan(real_kafka, tmp_path)
    snapshot = json.loads((tmp_path / "snapshot.json").read_text())
    dirs = {b["id"]: [d["cordoned"] for d in b["logDirs"]] for b in snapshot["brokers"]}
    assert dirs[CORDONED] == [True, True]
    assert dirs[HALF_CORDONED] == [True, False]
    assert proposal["summary"]["hardGoals"]["cordoned-log-dirs"] is True
    wanted = targets(proposal)
    receivers = {b for replicas in wanted.values() for b in replicas}
    assert HALF_CORDONED in receivers, "the half-cordoned broker takes its share"
    assert CORDONED not in receivers

    code = finish(execute(real_kafka, tmp_path))
    assert code == 0, (tmp_path / "execute.log").read_text()
    after = real_kafka.partitions()
    assert all(CORDONED not in view.replicas for view in after.values())
    placed = _replica_dirs(real_kafka, HALF_CORDONED)
    assert placed[half] == [], placed
    assert sum(len(v) for v in placed.values()) == sum(HALF_CORDONED in r for r in wanted.values())


def _cordons_seen(kafka: RealKafka) -> bool:
    """Both brokers report their new cordoned.log.dirs (a dynamic config reaches a broker in a moment)."""
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        seen = [
            d["is_cordoned"]
            for b in (CORDONED, HALF_CORDONED)
            for d in admin.describe_log_dirs(brokers=[b])[0]["log_dirs"]
        ]
    finally:
        admin.close()
    return sorted(seen) == [False, True, True, True]

"""Tiered storage (KIP-405) on real Kafka 4.3.1 brokers: a plan moving tiered partitions copies what it
said, measured on the brokers, and every record reads back, the tiered ones included (issue 54).

The session's brokers keep closed segments of a topic with ``remote.storage.enable=true`` in remote
storage (LocalTieredStorage) and delete them locally past ``local.retention.bytes``. A new follower
copies the leader's local log, or, where the brokers fetch from the last tiered offset (KIP-1023,
``follower.fetch.last.tiered.offset.enable``), only the part not yet tiered.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import raw_client
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import FETCH_LAST_TIERED_OFFSET, TopicPartition
from kafka_targets import converge, no_throttle_left
from real_kafka import RealKafka

from realkafka.workflow import execute, finish, run_watched, snapshot_and_plan, targets, watch_for

MiB = 1024 * 1024
RECORD = 4096
TIERED = {
    "remote.storage.enable": "true",
    "segment.bytes": str(MiB),  # Kafka's smallest: closed segments to tier after every MiB
    "local.retention.bytes": str(MiB),
    "retention.bytes": "-1",
}
PARTITIONS = 4
RECORDS = 2000  # 8 MB a partition, all but 1-2 MiB of it in remote storage once tiered


def _tiered(kafka: RealKafka) -> bool:
    """Every tiered partition has its closed segments in remote storage and only 1-3 MiB on disk."""
    adapter = kafka_adapter(kafka)
    try:
        model = adapter.read_cluster()
    finally:
        adapter.close()
    if model.remote_bytes is None:
        return False
    rows = [model.partition_index("logs", p) for p in range(PARTITIONS)]
    return all(model.remote_bytes[p] > 4 * MiB and model.size_bytes[p] <= 3 * MiB for p in rows)


def kafka_adapter(kafka: RealKafka) -> KafkaAdapter:
    return KafkaAdapter(ConnectionSpec(kafka.bootstrap_servers))


@pytest.mark.parametrize("last_tiered", [False, True], ids=["local-log", "from-last-tiered-offset"])
def test_a_plan_moving_tiered_partitions_copies_what_it_said(
    real_kafka: RealKafka, tmp_path: Path, last_tiered: bool
) -> None:
    raw_client.set_cluster_default(real_kafka.bootstrap_servers, FETCH_LAST_TIERED_OFFSET, str(last_tiered).lower())
    try:
        _move_tiered(real_kafka, tmp_path, last_tiered=last_tiered)
    finally:
        raw_client.set_cluster_default(real_kafka.bootstrap_servers, FETCH_LAST_TIERED_OFFSET, None)


def _move_tiered(kafka: RealKafka, work: Path, *, last_tiered: bool) -> None:
    # Both topics on brokers 1-2 of six: the plan spreads them. The plain one is as large on disk.
    kafka.create_topic("logs", [[1, 2], [2, 1]] * (PARTITIONS // 2), TIERED)
    kafka.create_topic("plain", [[1, 2], [2, 1]])
    written = kafka.produce("logs", partitions=range(PARTITIONS), records_per_partition=RECORDS, record_bytes=RECORD)
    plain = kafka.produce("plain", partitions=range(2), records_per_partition=400, record_bytes=RECORD)
    kafka.wait_until(lambda: _tiered(kafka), "segments copied to remote storage and deleted locally", timeout_s=120)

    proposal = snapshot_and_plan(kafka, work)
    snapshot = json.loads((work / "snapshot.json").read_text())
    entries = {(p["topic"], p["partition"]): p for p in snapshot["partitions"]}
    for p in range(PARTITIONS):
        entry = entries[("logs", p)]
        assert entry["remoteBytes"] > 4 * MiB, entry
        assert entry["untieredBytes"] <= entry["sizeBytes"] <= 3 * MiB, entry
    assert all(b.get("followerFetchLastTieredOffset", False) is last_tiered for b in snapshot["brokers"])
    moves = targets(proposal)
    moved_logs = {key: replicas for key, replicas in moves.items() if key[0] == "logs"}
    assert moved_logs, f"the plan moves no tiered partition: {moves}"

    # What the plan says each added replica copies, against what the brokers hold once it is there.
    before = kafka.partitions()
    added = [
        (TopicPartition(*key), b) for key, replicas in moves.items() for b in replicas if b not in before[key].replicas
    ]
    watch = watch_for(kafka, {"logs": 1, "plain": 1})
    proc = execute(kafka, work, "--throttle", "20MB/s")
    run_watched(kafka, proc, watch)
    assert finish(proc) == 0, (work / "execute.log").read_text()
    assert watch.violations == []
    adapter = kafka_adapter(kafka)
    try:
        measured = sum(r.size for r in adapter.replica_log_dirs(added).values())
    finally:
        adapter.close()
    predicted = proposal["summary"]["bytesToMove"]
    print(f"tiered moves (last tiered offset: {last_tiered}): predicted {predicted:.0f} B, measured {measured} B")
    assert abs(measured - predicted) <= 0.1 * predicted, (measured, predicted)
    local = sum(entries[(k.topic, k.partition)]["sizeBytes"] for k, _ in added)
    if last_tiered:
        assert predicted < 0.8 * local  # the tiered segments kept locally are not copied again
    else:
        assert predicted == local

    assert kafka.read_back("logs", range(PARTITIONS)) == written  # from offset 0: remote segments too
    assert kafka.read_back("plain", range(2)) == plain
    no_throttle_left(kafka.throttle_leftovers)
    converge(lambda: {k: v.replicas for k, v in kafka.partitions().items() if k in moves}, moves, "the plan applied")

"""Kafka's limits that bench.real_scale met on the way to 4,000 replicas a broker, on real Kafka 4.3.1
brokers at a size the default suite affords (issue 54), and how the product meets them.

Kafka reads a config value of at most 32,767 bytes and closes the connection on a longer one: a topic's
throttled-replicas list of a few thousand moving partitions (what kafka-reassign-partitions sets) is
longer. The adapter refuses such a value before sending, naming it; the executor keeps its entries of a
topic within half of that and starts the rest as moves of the topic end. Near-empty moves take no
per-broker slot, so a topic's hundreds of them do not queue five a broker.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
import raw_client
from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest
from kafka_balancer.executor.throttle import LIST_BUDGET_BYTES
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import LEADER_THROTTLED_REPLICAS, MAX_CONFIG_VALUE_BYTES, KafkaError, TopicPartition
from kafka_balancer.kafka.throttles import set_throttles
from kafka_balancer.model import PartitionTarget, ReassignmentPlan
from kafka_targets import no_throttle_left
from real_kafka import RealKafka

from realkafka.workflow import execute, finish

PARTITIONS = 1200  # replication factor 2: our leader entries of every move at once would take ~17 KB
RECORDS = {0: 300, 1: 300, 7: 300}  # a few partitions with records (1.2 MB each): moves with slots of their own


def _list_of(size: int) -> str:
    """A valid throttled-replicas list of exactly ``size`` bytes: "0:1" entries, the first zero-padded."""
    base = ",".join(["0:1"] * ((size + 1) // 4))
    return "0" * (size - len(base)) + base


def _set_raw(kafka: RealKafka, value: str) -> int:
    """IncrementalAlterConfigs v1 (a flexible version) of the topic's list, as raw bytes: its error code."""
    alterable = IncrementalAlterConfigsRequest.AlterConfigsResource.AlterableConfig
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=2,
        resource_name="t",
        configs=[alterable(name=LEADER_THROTTLED_REPLICAS, config_operation=0, value=value)],
    )
    port = int(kafka.bootstrap_servers.split(",")[0].rsplit(":", 1)[1])
    answer = raw_client.send(port, IncrementalAlterConfigsRequest(resources=[resource], validate_only=True), 1)
    return int(answer.responses[0].error_code)


def test_kafka_reads_a_config_value_of_at_most_32767_bytes(real_kafka: RealKafka) -> None:
    real_kafka.create_topic("t", [[1, 2]])
    for size in (MAX_CONFIG_VALUE_BYTES - 1, MAX_CONFIG_VALUE_BYTES):
        assert len(_list_of(size)) == size
        assert _set_raw(real_kafka, _list_of(size)) == 0, size
    with pytest.raises((ConnectionError, socket.timeout, OSError)):
        _set_raw(real_kafka, _list_of(MAX_CONFIG_VALUE_BYTES + 1))  # the broker closes the connection

    # The adapter refuses it before sending, naming what and how long (the broker's answer names nothing).
    moves = {TopicPartition("t", p): ((1, 2), (3, 4)) for p in range(2600)}  # ~35 KB of leader entries
    adapter = KafkaAdapter(ConnectionSpec(real_kafka.bootstrap_servers))
    try:
        refused = rf"{LEADER_THROTTLED_REPLICAS} of t: a value of \d+ bytes, more than the {MAX_CONFIG_VALUE_BYTES}"
        with pytest.raises(KafkaError, match=refused):
            set_throttles(adapter, 10_000_000, moves)
    finally:
        adapter.close()
    assert real_kafka.throttle_leftovers() == {}  # nothing was set, neither lists nor rates


def _current(p: int) -> tuple[int, int]:
    return (1, 2) if p % 2 else (2, 1)


def _target(p: int) -> tuple[int, int]:
    """One replica stays, the other goes to one of brokers 3-6: 300 new replicas on each."""
    return (_current(p)[0], 3 + p % 4)


def test_a_topic_moving_many_partitions_is_throttled_in_turns(real_kafka: RealKafka, tmp_path: Path) -> None:
    real_kafka.create_topic("dense", [_current(p) for p in range(PARTITIONS)])
    written = {
        p: real_kafka.produce("dense", partitions=[p], records_per_partition=n, record_bytes=4096)[p]
        for p, n in RECORDS.items()
    }
    plan = ReassignmentPlan.of(PartitionTarget("dense", p, _target(p)) for p in range(PARTITIONS))
    (tmp_path / "plan.json").write_text(plan.dumps())
    proc = execute(real_kafka, tmp_path, "--throttle", "20MB/s", plan="plan.json")
    longest = 0
    started = time.monotonic()
    try:
        while proc.poll() is None:
            assert time.monotonic() - started < 900, "execute still running after 900 s"
            for configs in real_kafka.throttle_leftovers().values():
                longest = max([longest, *(len(v) for k, v in configs.items() if k.endswith("replicas"))])
            time.sleep(0.5)
    finally:
        code = finish(proc)
    assert code == 0, (tmp_path / "execute.log").read_text()
    assert 0 < longest <= LIST_BUDGET_BYTES, longest  # seen throttled, never past our half of Kafka's limit
    after = real_kafka.partitions()
    assert {p for (t, p), v in after.items() if t == "dense" and v.replicas == _target(p)} == set(range(PARTITIONS))
    no_throttle_left(real_kafka.throttle_leftovers)
    assert {p: real_kafka.read_back("dense", [p])[p] for p in RECORDS} == written
    print(f"{PARTITIONS} moves in {time.monotonic() - started:.1f} s, longest throttle list {longest} B")

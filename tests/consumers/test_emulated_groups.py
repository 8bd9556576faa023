"""Consumer groups seeded in the Kafka emulator, read back through the real clients (the adapter),
then analysed: the published Range and RoundRobin cases, lag, recommendations and the CLI table."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.analysis.consumer_groups import analyze, collect, metric_samples, most_imbalanced, skipped
from kafka_balancer.consumers.group import MAX_GROUP_PARTITIONS
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import ConsumerGroupInfo, ConsumerGroupMember, TopicPartition
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.sandbox import EmulatedCluster, GroupSeed, MemberSeed


def groups_model() -> ClusterModel:
    b = ClusterBuilder(cluster_name="groups")
    for broker in (1, 2, 3):
        b.add_broker(broker, rack=f"r{broker}")
    for topic, count in {"t0": 4, "t1": 4, "T0": 1, "T1": 2, "T2": 3}.items():
        b.set_topic(topic, min_insync_replicas=2)
        for p in range(count):
            # 100 bytes per message: the emulator starts each log at size / bytes-per-message = 1000.
            b.add_partition(
                topic,
                p,
                [1 + (p + k) % 3 for k in range(3)],
                size_bytes=100_000.0,
                bytes_in_per_sec=100.0,
                messages_in_per_sec=1.0,
            )
    return b.build()


def member(member_id: str, topics: tuple[str, ...], assignment: dict[str, list[int]]) -> MemberSeed:
    return MemberSeed(member_id, f"client-{member_id}", "/127.0.0.1", topics, assignment)


RANGE_GROUP = GroupSeed(
    "orders-range",
    members=(
        member("C0", ("t0", "t1"), {"t0": [0, 1], "t1": [0, 1]}),
        member("C1", ("t0", "t1"), {"t0": [2], "t1": [2]}),
        member("C2", ("t0", "t1"), {"t0": [3], "t1": [3]}),
    ),
    assignor="range",
    # C0's four partitions are far behind; the others are nearly caught up (log end is 1000).
    offsets={
        **{("t0", p): 200 for p in (0, 1)},
        **{("t1", p): 200 for p in (0, 1)},
        **{(t, p): 990 for t in ("t0", "t1") for p in (2, 3)},
    },
)
ROUNDROBIN_GROUP = GroupSeed(
    "mixed-roundrobin",
    members=(
        member("C0", ("T0",), {"T0": [0]}),
        member("C1", ("T0", "T1"), {"T1": [0]}),
        member("C2", ("T0", "T1", "T2"), {"T1": [1], "T2": [0, 1, 2]}),
    ),
    assignor="roundrobin",
)
EMPTY_GROUP = GroupSeed("idle", members=(), assignor="", state="Empty", offsets={("t0", 0): 5})


@pytest.fixture
def cluster(emulator: Callable[..., EmulatedCluster]) -> EmulatedCluster:
    started = emulator(groups_model())
    for seed in (RANGE_GROUP, ROUNDROBIN_GROUP, EMPTY_GROUP):
        started.seed_group(seed)
    return started


def test_groups_read_through_the_real_clients(cluster: EmulatedCluster) -> None:
    port = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
    try:
        groups = {g.group_id: g for g in port.consumer_groups()}
    finally:
        port.close()
    assert set(groups) == {"orders-range", "mixed-roundrobin", "idle"}
    orders = groups["orders-range"]
    assert orders.assignor == "range"
    assert {m.member_id: (m.subscription, dict(m.assignment)) for m in orders.members} == {
        "C0": (("t0", "t1"), {"t0": (0, 1), "t1": (0, 1)}),
        "C1": (("t0", "t1"), {"t0": (2,), "t1": (2,)}),
        "C2": (("t0", "t1"), {"t0": (3,), "t1": (3,)}),
    }
    assert orders.lag()[TopicPartition("t0", 0)] == 800
    assert orders.lag()[TopicPartition("t1", 3)] == 10


def test_analysis_matches_the_published_cases(cluster: EmulatedCluster) -> None:
    port = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
    try:
        reports = {r["group"]: r for r in analyze(collect(port))}
    finally:
        port.close()
    assert set(reports) == {"orders-range", "mixed-roundrobin"}  # "idle" has no members to balance

    orders = reports["orders-range"]
    sim = orders["simulation"]
    # The group's real members under Range: the published C0:[T0P0,T0P1,T1P0,T1P1] C1:[..2] C2:[..3].
    assert sim["assignors"]["range"]["assignment"] == {
        "C0": {"t0": [0, 1], "t1": [0, 1]},
        "C1": {"t0": [2], "t1": [2]},
        "C2": {"t0": [3], "t1": [3]},
    }
    assert sim["assignors"]["range"]["movesFromCurrent"] == 0
    assert orders["imbalanceRatio"] == 1.5
    assert orders["totalLag"] == 4 * 800 + 4 * 10
    assert orders["lagImbalanceRatio"] == pytest.approx(3200 / (3240 / 3), abs=1e-4)
    assert orders["recommendation"]["assignor"] == "cooperative-sticky"
    assert orders["recommendation"]["switch"]["rollingBounces"] == 2
    for name in ("sticky", "cooperative-sticky"):
        leaves = sim["assignors"][name]["churnIfMemberLeaves"]
        assert all(c["movedBeyondLeaver"] == 0 for c in leaves.values()), name

    mixed = reports["mixed-roundrobin"]["simulation"]["assignors"]
    assert mixed["roundrobin"]["assignment"] == {
        "C0": {"T0": [0]},
        "C1": {"T1": [0]},
        "C2": {"T1": [1], "T2": [0, 1, 2]},
    }
    assert mixed["roundrobin"]["movesFromCurrent"] == 0
    assert mixed["sticky"]["balance"]["maxPartitions"] == 3

    top = most_imbalanced(reports.values(), 1)
    assert [t["group"] for t in top] == ["mixed-roundrobin"]  # 4 of 6 partitions on one member: 2.0
    samples = {(name, tuple(sorted(labels.items()))): v for name, labels, v in metric_samples(reports.values(), 10)}
    assert samples[("kafka_balancer_consumer_group_imbalance_ratio", (("group", "orders-range"),))] == 1.5


def test_a_group_above_the_limits_is_skipped_and_named_while_the_others_are_reported(
    cluster: EmulatedCluster,
) -> None:
    """What `kafka-balancer consumers` analyses: the live groups, plus one too large to simulate (a
    million-partition topic on the emulator would cost minutes of metadata, so it joins the input
    read from the cluster, as `collect` would return it)."""
    port = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
    try:
        live = collect(port)
    finally:
        port.close()
    huge = ConsumerGroupInfo(
        "huge", "Stable", "consumer", "range", (ConsumerGroupMember("C0", "client-C0", "/127.0.0.1", ("big",), {}),)
    )
    data = dataclasses.replace(
        live, groups=(*live.groups, huge), partitions={**live.partitions, "big": MAX_GROUP_PARTITIONS + 1}
    )
    assert {r["group"] for r in analyze(data)} == {"orders-range", "mixed-roundrobin"}
    assert skipped(data) == {
        "huge": "group: field 'topics' has 1,000,001 partitions in total, above the 1,000,000 a simulation "
        'can hold (docs/consumers.md, "Limits")'
    }


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it."""
    script = Path(sys.executable).parent / "kafka-balancer"
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=120, check=False)


def test_consumers_cli_table_and_json(cluster: EmulatedCluster, tmp_path: Path) -> None:
    done = run_cli("consumers", "--bootstrap-servers", cluster.bootstrap_servers)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "GROUP",
        "STATE",
        "ASSIGNOR",
        "MEMBERS",
        "PARTITIONS",
        "MAX/MIN",
        "IMBALANCE",
        "LAG",
        "LAG-IMB",
        "RECOMMENDED",
    ]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["orders-range"][1:8] == ["Stable", "range", "3", "8", "4/2", "1.50", "3240"]
    assert rows["mixed-roundrobin"][2] == "roundrobin"
    done = run_cli("consumers", "--bootstrap-servers", cluster.bootstrap_servers, "--json", "--top", "1")
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    assert [g["group"] for g in doc["groups"]] == ["mixed-roundrobin"]
    assert doc["skipped"] == []  # every group is within the simulation limits
    # Each report carries the group as a G.json what-if document: the offline command reproduces it.
    group_file = tmp_path / "mixed.json"
    group_file.write_text(json.dumps(doc["groups"][0]["input"]), encoding="utf-8")
    assert doc["groups"][0]["input"]["members"][2] == {
        "id": "C2",
        "topics": ["T0", "T1", "T2"],
        "assignment": {"T1": [1], "T2": [0, 1, 2]},
    }
    done = run_cli("consumers", "simulate", "--group", str(group_file), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == doc["groups"][0]["simulation"]

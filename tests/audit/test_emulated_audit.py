"""The audit against an emulated cluster, read through the real clients: exactly the misconfigured
topics are flagged; stopping brokers puts partitions at risk; the CLI reports both."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from kafka_balancer.analysis.audit import audit_cluster, metric_samples
from kafka_balancer.durability import (
    AT_MIN_ISR,
    MIN_ISR_BELOW_2,
    MIN_ISR_NOT_BELOW_RF,
    NO_ELIGIBLE_LEADER,
    OFFLINE,
    RF_BELOW_3,
    UNCLEAN_ELECTION,
    UNDER_REPLICATED,
)
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.model import ClusterBuilder, ClusterModel, dumps_snapshot
from kafka_balancer.sandbox import EmulatedCluster

# topic -> (replication factor, min.insync.replicas or None for the broker default 1, unclean election)
TOPICS: dict[str, tuple[int, int | None, bool | None]] = {
    "payments": (3, 2, False),
    "orders": (3, 2, None),
    "audit-log": (4, 3, None),
    "clicks-rf2": (2, 1, None),
    "metrics-rf1": (1, None, None),
    "events-default-isr": (3, None, None),
    "ledger-isr-eq-rf": (3, 3, None),
    "logs-unclean": (3, 2, True),
}
EXPECTED_FLAGS = {
    "clicks-rf2": {RF_BELOW_3, MIN_ISR_BELOW_2},
    "metrics-rf1": {RF_BELOW_3, MIN_ISR_BELOW_2, MIN_ISR_NOT_BELOW_RF},
    "events-default-isr": {MIN_ISR_BELOW_2},
    "ledger-isr-eq-rf": {MIN_ISR_NOT_BELOW_RF},
    "logs-unclean": {UNCLEAN_ELECTION},
}


def audit_model() -> ClusterModel:
    b = ClusterBuilder(cluster_name="audit")
    for broker in range(1, 5):
        b.add_broker(broker, rack=f"r{broker}")
    for topic, (rf, min_isr, unclean) in TOPICS.items():
        b.set_topic(topic, min_insync_replicas=min_isr, unclean_leader_election=unclean)
        for p in range(2):
            b.add_partition(topic, p, [1 + (p + k) % 4 for k in range(rf)], size_bytes=1000.0)
    return b.build()


def test_flags_exactly_the_misconfigured_topics(emulator: Callable[..., EmulatedCluster]) -> None:
    cluster = emulator(audit_model())
    port = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
    try:
        _model, report = audit_cluster(port)
    finally:
        port.close()
    assert {t.name: set(t.flags) for t in report.flagged} == EXPECTED_FLAGS
    assert {t.name for t in report.topics} == set(TOPICS)
    # ISR == min ISR already: RF 1 with the default 1, and RF 3 with min ISR 3.
    assert {(p.topic, p.partition) for p in report.at_risk} == {
        ("metrics-rf1", 0),
        ("metrics-rf1", 1),
        ("ledger-isr-eq-rf", 0),
        ("ledger-isr-eq-rf", 1),
    }
    # The emulator reports eligible leader replicas as Kafka 4.x does: none while the ISR is at min ISR.
    assert all(p.risks == (AT_MIN_ISR, NO_ELIGIBLE_LEADER) for p in report.at_risk)
    assert all((p.isr_state, p.elr) == ("at-min-isr", ()) for p in report.at_risk)


def test_stopped_broker_puts_partitions_at_risk(emulator: Callable[..., EmulatedCluster]) -> None:
    cluster = emulator(audit_model())
    cluster.stop_broker(2)
    port = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
    try:
        _model, report = audit_cluster(port)
    finally:
        port.close()
    risks = {(p.topic, p.partition): set(p.risks) for p in report.at_risk}
    # metrics-rf1-1 lives only on broker 2: it is offline.
    assert risks[("metrics-rf1", 1)] >= {OFFLINE}
    # payments-0 = [1, 2, 3]: lost broker 2, ISR 2 == min ISR 2.
    assert risks[("payments", 0)] == {UNDER_REPLICATED, AT_MIN_ISR, NO_ELIGIBLE_LEADER}
    # audit-log (RF 4, min ISR 3) has ISR 3 left: under-replicated and at its min ISR.
    assert risks[("audit-log", 0)] == {UNDER_REPLICATED, AT_MIN_ISR, NO_ELIGIBLE_LEADER}
    # ledger-isr-eq-rf (RF 3, min ISR 3) fell below its min ISR: broker 2 left it then, so it is an
    # eligible leader replica (KIP-966) and the partition has a clean leader to come back to.
    below = {
        (p.topic, p.partition): (p.isr_state, p.elr, p.risks) for p in report.at_risk if p.topic == "ledger-isr-eq-rf"
    }
    assert set(below.values()) == {("below-min-isr", (2,), (UNDER_REPLICATED, AT_MIN_ISR))}
    # The settings did not change, so neither did the flags.
    assert {t.name: set(t.flags) for t in report.flagged} == EXPECTED_FLAGS
    samples = {(n, tuple(sorted(labels.items()))): v for n, labels, v in metric_samples(report)}
    assert samples[("kafka_balancer_partitions_at_risk", (("risk", OFFLINE),))] >= 1.0
    assert samples[("kafka_balancer_durability_flagged_topics", (("flag", UNCLEAN_ELECTION),))] == 1.0


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "kafka-balancer"
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=120, check=False)


def test_audit_cli_live_and_snapshot(emulator: Callable[..., EmulatedCluster], tmp_path: Path) -> None:
    cluster = emulator(audit_model())
    done = run_cli("audit", "--bootstrap-servers", cluster.bootstrap_servers, "--json")
    assert done.returncode == 0, done.stderr
    live = json.loads(done.stdout)
    assert {t["topic"]: set(t["flags"]) for t in live["flaggedTopics"]} == EXPECTED_FLAGS

    snapshot = tmp_path / "cluster.json"
    snapshot.write_text(dumps_snapshot(audit_model()), encoding="utf-8")
    done = run_cli("audit", "--snapshot", str(snapshot), "--fail-on-findings")
    assert done.returncode == 1  # findings exist
    assert done.stdout.splitlines()[0] == "8 topics audited, 5 flagged, 4 partitions at risk now"
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("TOPIC"))
    row = next(line for line in lines if line.startswith("logs-unclean "))
    assert row.split() == ["logs-unclean", "3", "2", "true", "unclean-leader-election-enabled"]
    # Columns line up under the header.
    assert row.index("true") == header.index("UNCLEAN")

    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "brokers": [{"id": 1, "rack": 5}], "partitions": []}', encoding="utf-8")
    done = run_cli("audit", "--snapshot", str(bad))
    assert done.returncode != 0
    assert "field 'rack' must be a string or null, got 5" in done.stderr

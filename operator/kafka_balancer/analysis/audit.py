"""Durability audit of a live cluster through the Kafka port (the rules live in kafka_balancer.durability)."""

from __future__ import annotations

from typing import Final

from kafka_balancer.durability import (
    PARTITION_RISKS,
    TOPIC_FLAGS,
    AuditOptions,
    AuditReport,
    audit,
)
from kafka_balancer.kafka.port import KafkaPort
from kafka_balancer.model.cluster import ClusterModel

# Every gauge metric_samples() emits (for Metrics.set_analysis_samples(replaces=...)).
METRIC_NAMES: Final = ("kafka_balancer_durability_flagged_topics", "kafka_balancer_partitions_at_risk")


def audit_cluster(port: KafkaPort, options: AuditOptions | None = None) -> tuple[ClusterModel, AuditReport]:
    """Read the cluster (no log sizes: the audit does not need them) and each topic's effective
    configs, which DescribeConfigs reports including broker defaults."""
    model = port.read_cluster(with_sizes=False)
    configs = port.topic_configs(model.topics)
    return model, audit(model, configs, options or AuditOptions())


def metric_samples(report: AuditReport) -> list[tuple[str, dict[str, str], float]]:
    """(metric name, labels, value) for the durability gauges the operator exports (labels beyond the
    policy's own: ``flag`` or ``risk``, one series per flag and per risk)."""
    out: list[tuple[str, dict[str, str], float]] = []
    counts = report.flag_counts()
    for flag in TOPIC_FLAGS:
        out.append(("kafka_balancer_durability_flagged_topics", {"flag": flag}, float(counts[flag])))
    for risk in PARTITION_RISKS:
        out.append(("kafka_balancer_partitions_at_risk", {"risk": risk}, float(report.risk_counts.get(risk, 0))))
    # No per-topic series: they would grow with the cluster; the status lists the flagged topics.
    return out

"""Metrics served over HTTP on 127.0.0.1 and parsed the way Prometheus parses them."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from kafka_balancer.metrics import ExecutionFigures, Metrics, PolicyKey
from prometheus_client.parser import text_string_to_metric_families

KEY = PolicyKey("main", "kafka", "cluster-a")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def _scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - a loopback URL we started
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _get(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    wanted = {"policy": "main", "namespace": "kafka", **labels}
    for (sample, sample_labels), value in samples.items():
        if sample == name and wanted.items() <= dict(sample_labels).items():
            return value
    raise KeyError(name, labels)


def test_execution_progress_and_imbalance_are_scraped_over_http() -> None:
    metrics = Metrics()
    server = metrics.serve(0)
    try:
        assert server.url.startswith("http://127.0.0.1:")
        metrics.set_balance(KEY, {"payments": {"disk": (1.8, 0.3)}, "analytics": {"disk": (1.05, 0.02)}}, 61.0)
        metrics.set_threshold(KEY, "network-in", 1.3)
        metrics.set_threshold(KEY, "disk", 1.25)  # the policy now watches disk: the network-in series goes
        metrics.set_throttled_brokers(KEY, 3)
        metrics.set_proposal(KEY, moves=12, bytes_to_move=6_000, leader_changes=4)
        metrics.set_state("main", "kafka", "Executing")
        metrics.set_execution(KEY, ExecutionFigures(2_000, 6_000, 4, 12, 5, 30.0))
        metrics.set_execution(KEY, ExecutionFigures(6_000, 6_000, 12, 12, 0, 0.0))
        metrics.execution_finished(KEY, "Completed")
        metrics.set_balance(KEY, {"payments": {"disk": (1.04, 0.01)}}, 97.5)
        metrics.set_throttled_brokers(KEY, 0)
        metrics.set_state("main", "kafka", "Completed")
        samples = _scrape(server.url)
    finally:
        server.close()
    assert _get(samples, "kafka_balancer_imbalance_ratio", group="payments", resource="disk") == 1.04
    assert _get(samples, "kafka_balancer_imbalance_ratio", group="analytics") == 1.05
    assert _get(samples, "kafka_balancer_balancedness_score") == 97.5
    assert _get(samples, "kafka_balancer_imbalance_threshold_ratio", resource="disk") == 1.25
    with pytest.raises(KeyError):
        _get(samples, "kafka_balancer_imbalance_threshold_ratio", resource="network-in")
    assert _get(samples, "kafka_balancer_throttled_brokers") == 0
    assert _get(samples, "kafka_balancer_proposal_bytes") == 6_000
    assert _get(samples, "kafka_balancer_execution_moved_bytes") == 6_000
    # The counter adds deltas: 2000 then 4000 more, not 2000 + 6000.
    assert _get(samples, "kafka_balancer_moved_bytes_total", cluster="cluster-a") == 6_000
    assert _get(samples, "kafka_balancer_moved_partitions_total") == 12
    assert _get(samples, "kafka_balancer_executions_total", result="Completed") == 1
    assert _get(samples, "kafka_balancer_state", state="Completed") == 1
    assert _get(samples, "kafka_balancer_state", state="Executing") == 0


def test_a_new_execution_counts_from_zero_and_forget_drops_series() -> None:
    metrics = Metrics()
    metrics.set_execution(KEY, ExecutionFigures(500, 500, 1, 1, 0, None), execution="p1/1")
    metrics.execution_finished(KEY, "Completed")
    metrics.set_execution(KEY, ExecutionFigures(500, 500, 1, 1, 0, None), execution="p1/1")  # late report: not again
    metrics.set_execution(KEY, ExecutionFigures(100, 900, 1, 3, 1, None), execution="p2/2")  # next run: from 0
    metrics.set_execution(KEY, ExecutionFigures(80, 900, 1, 3, 1, None), execution="p2/2")  # a dip: not recounted
    metrics.set_execution(KEY, ExecutionFigures(300, 900, 2, 3, 1, None), execution="p2/2")
    text = metrics.exposition().decode()
    assert 'kafka_balancer_moved_bytes_total{cluster="cluster-a",namespace="kafka",policy="main"} 800.0' in text
    assert 'kafka_balancer_execution_eta_seconds{cluster="cluster-a",namespace="kafka",policy="main"} -1.0' in text
    metrics.reconciled("main", "kafka")
    metrics.set_balance(KEY, {"payments": {"disk": (1.2, 0.1)}}, 80.0)
    metrics.set_threshold(KEY, "disk", 1.25)
    metrics.forget("main", "kafka", ["cluster-a"])
    assert 'policy="main"' not in metrics.exposition().decode()


def test_two_operators_in_one_process_do_not_share_series() -> None:
    a, b = Metrics(), Metrics()
    a.error("p", "ns", "ClusterUnreachable")
    assert "ClusterUnreachable" in a.exposition().decode()
    assert "ClusterUnreachable" not in b.exposition().decode()


def test_every_metric_is_documented() -> None:
    doc = DOCS.read_text()
    names = {family.name for family in Metrics().registry.collect()}
    assert names, "no metrics registered"
    missing = sorted(n for n in names if f"`{n}" not in doc)
    assert not missing, f"docs/metrics.md does not document {missing}"

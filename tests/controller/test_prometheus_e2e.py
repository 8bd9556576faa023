"""A real Prometheus server scrapes the real operator during a real execution and evaluates the chart's rules.

Real Kafka 4.3.1 brokers, the real kube-apiserver with the chart's RBAC, the operator as its own process (as
the image starts it), and ``prometheus`` built from github.com/prometheus/prometheus (`make
prometheus-tools`) with the chart's rendered PrometheusRule and a scrape configuration like the one the
Prometheus operator makes of the chart's ServiceMonitor (job named after the metrics Service, the Service's
namespace as a target label, honorLabels). A Manual policy's approved proposal runs; a broker receiving a
move is killed, so the moves to it copy nothing: KafkaBalancerMovesStuck fires while they are held and
clears once the broker is back and they complete. Scrapes taken during and after the execution pass
``promtool check metrics``, and every series the Grafana dashboard and the alerts read is in them.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from delivery.test_prometheus_rules import rules_file
from go_tools import REPO, Prometheus, prometheus_server, promql_series, run
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from real_kafka import RealKafka

from .conftest import Cluster, policy_manifest
from .kube import KUBE_APISERVER, ApiServer
from .operator_process import OperatorProcess

pytestmark = pytest.mark.timeout(420)

TOPICS = {"payments": ([1, 2], 8), "clicks": ([4, 5], 6)}
STUCK = "KafkaBalancerMovesStuck"
DASHBOARD = REPO / "charts" / "kafka-balancer" / "dashboards" / "kafka-balancer.json"
# Grafana's variables, as a query is sent to Prometheus (a multi-value variable becomes a regex).
GRAFANA_VARIABLES = {
    "$__rate_interval": "1m",
    "$__interval": "15s",
    "$__range": "6h",
    "$namespace": ".*",
    "$policy": ".*",
}


def _scrape_config(operator: OperatorProcess) -> dict[str, Any]:
    """What the Prometheus operator makes of the chart's ServiceMonitor, with a 1 s interval."""
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": ["rules.yaml"],
        "scrape_configs": [
            {
                "job_name": "kafka-balancer-metrics",  # the metrics Service's name (release kafka-balancer)
                "honor_labels": True,
                "metrics_path": "/metrics",
                "static_configs": [
                    {
                        "targets": [f"127.0.0.1:{operator.metrics_port}"],
                        "labels": {"namespace": "kafka-balancer", "service": "kafka-balancer-metrics"},
                    }
                ],
            }
        ],
    }


def _wait(what: str, probe: Callable[[], Any], ops: list[OperatorProcess], timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        for op in ops:
            assert op.proc.poll() is None, f"the operator exited waiting for {what}:\n{op.tail()}"
        last = probe()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}\n{ops[0].tail()}")


def _scrape(operator: OperatorProcess) -> str:
    url = f"http://127.0.0.1:{operator.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode())


def _exported(scrape: str) -> set[str]:
    return {line.split("{")[0].split(" ")[0] for line in scrape.splitlines() if line and not line.startswith("#")}


def _dashboard_queries() -> list[str]:
    """Every query of the dashboard: each panel target's expr and each variable's label_values() selector,
    with Grafana's variables replaced as Grafana replaces them before it sends the query."""
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            queries.append(re.fullmatch(r"label_values\((.*), \w+\)", variable["query"]["query"]).group(1))  # type: ignore[union-attr]
    out = []
    for query in queries:
        sent = query
        for name, value in GRAFANA_VARIABLES.items():
            sent = sent.replace(name, value)
        out.append(sent)
    return out


def _check_scrape(scrape: str, workdir: Path, name: str) -> set[str]:
    path = workdir / f"{name}.txt"
    path.write_text(scrape)
    done = run("promtool", ["check", "metrics"], stdin=scrape)
    assert done.returncode == 0, f"promtool check metrics on the {name} scrape:\n{done.stdout}{done.stderr}"
    return _exported(scrape)


@pytest.mark.parametrize("api_server", [KUBE_APISERVER], indirect=True)
def test_prometheus_evaluates_the_charts_rules_on_the_operator_during_a_real_execution(
    api_server: ApiServer,
    kube: Cluster,
    real_kafka: RealKafka,
    start_operator: Callable[..., OperatorProcess],
    tmp_path: Path,
) -> None:
    for topic, (home, partitions) in TOPICS.items():
        real_kafka.create_topic(topic, [home if p % 2 else home[::-1] for p in range(partitions)])
        real_kafka.produce(topic, partitions=range(partitions), records_per_partition=300, record_bytes=10_000)
    operator = start_operator(api_server.write_kubeconfig(tmp_path / "operator.kubeconfig", "kafka", user="operator"))
    workdir = tmp_path / "prometheus"
    workdir.mkdir()
    rules_file({"movesStuckFor": "2s"}, workdir / "rules.yaml")  # the chart's rules; the alert without its 10 min wait
    with prometheus_server(workdir, _scrape_config(operator)) as prometheus:
        # A policy that names no existing ResourceGroup: Stalled, counted in kafka_balancer_errors_total.
        misgrouped = {"cluster": {"bootstrapServers": "127.0.0.1:1"}, "resourceGroups": ["nope"]}
        kube.apply(policy_manifest("misgrouped", misgrouped))
        execution = {"throttleBytesPerSec": 1_000_000, "concurrentMovesPerBroker": 1, "stuckAfterSeconds": 2}
        cluster = {"bootstrapServers": real_kafka.bootstrap_servers}
        kube.apply(policy_manifest("main", {"mode": "Manual", "cluster": cluster, "execution": execution}))
        status = _wait(
            "a proposal", lambda: (s := kube.policy("main").get("status") or {}).get("proposal") and s, [operator]
        )
        kube.patch_policy("main", {"approvedProposal": status["proposal"]["id"]})
        _held_and_released(real_kafka, prometheus, operator, tmp_path)
        done = _wait(
            "the execution to complete",
            lambda: (s := kube.policy("main").get("status") or {}).get("state") == "Completed" and s,
            [operator],
            timeout=240,
        )
        assert done["lastRun"]["result"] == "Completed"
        assert not prometheus.alerts(STUCK), "cleared"
        assert not prometheus.alerts("KafkaBalancerOperatorDown"), "the operator's target is up"
        after = _check_scrape(_scrape(operator), tmp_path, "after")
    exported = after | _check_scrape((tmp_path / "during.txt").read_text(), tmp_path, "during")

    # The dashboard and the alerts read only series the operator exports (and Prometheus's own `up`).
    for result in promql_series(_dashboard_queries()):
        assert "error" not in result, result
        assert set(result["metrics"]) <= exported, (result["expr"], set(result["metrics"]) - exported)
    rules = yaml.safe_load((workdir / "rules.yaml").read_text())["groups"][0]["rules"]
    for result in promql_series([r["expr"] for r in rules]):
        assert set(result["metrics"]) - {"up"} <= exported, (result["expr"], set(result["metrics"]) - exported)


def _held_and_released(
    real_kafka: RealKafka, prometheus: Prometheus, operator: OperatorProcess, tmp_path: Path
) -> None:
    """Kill a broker a move in flight copies to: the alert fires with the policy's labels; start it again: it clears."""
    homes = {b for brokers, _ in TOPICS.values() for b in brokers}
    adapter = KafkaAdapter(ConnectionSpec(real_kafka.bootstrap_servers))
    try:
        # A broker that held none of the data before: killing it takes no partition's leader away.
        targets = _wait(
            "a move copying to a broker that held nothing",
            lambda: {b for r in adapter.list_reassignments().values() for b in r.adding} - homes,
            [operator],
        )
    finally:
        adapter.close()
    target = min(targets)
    real_kafka.stop_broker(target, kill=True)
    firing = _wait(
        f"{STUCK} firing",
        lambda: [a for a in prometheus.alerts(STUCK) if a["state"] == "firing"],
        [operator],
        timeout=90,
    )
    (tmp_path / "during.txt").write_text(_scrape(operator))
    (alert,) = firing
    labels = dict(alert["labels"])
    assert labels.pop("cluster"), "the Kafka cluster's id"
    # The policy's namespace (honorLabels), not the Service's.
    assert labels == {"alertname": STUCK, "severity": "warning", "namespace": "kafka", "policy": "main"}, labels
    assert alert["annotations"]["summary"] == "Moves of kafka/main are stuck"
    assert re.match(r"\d+ reassignment\(s\) copied nothing", alert["annotations"]["description"])
    real_kafka.start_broker(target)
    _wait(f"{STUCK} cleared", lambda: not prometheus.alerts(STUCK), [operator], timeout=120)

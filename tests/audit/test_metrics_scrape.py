"""Consumer-group and durability figures exported by the operator's Metrics and scraped over HTTP."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable

from kafka_balancer.analysis import audit as audit_analysis
from kafka_balancer.analysis import consumer_groups
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.metrics import Metrics, PolicyKey
from kafka_balancer.sandbox import EmulatedCluster, GroupSeed, MemberSeed
from prometheus_client.parser import text_string_to_metric_families
from test_emulated_audit import audit_model  # tests/audit is on sys.path (rootdir conftest)


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - loopback URL from the test
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(scraped: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    """The one sample of ``name`` for this test's policy with ``labels``."""
    wanted = {"policy": "prod", "namespace": "kafka", "cluster": "emulated", **labels}
    found = [v for (n, got), v in scraped.items() if n == name and dict(got) == wanted]
    assert len(found) == 1, (name, labels, [k for k in scraped if k[0] == name])
    return found[0]


def test_scraped_consumer_group_and_durability_metrics(emulator: Callable[..., EmulatedCluster]) -> None:
    cluster = emulator(audit_model())
    cluster.seed_group(
        GroupSeed(
            "billing",
            members=(
                MemberSeed("m1", "c", "/127.0.0.1", ("payments",), {"payments": [0, 1]}),
                MemberSeed("m2", "c", "/127.0.0.1", ("payments",), {}),
            ),
            assignor="range",
        )
    )
    port = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
    try:
        reports = consumer_groups.analyze(consumer_groups.collect(port))
        _model, report = audit_analysis.audit_cluster(port)
    finally:
        port.close()
    metrics = Metrics()
    key = PolicyKey("prod", "kafka", "emulated")
    metrics.set_analysis_samples(
        key, consumer_groups.metric_samples(reports, 10), replaces=consumer_groups.METRIC_NAMES
    )
    metrics.set_analysis_samples(key, audit_analysis.metric_samples(report), replaces=audit_analysis.METRIC_NAMES)
    server = metrics.serve(port=0)
    try:
        scraped = scrape(server.url)
        # m1 holds both partitions of payments, m2 none: max 2 over a mean of 1.
        assert value(scraped, "kafka_balancer_consumer_group_imbalance_ratio", group="billing") == 2.0
        assert value(scraped, "kafka_balancer_consumer_group_members", group="billing") == 2.0
        flags = "kafka_balancer_durability_flagged_topics"
        assert value(scraped, flags, flag="unclean-leader-election-enabled") == 1.0
        assert value(scraped, flags, flag="replication-factor-below-3") == 2.0
        assert value(scraped, "kafka_balancer_partitions_at_risk", risk="isr-at-or-below-min-insync-replicas") == 4.0

        # Every group disappears: all of its series go with it on the next update, durability stays.
        metrics.set_analysis_samples(key, consumer_groups.metric_samples([], 10), replaces=consumer_groups.METRIC_NAMES)
        scraped = scrape(server.url)
        assert not any(("group", "billing") in labels for (_n, labels) in scraped)
        assert value(scraped, flags, flag="unclean-leader-election-enabled") == 1.0
        # A new group appears: only its series.
        metrics.set_analysis_samples(
            key,
            [("kafka_balancer_consumer_group_members", {"group": "other"}, 3.0)],
            replaces=consumer_groups.METRIC_NAMES,
        )
        scraped = scrape(server.url)
        assert value(scraped, "kafka_balancer_consumer_group_members", group="other") == 3.0
        assert not any(("group", "billing") in labels for (_n, labels) in scraped)
    finally:
        server.close()

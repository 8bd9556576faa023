"""The per-log-directory gauges (JBOD) as a Prometheus scrape reads them: the real Reconciler reads an
emulated cluster whose brokers have two log directories each (one cordoned) over the Kafka protocol,
the gauges are set with the other observed-cluster series and parsed from the registry's text format,
and deleting the policy removes them. The expected figures are worked out from the seeded cluster."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from kafka_balancer.controller.kubeapi import KubeApi
from kafka_balancer.controller.reconcile import Reconciler
from kafka_balancer.controller.services import AdapterConnector, ModulePlanner, Runs
from kafka_balancer.metrics import Metrics
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.model.cluster import LogDir
from kafka_balancer.sandbox import EmulatedCluster
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from .conftest import Cluster, policy_manifest

pytestmark = pytest.mark.timeout(120)

MB = 1e6
VOLUME = 1000 * MB
Series = dict[tuple[str, str, str], float]  # (metric, broker, log_dir) -> value


def jbod_model() -> ClusterModel:
    """Brokers 1-3 with /data/0 and /data/1 (broker 3's /data/1 cordoned); every replica of "t" in
    /data/0 except broker 2's replicas of odd partitions, in /data/1."""
    builder = ClusterBuilder(cluster_name="jbod")
    for b in (1, 2, 3):
        dirs = (LogDir("/data/0", total_bytes=VOLUME), LogDir("/data/1", cordoned=b == 3, total_bytes=VOLUME))
        builder.add_broker(b, rack=f"r{b}", log_dirs=dirs)
    for p in range(4):
        replicas = [1 + p % 3, 1 + (p + 1) % 3]
        dirs = ["/data/1" if b == 2 and p % 2 else "/data/0" for b in replicas]
        builder.add_partition("t", p, replicas, size_bytes=(p + 1) * 10 * MB, log_dirs=dirs)
    return builder.build()


# Partition p (size (p+1) x 10 MB) on brokers 1+p%3 and 1+(p+1)%3: t-0 [1,2], t-1 [2,3], t-2 [3,1], t-3 [1,2].
# Broker 2's replicas of t-1 and t-3 (20 + 40 MB) are in /data/1, its t-0 (10 MB) in /data/0.
HELD = {
    ("1", "/data/0"): 10 + 30 + 40,
    ("1", "/data/1"): 0,
    ("2", "/data/0"): 10,
    ("2", "/data/1"): 20 + 40,
    ("3", "/data/0"): 20 + 30,
    ("3", "/data/1"): 0,
}


@pytest.fixture
def reconciler(kube: Cluster) -> Iterator[Reconciler]:
    """The Reconciler wired as the operator wires it (controller/operator.py), without kopf around it."""
    api = KubeApi.from_environment()  # the kube fixture points KUBECONFIG at kmock
    runs = Runs()
    reconciler = Reconciler(
        kube=api, connector=AdapterConnector(3.0), planner=ModulePlanner(), runs=runs, metrics=Metrics()
    )
    try:
        yield reconciler
    finally:
        runs.detach_all()
        api.close()


def _log_dir_series(metrics: Metrics) -> Series:
    """The kafka_balancer_log_dir_* samples of policy main, parsed from the text a scrape gets."""
    text = generate_latest(metrics.registry).decode()
    return {
        (s.name, s.labels["broker"], s.labels["log_dir"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("kafka_balancer_log_dir_") and s.labels.get("policy") == "main"
    }


def test_each_log_directory_is_a_series_until_the_policy_is_deleted(
    kube: Cluster, reconciler: Reconciler, emulator: Callable[..., EmulatedCluster]
) -> None:
    cluster = emulator(jbod_model())
    kube.apply(policy_manifest("main", {"cluster": {"bootstrapServers": cluster.bootstrap_servers}, "mode": "DryRun"}))
    outcome = reconciler.reconcile(kube.policy("main"))
    assert outcome.status.observed_cluster is not None
    cluster_id = outcome.status.observed_cluster.cluster_id
    series = _log_dir_series(reconciler.metrics)

    assert {k[1:]: v for k, v in series.items() if k[0] == "kafka_balancer_log_dir_bytes"} == {
        key: held * MB for key, held in HELD.items()
    }
    assert {k[1:]: v for k, v in series.items() if k[0] == "kafka_balancer_log_dir_volume_bytes"} == dict.fromkeys(
        HELD, VOLUME
    )
    # The emulator reports a volume's free space as its size less what its replicas hold.
    usable = {k[1:]: v for k, v in series.items() if k[0] == "kafka_balancer_log_dir_volume_usable_bytes"}
    assert usable == {key: VOLUME - held * MB for key, held in HELD.items()}
    utilisation = {k[1:]: v for k, v in series.items() if k[0] == "kafka_balancer_log_dir_utilisation_ratio"}
    assert utilisation == pytest.approx({key: held * MB / VOLUME for key, held in HELD.items()})
    cordoned = {k[1:]: v for k, v in series.items() if k[0] == "kafka_balancer_log_dir_cordoned"}
    assert cordoned == {key: 1.0 if key == ("3", "/data/1") else 0.0 for key in HELD}
    text = generate_latest(reconciler.metrics.registry).decode()
    labels = f'broker="2",cluster="{cluster_id}",log_dir="/data/1",namespace="kafka",policy="main"'
    assert f"kafka_balancer_log_dir_bytes{{{labels}}} 6e+07" in text

    body = kube.policy("main")
    body["status"] = {"observedCluster": {"clusterId": cluster_id}}
    reconciler.deleted(body)
    assert _log_dir_series(reconciler.metrics) == {}

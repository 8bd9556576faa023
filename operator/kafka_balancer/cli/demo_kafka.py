"""The Kafka cluster a `kafka-balancer demo` runs against: real Apache Kafka brokers (the default) or the
emulator (``--emulated``). Both offer what the demo's steps need: where to connect, which example
policy to apply and how to point it here, and the per-broker load to show for a placement.

Real: 6 KRaft brokers in 3 racks (kafka_balancer.sandbox.real), brokers 5 and 6 new and empty; three
topics filled with keyed records, and producers that keep writing skewed traffic while the demo
runs. The operator samples that traffic and analyses it on local Spark; the demo's tables and
report use the analysis its proposal was made from, which the operator keeps beside the samples
(kafka_balancer.controller.last_analysis): measured rates, not a model.

Emulated: the 8-broker skewed cluster of kafka_balancer.sandbox.demo_cluster at a scaled clock;
its traffic is the model's own.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafka_balancer.cli import demo_view as view
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.model import ClusterModel
from kafka_balancer.sandbox import EmulatedCluster, EmulatorOptions
from kafka_balancer.sandbox.demo_cluster import skewed_demo_model
from kafka_balancer.sandbox.ports import free_port_range
from kafka_balancer.sandbox.real import RealCluster, RealClusterOptions, SandboxError
from kafka_balancer.sandbox.traffic import RecordWriter, SteadyTraffic, TopicSpec, TrafficError, create_topics

MB = 1_000_000


class DemoError(RuntimeError):
    """A step failed or timed out; the message says which and why."""


def placement(bootstrap: str) -> ClusterModel:
    """Replicas, leaders and sizes as Kafka reports them now (real clients over TCP)."""
    adapter = KafkaAdapter(ConnectionSpec(bootstrap))
    try:
        return adapter.read_cluster()
    finally:
        adapter.close()


# ----- emulated --------------------------------------------------------------------------------------
class EmulatedDemo:
    """The Kafka emulator serving the skewed demo model at ``time_scale`` emulated seconds per second."""

    examples = ("00-resource-groups.yaml", "01-rebalance-manual.yaml")

    def __init__(self, cluster: EmulatedCluster, model: ClusterModel, time_scale: float) -> None:
        self.cluster = cluster
        self.model = model
        self.time_scale = time_scale
        self.bootstrap_servers = cluster.bootstrap_servers
        self.title = f"Kafka emulator: cluster '{model.cluster_name}', time x{time_scale:g}"

    def adapt(self, _spec: dict[str, Any], _workdir: Path) -> list[str]:
        """The example's resource groups fit the emulated cluster as they are."""
        return []

    def measure(self, _policy: dict[str, Any]) -> None:
        """Nothing to measure: the emulator's traffic is the model's."""

    def loads(self, seen: ClusterModel) -> ClusterModel:
        return view.with_observed_placement(self.model, seen)

    def clock(self) -> float | None:
        with self.cluster.state.lock:
            return self.cluster.state.clock


@contextlib.contextmanager
def emulated(size_scale: float, time_scale: float) -> Iterator[EmulatedDemo]:
    try:
        model = skewed_demo_model(size_scale)
    except ValueError as err:
        raise DemoError(f"--size-scale: {err}") from None
    with EmulatedCluster.start(model, options=EmulatorOptions(time_scale=time_scale)) as cluster:
        # The emulator has no retention: with traffic its logs would grow for as long as they are
        # copied. A steady cluster's size is flat (retention deletes what producers add), so the demo
        # keeps sizes fixed and uses its model's traffic for the network figures.
        cluster.set_rates(
            [(model.topic_name(p), int(model.partition_id[p]), 0.0, 0.0) for p in range(model.num_partitions)]
        )
        yield EmulatedDemo(cluster, model, time_scale)


# ----- real ------------------------------------------------------------------------------------------
BROKERS, RACKS = 6, 3  # racks round robin: brokers 1 and 4 on rack-a, 2 and 5 on rack-b, 3 and 6 on rack-c
NEW_BROKERS = (5, 6)
TOPICS = (
    # The hot topic, all of it on brokers 1 and 2.
    TopicSpec("clickstream.web", tuple((1, 2) if p % 2 else (2, 1) for p in range(12))),
    # Always led by broker 1 (the tool that made it listed broker 1 first).
    TopicSpec("payments", tuple((1, 2, 3) if p % 2 else (1, 3, 2) for p in range(6)), {"min.insync.replicas": "2"}),
    TopicSpec("metrics-host", tuple((3, 4) if p % 2 else (4, 3) for p in range(6))),
)
# topic -> (MB per partition written before the demo starts, MB/s written while it runs)
VOLUME = {"clickstream.web": (8, 0.6), "payments": (6, 0.2), "metrics-host": (3, 0.1)}
RECORD_BYTES = 4096


class RealDemo:
    """Real brokers with live traffic; the load shown is what the analysis measured."""

    examples = ("11-measured-load-local.yaml",)

    def __init__(self, cluster: RealCluster) -> None:
        self.cluster = cluster
        self.bootstrap_servers = cluster.bootstrap_servers
        self.title = (
            f"Apache Kafka {cluster.version} (KRaft): {BROKERS} brokers in {RACKS} racks, "
            "brokers 5 and 6 new and empty; "
            f"controller on 127.0.0.1:{cluster.options.controller_port}, data in {cluster.data_dir}"
        )
        self.samples: Path | None = None
        self.measured: ClusterModel | None = None

    def adapt(self, spec: dict[str, Any], workdir: Path) -> list[str]:
        """Sample every 2 s into the demo's folder and summarise 10 s windows: minutes of traffic, not days."""
        analysis = spec.setdefault("analysis", {})
        self.samples = workdir / "samples"
        was = dict(analysis)
        analysis.update(samples=str(self.samples), intervalSeconds=2, windowSeconds=10)
        return [
            f"spec.analysis.{k}: {was.get(k)} -> {analysis[k]} (minutes of traffic, not days)"
            for k in ("samples", "intervalSeconds", "windowSeconds")
        ]

    def measure(self, policy: dict[str, Any]) -> None:
        """The analysis the operator made its proposal from, as it keeps it beside the samples."""
        from kafka_balancer.controller.last_analysis import last_analysis_path  # noqa: PLC0415 - the operator's
        from kafka_balancer.model.snapshot import parse_snapshot  # noqa: PLC0415

        if self.samples is None:
            raise DemoError("no sample store: the policy was not adapted")
        meta = policy["metadata"]
        path = last_analysis_path(str(self.samples), meta["namespace"], meta["name"])
        if path is None:  # the demo's store is a local folder: never
            raise DemoError(f"the operator keeps no analysis for a store at {self.samples}")
        try:
            self.measured = parse_snapshot(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as err:
            raise DemoError(f"the operator's analysis behind its proposal, {path}: {err}") from None

    def loads(self, seen: ClusterModel) -> ClusterModel:
        if self.measured is None:
            raise DemoError("no measured load yet")
        return view.with_observed_placement(self.measured, seen)

    def clock(self) -> float | None:
        return None


@contextlib.contextmanager
def real(workdir: Path, size_scale: float = 1.0) -> Iterator[RealDemo]:
    """The cluster started, filled (``size_scale`` times VOLUME's records) and under traffic; stopped (and its
    data deleted) on the way out."""
    if size_scale <= 0:
        raise DemoError(f"--size-scale: must be > 0 (got {size_scale})")
    options = RealClusterOptions(
        brokers=BROKERS, racks=RACKS, port_base=free_port_range(BROKERS + 1), data_dir=workdir / "kafka"
    )
    try:
        cluster = RealCluster(options)
        cluster.start()
    except SandboxError as err:
        raise DemoError(f"starting the real Kafka cluster: {err}") from None
    try:
        create_topics(cluster.bootstrap_servers, TOPICS)
        writer = RecordWriter(cluster.bootstrap_servers, record_bytes=RECORD_BYTES, client_id="demo-producer")
        for t in TOPICS:
            writer.write(t.name, range(len(t.replicas)), int(VOLUME[t.name][0] * MB * size_scale) // RECORD_BYTES)
        writer.flush()
        rates = {t.name: (len(t.replicas), VOLUME[t.name][1] * MB) for t in TOPICS}
        with SteadyTraffic(writer, rates):
            yield RealDemo(cluster)
    except TrafficError as err:
        raise DemoError(str(err)) from None
    finally:
        cluster.stop()

"""`kafka-balancer demo`: the embedded demo (see README).

Issue 2 stage: bring the embedded skewed cluster up in the Kafka emulator, read it back through the
Kafka adapter (real clients over TCP), print the per-broker picture, and stop cleanly.
"""

from __future__ import annotations

import argparse
from collections import Counter

from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.model import ClusterModel
from kafka_balancer.sandbox import EmulatedCluster, EmulatorOptions
from kafka_balancer.sandbox.demo_cluster import skewed_demo_model

HELP = "Run the embedded demo: an emulated skewed cluster balanced end to end."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Free ports by default: the demo stops once it has printed, so fixed ports would only risk a clash.
    parser.add_argument("--port-base", type=int, default=0, help="first emulated broker port (0 = any free ports)")


def broker_table(model: ClusterModel) -> str:
    """One line per broker: rack, replicas, leaders, bytes on disk, and the spread of each."""
    replicas: Counter[int] = Counter()
    leaders: Counter[int] = Counter()
    disk: Counter[int] = Counter()
    for part in model.partitions():
        for b in part.replicas:
            replicas[b] += 1
            disk[b] += int(part.size_bytes)
        if part.leader is not None:
            leaders[part.leader] += 1
    lines = [f"{'broker':>6}  {'rack':<8} {'alive':<5} {'replicas':>8} {'leaders':>7} {'disk GB':>9}"]
    for info in model.brokers():
        lines.append(
            f"{info.id:>6}  {info.rack or '-':<8} {'yes' if info.alive else 'NO':<5} "
            f"{replicas[info.id]:>8} {leaders[info.id]:>7} {disk[info.id] / 1e9:>9.1f}"
        )
    ids = [int(b) for b in model.broker_ids]
    for name, counts, scale in (("replicas", replicas, 1.0), ("leaders", leaders, 1.0), ("disk GB", disk, 1e9)):
        values = [counts[b] / scale for b in ids]
        mean = sum(values) / len(values)
        ratio = max(values) / mean if mean else 0.0
        lines.append(f"{name:>8}: max/avg {ratio:.2f} (min {min(values):g}, max {max(values):g})")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    model = skewed_demo_model()
    options = EmulatorOptions(port_base=args.port_base or None)
    with EmulatedCluster.start(model, options=options) as cluster:
        print(f"emulated cluster '{model.cluster_name}' on {cluster.bootstrap_servers}")
        adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers))
        try:
            read = adapter.read_cluster()
            controller = adapter.describe_cluster().controller_id
        finally:
            adapter.close()
    print(
        f"read back through the Kafka adapter: {read.num_brokers} brokers, {len(read.topics)} topics, "
        f"{read.num_partitions} partitions, {read.num_replicas} replicas, controller {controller}"
    )
    print(broker_table(read))
    print("emulator stopped")
    return 0

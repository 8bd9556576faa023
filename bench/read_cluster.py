"""How long reading the full state of a large emulated cluster through the adapter takes.

    .venv/bin/python -m bench.read_cluster [--partitions 200000] [--brokers 60]

Brings up the emulator from a synthetic model (RF 3, 20 partitions per topic), then times
KafkaAdapter.read_cluster() (Metadata + DescribeCluster + DescribeConfigs for every topic +
DescribeLogDirs on every broker) and checks the result matches the model. Target: < 60 s for 200k.
"""

from __future__ import annotations

import argparse
import os
import time

from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.sandbox import EmulatedCluster


def synthetic(partitions: int, brokers: int, per_topic: int = 20) -> ClusterModel:
    builder = ClusterBuilder(cluster_name=f"synthetic-{partitions}")
    for b in range(1, brokers + 1):
        builder.add_broker(b, rack=f"rack-{b % 3}")
    for p in range(partitions):
        topic, index = divmod(p, per_topic)
        replicas = [1 + (p + k * 7) % brokers for k in range(3)]
        builder.add_partition(f"topic-{topic:05d}", index, replicas, size_bytes=float(1000 + p))
    return builder.build()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=200_000)
    parser.add_argument("--brokers", type=int, default=60)
    args = parser.parse_args()
    t0 = time.perf_counter()
    model = synthetic(args.partitions, args.brokers)
    t1 = time.perf_counter()
    with EmulatedCluster.start(model) as cluster:
        adapter = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=120))
        try:
            t2, cpu2 = time.perf_counter(), time.process_time()
            read = adapter.read_cluster()
            t3, cpu3 = time.perf_counter(), time.process_time()
        finally:
            adapter.close()
    assert read.num_partitions == model.num_partitions, (read.num_partitions, model.num_partitions)
    assert (read.size_bytes == model.size_bytes).all()
    print(f"partitions={model.num_partitions} replicas={model.num_replicas} brokers={model.num_brokers}")
    print(f"build model: {t1 - t0:.1f} s")
    print(f"read_cluster through the adapter: {t3 - t2:.1f} s (target < 60 s)")
    # The emulator runs in this process: CPU time covers brokers and both clients, and unlike the
    # wall time above it does not grow when other work shares the machine.
    print(f"CPU time of that read (emulated brokers + clients, all threads): {cpu3 - cpu2:.1f} s")
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

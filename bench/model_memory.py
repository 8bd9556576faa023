"""Bytes per replica of the ClusterModel's arrays (the planner's input; its peak working set is
measured by ``bench.planner scale``), for ~1M replicas.

    .venv/bin/python -m bench.model_memory [--partitions 340000] [--brokers 300] [--rf 3]

Builds the model through the public ClusterBuilder (the path snapshots and the Kafka adapter
take) and reports the numpy arrays alone and the arrays plus the topic and rack name strings.
Target: < 200 bytes per replica (issue 2).
"""

from __future__ import annotations

import argparse
import sys
import time

from kafka_balancer.model import ClusterBuilder, ClusterModel


def build(partitions: int, brokers: int, rf: int, per_topic: int = 50) -> ClusterModel:
    builder = ClusterBuilder(cluster_name=f"memory-{partitions}")
    for b in range(1, brokers + 1):
        builder.add_broker(b, rack=f"rack-{b % 3}")
    for p in range(partitions):
        topic, index = divmod(p, per_topic)
        replicas = [1 + (p + k * 7) % brokers for k in range(rf)]
        builder.add_partition(f"topic-{topic:05d}", index, replicas, size_bytes=float(p), bytes_in_per_sec=1.0)
    return builder.build()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=340_000)
    parser.add_argument("--brokers", type=int, default=300)
    parser.add_argument("--rf", type=int, default=3)
    args = parser.parse_args()
    started = time.perf_counter()
    model = build(args.partitions, args.brokers, args.rf)
    took = time.perf_counter() - started
    arrays = model.nbytes()
    names = sum(sys.getsizeof(t) for t in model.topics) + sum(sys.getsizeof(r) for r in model.broker_racks)
    replicas = model.num_replicas
    print(f"replicas={replicas} partitions={model.num_partitions} brokers={model.num_brokers} (built in {took:.1f} s)")
    print(f"model arrays: {arrays / 1e6:.1f} MB = {arrays / replicas:.1f} bytes per replica")
    print(f"arrays + topic/rack names: {(arrays + names) / replicas:.1f} bytes per replica (target < 200)")


if __name__ == "__main__":
    main()

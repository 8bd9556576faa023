"""The embedded demo cluster: 6 brokers on 3 racks, skewed the way clusters drift in practice.

Broker 6 was just added and holds nothing; broker 1 leads most partitions after a rolling restart
left leadership behind; a third of the partitions have two replicas on rack-a (not rack aware);
topic sizes and traffic differ by an order of magnitude.
"""

from __future__ import annotations

from kafka_balancer.model import ClusterBuilder, ClusterModel

GB = 1e9
MB = 1e6


def skewed_demo_model() -> ClusterModel:
    builder = ClusterBuilder(cluster_name="demo-skewed", captured_at="2026-01-01T00:00:00Z")
    for broker in range(1, 7):
        builder.add_broker(
            broker,
            rack=f"rack-{'abc'[(broker - 1) % 3]}",
            disk_bytes=2000 * GB,
            # 10 GbE: the traffic below (about 1 GB/s of replica network-in in total) fits with room
            # to spare, so the demo is about balance, not about a cluster that is simply too small.
            network_in_bytes_per_sec=1250 * MB,
            network_out_bytes_per_sec=1250 * MB,
            cpu_cores=8,
        )
    # (topic, partitions, size per partition, bytes in/s per partition, min ISR)
    topics = [
        ("orders", 24, 10 * GB, 4 * MB, 2),
        ("payments", 12, 6 * GB, 2 * MB, 2),
        ("clickstream", 48, 1.5 * GB, 1.5 * MB, None),
        ("audit-log", 6, 20 * GB, 0.5 * MB, 2),
        ("inventory", 8, 0.5 * GB, 0.2 * MB, None),
    ]
    old_brokers = [1, 2, 3, 4, 5]
    for t, (topic, count, size, rate, min_isr) in enumerate(topics):
        builder.set_topic(topic, min_insync_replicas=min_isr)
        for p in range(count):
            # Replicas only on the five old brokers, crowding the low ids (rack a/b) as a
            # cluster grown one broker at a time tends to.
            first = (t + p) % 3
            replicas = [old_brokers[first], old_brokers[(first + 1) % 5], old_brokers[(first + 3) % 5]]
            leader = 1 if 1 in replicas and p % 2 == 0 else replicas[0]
            weight = 1.0 + (p % 4) * 0.5
            builder.add_partition(
                topic,
                p,
                replicas,
                leader=leader,
                size_bytes=size * weight,
                bytes_in_per_sec=rate * weight,
                bytes_out_per_sec=rate * weight * 2,
                messages_in_per_sec=rate * weight / 1000,
            )
    return builder.build()

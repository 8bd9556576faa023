"""The embedded demo cluster: 8 brokers on 4 racks, skewed the way clusters drift in practice.

It fits the example resource groups (examples/00-resource-groups.yaml): brokers 1-3 (racks a and b)
serve the ``payments`` group, the brokers on racks c and d serve ``analytics``.

- payments: broker 1 leads every partition (the tool that created the topics always listed it
  first, so it is also every partition's preferred leader); ``refunds`` (RF 2) lives on brokers 1
  and 2 only, so broker 3 carries less.
- analytics: ``clickstream.web`` is the hot topic (most bytes and traffic); brokers 7 and 8 were just
  added and hold nothing; everything sits on brokers 4-6.

Traffic stays well inside the declared capacities (10 GbE, 80% capacity threshold) before and after
balancing, so the demo is about balance, not about a cluster that is simply too small.
``size_scale`` shrinks the bytes (not the shape) for a quicker run: the copy time follows the bytes.
"""

from __future__ import annotations

from typing import NamedTuple

from kafka_balancer.model import ClusterBuilder, ClusterModel

GB = 1e9
MB = 1e6

# broker id -> rack. Payments on racks a/b, analytics on racks c/d (a rack selector in the example).
RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-a", 4: "rack-c", 5: "rack-d", 6: "rack-c", 7: "rack-d", 8: "rack-c"}
NEW_BROKERS = (7, 8)


class DemoTopic(NamedTuple):
    name: str
    partitions: int
    size_bytes: float  # per partition, before the per-partition weight
    bytes_in_per_sec: float  # per partition, before the weight
    replicas: tuple[int, ...]  # the brokers the partitions rotate over
    rf: int
    min_isr: int | None
    leader: int | None  # listed first (preferred leader, and leader) whenever it holds a replica


TOPICS = (
    DemoTopic("payments", 12, 4 * GB, 2 * MB, (1, 2, 3), 3, 2, 1),
    DemoTopic("payments-ledger", 6, 8 * GB, 1 * MB, (1, 2, 3), 3, 2, 1),
    DemoTopic("refunds", 6, 2 * GB, 0.5 * MB, (1, 2), 2, 1, 1),
    DemoTopic("clickstream.web", 24, 6 * GB, 6 * MB, (4, 5, 6), 3, 2, None),
    DemoTopic("clickstream.mobile", 12, 3 * GB, 2 * MB, (4, 5, 6), 3, 2, None),
    DemoTopic("metrics-host", 8, 1.5 * GB, 1 * MB, (4, 5), 2, None, 4),
)


def skewed_demo_model(size_scale: float = 1.0) -> ClusterModel:
    if size_scale <= 0:
        raise ValueError(f"size_scale must be > 0 (got {size_scale})")
    builder = ClusterBuilder(cluster_name="demo-skewed", captured_at="2026-01-01T00:00:00Z")
    for broker, rack in RACKS.items():
        builder.add_broker(
            broker,
            rack=rack,
            disk_bytes=2000 * GB,
            network_in_bytes_per_sec=1250 * MB,
            network_out_bytes_per_sec=1250 * MB,
            cpu_cores=8,
        )
    for topic in TOPICS:
        builder.set_topic(topic.name, min_insync_replicas=topic.min_isr)
        ring = topic.replicas
        for p in range(topic.partitions):
            replicas = [ring[(p + k) % len(ring)] for k in range(topic.rf)]
            if topic.leader in replicas:
                replicas.remove(topic.leader)
                replicas.insert(0, topic.leader)
            # Uneven partitions, as keyed traffic makes them: 1x to 2.5x the topic's base.
            weight = 1.0 + (p % 4) * 0.5
            rate = topic.bytes_in_per_sec * weight
            builder.add_partition(
                topic.name,
                p,
                replicas,
                leader=replicas[0],
                size_bytes=topic.size_bytes * weight * size_scale,
                bytes_in_per_sec=rate,
                bytes_out_per_sec=rate * 2,  # two consumer groups read every topic
                messages_in_per_sec=rate / 1000,  # 1 kB messages
            )
    return builder.build()

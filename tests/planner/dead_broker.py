"""Small literal clusters with a dead broker, shared by the planner's tests and the plan CLI's."""

from __future__ import annotations

from kafka_balancer.model import ClusterBuilder, ClusterModel


def with_dead_broker(rows: list[tuple[str, int, list[int], float, float]], racks: int, dead: int) -> ClusterModel:
    """Brokers 0-4 in ``racks`` racks (broker b in r{b % racks}), ``dead`` down; (topic, partition,
    replicas, size, bytes in per second) rows with twice the bytes in going out."""
    builder = ClusterBuilder()
    for b in range(5):
        builder.add_broker(b, rack=f"r{b % racks}", alive=b != dead)
    for topic, p, replicas, size, rate in rows:
        builder.add_partition(topic, p, replicas, size_bytes=size, bytes_in_per_sec=rate, bytes_out_per_sec=2 * rate)
    return builder.build()


def left_worse_by_the_hard_goals() -> ClusterModel:
    """The dead broker 1's replica of t0-2 goes to broker 0 (least filled: broker 3 holds a 1 GB
    partition), which already holds two of t0; guarded from the start, the distribution goals before
    the per-topic one (disk, traffic) keep broker 3 from taking a t0 replica, so t0 ends out of its
    band: a plan's summary names topic-replica-distribution in goalsWorsenedByHardGoals."""
    return with_dead_broker(
        [
            ("t0", 0, [0], 6354, 58790),
            ("t0", 1, [0], 971454, 23351),
            ("t0", 2, [4, 1, 2], 4161, 1310),
            ("t1", 0, [3, 4], 999999999, 59),
        ],
        racks=1,
        dead=1,
    )

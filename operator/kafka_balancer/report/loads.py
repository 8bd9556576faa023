"""Per-broker load figures shown in the report, computed from a :class:`ClusterModel`.

The traffic model is Kafka's own: every replica of a partition writes the partition's incoming
bytes (the leader from producers, each follower from its fetch of the leader), while the leader
alone serves consumers and the followers' fetches. So a move of a follower changes network-in
and disk on two brokers, and a leadership change moves only network-out and the leader count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from kafka_balancer.model import NO_BROKER, ClusterModel
from kafka_balancer.model.cluster import FloatArray

# (key, title, unit) of each per-broker figure, in the order the report shows them.
METRICS: Final = (
    ("disk", "Disk", "bytes"),
    ("network_in", "Network in", "bytes/s"),
    ("network_out", "Network out", "bytes/s"),
    ("leaders", "Leaders", "count"),
    ("replicas", "Replicas", "count"),
)


@dataclass(frozen=True)
class BrokerLoads:
    """One value per broker (in ``broker_ids`` order) for each entry of :data:`METRICS`."""

    broker_ids: tuple[int, ...]
    racks: tuple[str | None, ...]
    alive: tuple[bool, ...]
    values: dict[str, tuple[float, ...]]

    def metric(self, key: str) -> tuple[float, ...]:
        try:
            return self.values[key]
        except KeyError:
            raise KeyError(f"unknown report metric {key!r} (known: {', '.join(k for k, _, _ in METRICS)})") from None


def broker_loads(model: ClusterModel) -> BrokerLoads:
    """Sum partition loads onto brokers with array operations (no per-replica Python loop)."""
    brokers = model.num_brokers
    placed = model.replicas != NO_BROKER  # (P, max_rf)
    rows, _slots = np.nonzero(placed)
    on_broker = model.replicas[placed]  # broker index of each replica, row-major like ``rows``
    rf = placed.sum(axis=1)

    def per_broker(index: np.ndarray, weights: FloatArray) -> tuple[float, ...]:
        totals = np.bincount(index, weights=weights, minlength=brokers)
        return tuple(float(v) for v in totals)

    led = model.leader != NO_BROKER
    leader_index = model.leader[led]
    # The leader serves consumers plus one copy of the incoming bytes for every follower.
    leader_out = model.bytes_out[led] + model.bytes_in[led] * (rf[led] - 1)
    values = {
        "disk": per_broker(on_broker, model.size_bytes[rows]),
        "network_in": per_broker(on_broker, model.bytes_in[rows]),
        "network_out": per_broker(leader_index, leader_out),
        "leaders": per_broker(leader_index, np.ones(leader_index.shape[0])),
        "replicas": per_broker(on_broker, np.ones(on_broker.shape[0])),
    }
    return BrokerLoads(
        broker_ids=tuple(int(b) for b in model.broker_ids),
        racks=model.broker_racks,
        alive=tuple(bool(a) for a in model.broker_alive),
        values=values,
    )

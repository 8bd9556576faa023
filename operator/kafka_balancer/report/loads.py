"""Per-broker load figures shown in the report, computed from a :class:`ClusterModel`.

Each figure is a quantity of model/quantities (the traffic model is Kafka's own, written there
once): every replica writes the partition's incoming bytes, while the leader alone serves consumers
and the followers' fetches. So a move of a follower changes network-in and disk on two brokers, and
a leadership change moves only network-out and the leader count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kafka_balancer.model import ClusterModel
from kafka_balancer.model.quantities import DISK_BYTES, LEADERS, NETWORK_IN_BYTES, NETWORK_OUT_BYTES, REPLICAS, quantity

# (key, title, unit) of each per-broker figure, in the order the report shows them.
METRICS: Final = (
    ("disk", "Disk", "bytes"),
    ("network_in", "Network in", "bytes/s"),
    ("network_out", "Network out", "bytes/s"),
    ("leaders", "Leaders", "count"),
    ("replicas", "Replicas", "count"),
)
# The quantity (model/quantities) each figure shows.
_QUANTITY_OF: Final = {
    "disk": DISK_BYTES,
    "network_in": NETWORK_IN_BYTES,
    "network_out": NETWORK_OUT_BYTES,
    "leaders": LEADERS,
    "replicas": REPLICAS,
}


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
    values = {
        key: tuple(float(v) for v in quantity(_QUANTITY_OF[key]).per_broker(model)) for key, _title, _unit in METRICS
    }
    return BrokerLoads(
        broker_ids=tuple(int(b) for b in model.broker_ids),
        racks=model.broker_racks,
        alive=tuple(bool(a) for a in model.broker_alive),
        values=values,
    )

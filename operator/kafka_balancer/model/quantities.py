"""The per-partition quantities: what leading and following a partition weigh, each formula once.

Kafka's traffic model: every replica of a partition writes the partition's incoming bytes (the
leader from producers, each follower from its fetch of the leader) and stores its bytes; the
leader alone serves consumers and the followers' fetches. So, per partition with ``rf`` replicas:

* network in: ``bytesIn`` on the leader and on each follower;
* network out: ``bytesOut + bytesIn x (rf - 1)`` on the leader, nothing on a follower;
* disk: ``sizeBytes`` on every replica;
* CPU: ``leader_in x bytesIn + leader_out x bytesOut`` on the leader, ``follower_in x bytesIn`` on
  each follower (:class:`CpuWeights`);
* replicas: one on every replica; leaders: one on the leader.

A quantity's *rows* are its (leader, follower) load per partition: arrays over partitions, or a
number every partition shares. The functions here take arrays, so the analysis (per-partition
rates, before a :class:`ClusterModel` exists) and the loaders of a model (the planner's goals, the
report's charts) compute the same figures. A :class:`Quantity` is a per-broker load: the sum of its
rows over the replicas a broker holds (the leader row where the replica leads).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from kafka_balancer.model.cluster import (
    CPU,
    DISK,
    NETWORK_IN,
    NETWORK_OUT,
    NO_BROKER,
    ClusterModel,
    FloatArray,
    IntArray,
)

Row = FloatArray | float
# (leader row, follower row) of a quantity per partition.
Rows = tuple[Row, Row]
# The rows of a quantity in a model whose partitions have ``rf`` replicas each.
Loader = Callable[[ClusterModel, IntArray], Rows]
# How much of a quantity leadership carries: none (leader and followers carry the same), part (the
# leader carries more), all (followers carry none of it).
Leadership = Literal["none", "part", "all"]


@dataclass(frozen=True)
class CpuWeights:
    """Cores (or weighted bytes) per byte/s of a partition's traffic, by role."""

    leader_in: float
    leader_out: float
    follower_in: float

    def rows(self, bytes_in: FloatArray, bytes_out: FloatArray) -> tuple[FloatArray, FloatArray]:
        leader: FloatArray = bytes_in * self.leader_in + bytes_out * self.leader_out
        follower: FloatArray = bytes_in * self.follower_in
        return leader, follower


# The planner's CPU estimate where a partition's leader CPU is not measured, in cores: produce (in)
# costs more than fetch (out, zero-copy) and a follower's replication fetch about half a leader's
# produce path. Only ratios matter for balancing; absolute cores matter for capacity.
ESTIMATED_CPU: Final = CpuWeights(
    leader_in=1.0 / (40 * 1024 * 1024), leader_out=1.0 / (120 * 1024 * 1024), follower_in=0.5 / (40 * 1024 * 1024)
)


def network_in_rows(bytes_in: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Every replica writes the partition's incoming bytes."""
    return bytes_in, bytes_in


def network_out_rows(
    bytes_in: FloatArray, bytes_out: FloatArray, rf: npt.NDArray[np.integer]
) -> tuple[FloatArray, float]:
    """The leader serves consumers and one copy of the incoming bytes to each follower."""
    leader: FloatArray = bytes_out + bytes_in * np.maximum(rf - 1, 0)
    return leader, 0.0


def per_replica(rows: Rows, owner: npt.NDArray[np.integer], leads: npt.NDArray[np.bool_]) -> FloatArray:
    """The load of each replica: its partition's (``owner``) leader row where it ``leads``, else the follower row."""
    leader, follower = (row[owner] if isinstance(row, np.ndarray) else np.full(owner.shape, row) for row in rows)
    out: FloatArray = np.where(leads, leader, follower)
    return out


@dataclass(frozen=True)
class Quantity:
    """A per-broker load: the name the summary, the triggers and the goals use, and its loader."""

    name: str
    count: bool  # whole items: a band of it is rounded outwards to whole numbers
    leadership: Leadership
    load: Loader
    capacity_column: int | None = None  # of ClusterModel.capacity, for its capacity goal

    @property
    def leadership_carries(self) -> bool:
        """Whether moving a leadership moves some of it (no data moves)."""
        return self.leadership != "none"

    @property
    def leaders_only(self) -> bool:
        """Whether only leaders carry it: only leader replicas (or leaderships) can move it."""
        return self.leadership == "all"

    def per_broker(self, model: ClusterModel) -> FloatArray:
        """Its total on each broker of ``model`` (in broker index order) for the model's placement."""
        placed = model.replicas != NO_BROKER
        rows, _slots = np.nonzero(placed)
        on_broker = model.replicas[placed]  # row-major, like ``rows``
        loads = per_replica(self.load(model, placed.sum(axis=1, dtype=np.int32)), rows, on_broker == model.leader[rows])
        return np.bincount(on_broker, weights=loads, minlength=model.num_brokers).astype(np.float64, copy=False)


def _replicas(_model: ClusterModel, _rf: IntArray) -> Rows:
    return 1.0, 1.0


def _disk(model: ClusterModel, _rf: IntArray) -> Rows:
    return model.size_bytes, model.size_bytes


def _network_in(model: ClusterModel, _rf: IntArray) -> Rows:
    return network_in_rows(model.bytes_in)


def _network_out(model: ClusterModel, rf: IntArray) -> Rows:
    return network_out_rows(model.bytes_in, model.bytes_out, rf)


def _cpu(model: ClusterModel, _rf: IntArray) -> Rows:
    estimated, follower = ESTIMATED_CPU.rows(model.bytes_in, model.bytes_out)
    leader: FloatArray = np.where(np.isnan(model.cpu_leader), estimated, model.cpu_leader)
    return leader, follower


def _leaders(_model: ClusterModel, _rf: IntArray) -> Rows:
    return 1.0, 0.0


def _leader_bytes_in(model: ClusterModel, _rf: IntArray) -> Rows:
    return model.bytes_in, 0.0


REPLICAS: Final = "replicas"
DISK_BYTES: Final = "disk"
NETWORK_IN_BYTES: Final = "network-in"
NETWORK_OUT_BYTES: Final = "network-out"
CPU_CORES: Final = "cpu"
LEADERS: Final = "leaders"
LEADER_BYTES_IN: Final = "leader-bytes-in"

# The built-in quantities, in the column order of the planner's load arrays.
QUANTITIES: Final = (
    Quantity(REPLICAS, count=True, leadership="none", load=_replicas),
    Quantity(DISK_BYTES, count=False, leadership="none", load=_disk, capacity_column=DISK),
    Quantity(NETWORK_IN_BYTES, count=False, leadership="none", load=_network_in, capacity_column=NETWORK_IN),
    Quantity(NETWORK_OUT_BYTES, count=False, leadership="part", load=_network_out, capacity_column=NETWORK_OUT),
    Quantity(CPU_CORES, count=False, leadership="part", load=_cpu, capacity_column=CPU),
    Quantity(LEADERS, count=True, leadership="all", load=_leaders),
    Quantity(LEADER_BYTES_IN, count=False, leadership="all", load=_leader_bytes_in),
)


def quantity(name: str) -> Quantity:
    """The built-in quantity called ``name``."""
    for q in QUANTITIES:
        if q.name == name:
            return q
    raise KeyError(f"quantity: unknown name {name!r} (known: {', '.join(q.name for q in QUANTITIES)})")

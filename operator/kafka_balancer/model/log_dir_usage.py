"""What each log directory (JBOD) holds: the per-directory view of the HTML report and of the metrics.

A directory's bytes are the partition sizes of the replicas in it (the model's one size per
partition), its utilisation those bytes over its volume's size (``totalBytes`` from DescribeLogDirs),
its ratio those bytes over its target, the broker's own average as log-dir-distribution weighs it
(kafka_balancer.model.log_dirs: the open directories share the broker's bytes by volume size). A
broker's replicas in no directory it reports (moved by a plan with ``"any"``, or not listed by
DescribeLogDirs) are one more row of that broker, with ``path`` None, so that the rows of a broker
always add up to its bytes. A broker whose directories are not known (a snapshot without them, a
broker that is down) has no rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, ClusterModel, LogDir
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.log_dirs import band, dir_bands, dir_bytes, largest_replicas, layout_of, snapshot_dirs
from kafka_balancer.model.policy.balance_policy import Goals

# Float noise allowed at the edges of the band and of the capacity limit.
_TOLERANCE: Final = 1e-9


@dataclass(frozen=True)
class LogDirUsage:
    """One log directory of one broker (or, with ``path`` None, the broker's replicas in none it reports)."""

    broker_id: int
    path: str | None
    cordoned: bool
    total_bytes: float | None  # the volume's size; None where not known
    usable_bytes: float | None  # the volume's free space; None where not known
    bytes: float  # partition sizes of the replicas in it
    replicas: int
    broker_bytes: float  # the broker's bytes in all its directories and in none
    broker_dirs: int  # the broker's directories
    # Its share of the broker's bytes as log-dir-distribution weighs it (None where the goal does not
    # weigh it: a cordoned directory, a broker with one open, the row of no directory), and the grain
    # its band is widened by (the broker's largest replica).
    target: float | None = None
    grain: float = 0.0

    @property
    def share(self) -> float | None:
        """Its part of the broker's bytes (0..1); None when the broker holds nothing."""
        return self.bytes / self.broker_bytes if self.broker_bytes > 0 else None

    @property
    def utilisation(self) -> float | None:
        """Bytes over the volume's size; None where the size is not known (or for the row of no directory)."""
        if self.path is None or not self.total_bytes:
            return None
        return self.bytes / self.total_bytes

    @property
    def ratio(self) -> float | None:
        """Bytes over its target (1.0 = at the broker's own average); None where the goal does not weigh
        it and for a broker that holds nothing."""
        if self.target is None or self.target <= 0:
            return None
        return self.bytes / self.target


@dataclass(frozen=True)
class DirLimits:
    """The goals' thresholds a directory is flagged against: ``capacityThreshold`` of its volume's size
    and log-dir-distribution's ``balanceThreshold`` band around its target
    (kafka_balancer.model.log_dirs.band; docs/goals.md); the defaults are the BalancePolicy's."""

    capacity_threshold: float = float(Goals.model_fields["capacity_threshold"].default)
    balance_threshold: float = float(Goals.model_fields["balance_threshold"].default)

    def __post_init__(self) -> None:
        if not 0.0 < self.capacity_threshold <= 1.0:
            raise ModelError(f"capacityThreshold must be in (0, 1], got {self.capacity_threshold!r}")
        if not 1.0 <= self.balance_threshold <= 10.0:
            raise ModelError(f"balanceThreshold must be between 1.0 and 10.0, got {self.balance_threshold!r}")

    def over_capacity(self, usage: LogDirUsage) -> bool:
        u = usage.utilisation
        return u is not None and u > self.capacity_threshold + _TOLERANCE

    def out_of_band(self, usage: LogDirUsage) -> bool:
        if usage.target is None:
            return False
        lower, upper = band(np.array([usage.target]), np.array([usage.grain]), self.balance_threshold)
        slack = _TOLERANCE * max(1.0, usage.target)
        return not float(lower[0]) - slack <= usage.bytes <= float(upper[0]) + slack


def log_dir_usage(model: ClusterModel) -> tuple[LogDirUsage, ...]:
    """Every known directory of every broker, in broker then ``log.dirs`` order, each broker's row of
    replicas in no known directory after its directories where it has such replicas."""
    counts = np.array([len(model.log_dirs(b)) for b in range(model.num_brokers)], dtype=np.int64)
    if not counts.any():
        return ()
    # One slot per directory and one more per broker (the last: no known directory).
    offset = np.concatenate([[0], np.cumsum(counts + 1)[:-1]])
    rows, slots = np.nonzero(model.replicas != NO_BROKER)
    broker = model.replicas[rows, slots].astype(np.int64)
    found = (
        model.replica_dir[rows, slots].astype(np.int64)
        if model.replica_dir is not None
        else np.full(rows.shape[0], -1, dtype=np.int64)
    )
    known = (found >= 0) & (found < counts[broker])
    slot = offset[broker] + np.where(known, found, counts[broker])
    sizes = model.size_bytes[rows]
    width = int(offset[-1] + counts[-1] + 1)
    held = np.bincount(slot, weights=sizes, minlength=width)
    replicas = np.bincount(slot, minlength=width)
    broker_bytes = np.bincount(broker, weights=sizes, minlength=model.num_brokers)
    targets, grains = _targets(model)
    out: list[LogDirUsage] = []
    for b in np.flatnonzero(counts).tolist():
        dirs: tuple[LogDir | None, ...] = (*model.log_dirs(b), None)  # None: the row of no directory
        for k, d in enumerate(dirs):
            at = int(offset[b]) + k
            if d is None and not replicas[at]:
                continue
            out.append(
                LogDirUsage(
                    broker_id=int(model.broker_ids[b]),
                    path=None if d is None else d.path,
                    cordoned=d is not None and d.cordoned,
                    total_bytes=None if d is None else d.total_bytes,
                    usable_bytes=None if d is None else d.usable_bytes,
                    bytes=float(held[at]),
                    replicas=int(replicas[at]),
                    broker_bytes=float(broker_bytes[b]),
                    broker_dirs=len(dirs) - 1,
                    target=None if d is None else targets.get((b, k)),
                    grain=grains[b],
                )
            )
    return tuple(out)


def _targets(model: ClusterModel) -> tuple[dict[tuple[int, int], float], list[float]]:
    """(broker index, directory index) -> its target, where log-dir-distribution weighs it; and each
    broker's grain (its largest replica)."""
    layout = layout_of(model)
    if layout is None:
        return {}, [0.0] * model.num_brokers
    held = dir_bytes(layout, model.replicas, snapshot_dirs(layout, model), model.size_bytes)
    grain = largest_replicas(layout, model.replicas, model.size_bytes)
    bands = dir_bands(layout, held, 1.0, grain)
    local = np.arange(layout.count) - layout.first[layout.broker]
    targets = {(int(layout.broker[d]), int(local[d])): float(bands.target[d]) for d in np.flatnonzero(bands.weighed)}
    grains = [0.0] * model.num_brokers
    for d in range(layout.count):
        grains[int(layout.broker[d])] = float(grain[d])
    return targets, grains


@dataclass(frozen=True)
class LogDirChange:
    """One directory before and after a plan or an execution; a side where it is absent is None (a
    broker added or removed, a row of no directory on one side only)."""

    broker_id: int
    path: str | None
    before: LogDirUsage | None
    after: LogDirUsage | None

    @property
    def current(self) -> LogDirUsage:
        """The side that describes the directory as it is to be (after where there is one)."""
        side = self.after if self.after is not None else self.before
        assert side is not None  # a change has at least one side
        return side


def log_dir_changes(before: ClusterModel, after: ClusterModel) -> tuple[LogDirChange, ...]:
    """The directories of both models side by side, by broker id then each broker's directory order
    (its known directories first, the row of no directory last)."""
    old = {(u.broker_id, u.path): u for u in log_dir_usage(before)}
    new = {(u.broker_id, u.path): u for u in log_dir_usage(after)}
    order = {key: n for n, key in enumerate([*new, *(k for k in old if k not in new)])}

    def position(key: tuple[int, str | None]) -> tuple[int, bool, int]:
        return key[0], key[1] is None, order[key]

    keys = sorted(order, key=position)
    return tuple(LogDirChange(b, path, old.get((b, path)), new.get((b, path))) for b, path in keys)

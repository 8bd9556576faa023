"""The log-directory level (JBOD): every known directory, the replicas in each, and its two goals.

A broker with several ``log.dirs`` keeps each replica in one of them. The directories of the whole
cluster are numbered flat (:class:`DirLayout`); a placement of replicas in directories is a
``(P, width)`` array of those numbers over the replica slots, ``-1`` where no directory is known
(a broker without known directories, a snapshot without them, a replica not placed yet).

Two goals weigh it (docs/goals.md, "Log directories"):

- ``log-dir-capacity`` (hard): the replicas in a directory take at most ``capacityThreshold`` of its
  volume (``totalBytes``). Other files on the volume are not counted: several directories on one
  volume (a test machine's) would each count the others' replicas, and a shared disk's other data
  would block every plan; dedicated volumes are the norm for ``log.dirs``;
- ``log-dir-distribution``: each broker's open directories (neither cordoned nor being removed)
  hold the bytes of its replicas within ``balanceThreshold`` of that broker's own average, each in
  proportion to its volume's size where every one of them has a known size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, ClusterModel, FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.options import PlannerOptions, PlanningError

# Relative slack for float comparisons (as the broker-level bands have).
_EPS = 1e-9


@dataclass(frozen=True)
class DirLayout:
    """Every known log directory, flat: directory ``d`` is on broker ``broker[d]``; broker ``b``'s are
    ``first[b]:first[b + 1]``, in its ``log.dirs`` order."""

    broker: Ints  # (D,) broker index
    first: Ints  # (B + 1,) offsets
    paths: tuple[str, ...]  # (D,)
    size: FloatArray  # (D,) the volume's total bytes; NaN where not known
    cordoned: BoolArray  # (D,) takes no new replica, keeps what it holds
    removed: BoolArray  # (D,) to be emptied (remove-disks): takes no new replica, keeps none

    @property
    def count(self) -> int:
        return len(self.paths)

    @property
    def open(self) -> BoolArray:
        """Directories that may take replicas."""
        out: BoolArray = ~self.cordoned & ~self.removed
        return out

    def name(self, d: int, broker_ids: Ints) -> str:
        return f"broker {int(broker_ids[self.broker[d]])} {self.paths[d]}"


def build_layout(model: ClusterModel, options: PlannerOptions) -> DirLayout | None:
    """The cluster's directories (None when no broker reported any), with the operation's removals.

    A directory named by ``operation.logDirs`` that the cluster does not have is refused by name.
    """
    if not model.broker_log_dirs:
        _check_removals_without_dirs(options)
        return None
    counts = np.array([len(model.log_dirs(b)) for b in range(model.num_brokers)], dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    dirs = [d for b in range(model.num_brokers) for d in model.log_dirs(b)]
    broker = np.repeat(np.arange(model.num_brokers, dtype=np.int64), counts)
    size = np.array([math.nan if d.total_bytes is None else d.total_bytes for d in dirs], dtype=np.float64)
    cordoned = np.array([d.cordoned for d in dirs], dtype=np.bool_)
    removed = np.zeros(len(dirs), dtype=np.bool_)
    for i, (broker_id, path) in enumerate(options.operation.log_dirs):
        removed[_named_dir(model, first, broker_id, path, i)] = True
    return DirLayout(broker, first, tuple(d.path for d in dirs), size, cordoned, removed)


def _check_removals_without_dirs(options: PlannerOptions) -> None:
    if options.operation.log_dirs:
        broker_id, path = options.operation.log_dirs[0]
        raise PlanningError(
            "invalid-options",
            f"field 'operation.logDirs[0]' names {path!r} on broker {broker_id}, but the snapshot has no log "
            "directories (read the cluster again: DescribeLogDirs lists them)",
        )


def _named_dir(model: ClusterModel, first: Ints, broker_id: int, path: str, i: int) -> int:
    where = f"field 'operation.logDirs[{i}]'"
    try:
        b = model.broker_index(broker_id)
    except KeyError:
        raise PlanningError(
            "invalid-options", f"{where} names broker {broker_id}, which is not in the cluster"
        ) from None
    paths = [d.path for d in model.log_dirs(b)]
    if path not in paths:
        raise PlanningError(
            "invalid-options", f"{where} names {path!r}, which is not a log directory of broker {broker_id} {paths}"
        )
    return int(first[b]) + paths.index(path)


def snapshot_dirs(layout: DirLayout, model: ClusterModel) -> Ints:
    """(P, max_rf) each replica's directory in the snapshot; -1 where not known."""
    out: Ints = np.full(model.replicas.shape, -1, dtype=np.int64)
    if model.replica_dir is None:
        return out
    local = model.replica_dir.astype(np.int64)
    known = (model.replicas != NO_BROKER) & (local >= 0)
    out[known] = layout.first[model.replicas[known]] + local[known]
    return out


def carried_dirs(layout: DirLayout, model: ClusterModel, rep: Ints) -> Ints:
    """(P, width of ``rep``) each replica's directory where its broker held the partition in the
    snapshot (it stays where it is); -1 for the replicas a broker receives and where none is known."""
    start = snapshot_dirs(layout, model)
    orig = model.replicas
    same = (rep[:, :, None] == orig[:, None, :]) & (rep[:, :, None] != NO_BROKER)  # (P, W, W0)
    held = same.any(axis=2)
    slot = same.argmax(axis=2)
    out: Ints = np.where(held, np.take_along_axis(start, slot, axis=1), -1)
    return out


def dir_bytes(layout: DirLayout, rep: Ints, dirs: Ints, size: FloatArray) -> FloatArray:
    """(D,) bytes of the replicas in each directory."""
    placed = (rep != NO_BROKER) & (dirs >= 0)
    weights = np.broadcast_to(size[:, None], rep.shape)[placed]
    out: FloatArray = np.bincount(dirs[placed], weights=weights, minlength=layout.count).astype(np.float64)
    return out


def per_broker(layout: DirLayout, values: FloatArray | BoolArray, nb: int) -> FloatArray:
    """(B,) the sum of a per-directory value over each broker's directories."""
    out: FloatArray = np.bincount(layout.broker, weights=values.astype(np.float64), minlength=nb).astype(np.float64)
    return out


def dir_limits(layout: DirLayout, capacity_threshold: float) -> FloatArray:
    """(D,) the most replica bytes each directory may hold: capacityThreshold of its volume; unlimited
    where its size is not known."""
    out: FloatArray = np.where(np.isnan(layout.size), math.inf, layout.size * capacity_threshold)
    return out


@dataclass(frozen=True)
class DirBands:
    """Per directory: the bytes its broker's average gives it (``target``) and the band around it;
    (-inf, inf) for directories the goal does not weigh (closed ones, a broker with one open)."""

    target: FloatArray
    lower: FloatArray
    upper: FloatArray
    weighed: BoolArray


def dir_bands(layout: DirLayout, held: FloatArray, threshold: float, unplaced: FloatArray | None = None) -> DirBands:
    """Each open directory's share of what its broker's open and removed directories hold (and of the
    ``unplaced`` bytes per broker, not in a directory yet), in proportion to its volume size where
    each open one of that broker has a known size, else equal."""
    nb = len(layout.first) - 1
    opened = layout.open
    n_open = per_broker(layout, opened, nb)
    sized = per_broker(layout, opened & ~np.isnan(layout.size), nb)
    by_size = (sized == n_open)[layout.broker]
    weight = np.where(opened, np.where(by_size, np.nan_to_num(layout.size), 1.0), 0.0)
    total_weight = per_broker(layout, weight, nb)[layout.broker]
    movable = np.where(opened | layout.removed, held, 0.0)
    totals = per_broker(layout, movable, nb)
    if unplaced is not None:
        totals = totals + unplaced
    total = totals[layout.broker]
    target = np.divide(total * weight, total_weight, out=np.zeros_like(weight), where=total_weight > 0)
    weighed = opened & (n_open[layout.broker] >= 2)
    lower = np.where(weighed, target * (2.0 - threshold), -math.inf)
    upper = np.where(weighed, target * threshold, math.inf)
    return DirBands(target, lower, upper, weighed)


def distribution_violation(bands: DirBands, held: FloatArray) -> float:
    """Out-of-band bytes over every weighed directory, each relative to its target (as the broker-level
    goals' violation is relative to their group average)."""
    out = np.maximum(held - bands.upper, 0.0) + np.maximum(bands.lower - held, 0.0)
    out = np.where(out > np.abs(bands.target) * _EPS + 1e-9, out, 0.0)
    return float(np.sum(np.divide(out, bands.target, out=np.zeros_like(out), where=bands.target > 0)))


def over_limit(held: FloatArray, limits: FloatArray) -> BoolArray:
    out: BoolArray = held > limits * (1 + _EPS) + 1e-9
    return out


def dir_disk_limits(layout: DirLayout, model: ClusterModel, options: PlannerOptions) -> FloatArray:
    """(B,) the most replica bytes each broker's directories may hold together: the limits of its open
    directories, plus what its cordoned ones hold up to theirs; unlimited where a directory's size is
    not known (or the broker has none)."""
    nb = model.num_brokers
    limits = dir_limits(layout, options.capacity_threshold)
    held = dir_bytes(layout, model.replicas, snapshot_dirs(layout, model), model.size_bytes)
    room = np.where(layout.open, limits, np.where(layout.removed, 0.0, np.minimum(held, limits)))
    out = per_broker(layout, np.where(np.isinf(room), 0.0, room), nb)
    unknown = per_broker(layout, np.isinf(room), nb) > 0
    return np.where(unknown | (np.diff(layout.first) == 0), math.inf, out)

"""The log-directory level (JBOD) in a plan: the operation's removals, what stays where it is, and the
two goals (the layout, the bytes and the band are the model's: kafka_balancer.model.log_dirs).

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

import dataclasses
import math

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, ClusterModel, FloatArray
from kafka_balancer.model.log_dirs import DirBands, DirLayout, dir_bytes, layout_of, per_broker, snapshot_dirs
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.options import PlannerOptions, PlanningError

# Relative slack for float comparisons (as the broker-level bands have).
_EPS = 1e-9


def build_layout(model: ClusterModel, options: PlannerOptions) -> DirLayout | None:
    """The cluster's directories (None when no broker reported any), with the operation's removals.

    A directory named by ``operation.logDirs`` that the cluster does not have is refused by name.
    """
    layout = layout_of(model)
    if layout is None:
        _check_removals_without_dirs(options)
        return None
    removed = layout.removed.copy()
    for i, (broker_id, path) in enumerate(options.operation.log_dirs):
        removed[_named_dir(model, layout.first, broker_id, path, i)] = True
    return dataclasses.replace(layout, removed=removed)


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


def dir_limits(layout: DirLayout, capacity_threshold: float) -> FloatArray:
    """(D,) the most replica bytes each directory may hold: capacityThreshold of its volume; unlimited
    where its size is not known."""
    out: FloatArray = np.where(np.isnan(layout.size), math.inf, layout.size * capacity_threshold)
    return out


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

"""Log directories (JBOD) over the whole cluster: which directory holds each replica, what each holds,
and the band each should hold within (docs/goals.md, "Log directories").

The planner's log-directory goals and the per-directory view of the report and the metrics read
these, so the band is defined once. The directories of the cluster are numbered flat
(:class:`DirLayout`); a placement of replicas in directories is a ``(P, width)`` array of those
numbers over the replica slots, ``-1`` where no directory is known.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, ClusterModel, FloatArray

# Index arrays: int32 from the model, int64 from numpy index functions; both are fine.
Ints = npt.NDArray[np.signedinteger[Any]]


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

    def name(self, d: int, broker_ids: npt.NDArray[np.int32]) -> str:
        return f"broker {int(broker_ids[self.broker[d]])} {self.paths[d]}"


def layout_of(model: ClusterModel) -> DirLayout | None:
    """The cluster's directories as the snapshot reports them (None when no broker reported any)."""
    if not model.broker_log_dirs:
        return None
    counts = np.array([len(model.log_dirs(b)) for b in range(model.num_brokers)], dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    dirs = [d for b in range(model.num_brokers) for d in model.log_dirs(b)]
    broker = np.repeat(np.arange(model.num_brokers, dtype=np.int64), counts)
    size = np.array([math.nan if d.total_bytes is None else d.total_bytes for d in dirs], dtype=np.float64)
    cordoned = np.array([d.cordoned for d in dirs], dtype=np.bool_)
    removed = np.zeros(len(dirs), dtype=np.bool_)
    return DirLayout(broker, first, tuple(d.path for d in dirs), size, cordoned, removed)


def snapshot_dirs(layout: DirLayout, model: ClusterModel) -> Ints:
    """(P, max_rf) each replica's directory in the snapshot; -1 where not known."""
    out: Ints = np.full(model.replicas.shape, -1, dtype=np.int64)
    if model.replica_dir is None:
        return out
    local = model.replica_dir.astype(np.int64)
    known = (model.replicas != NO_BROKER) & (local >= 0)
    out[known] = layout.first[model.replicas[known]] + local[known]
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


@dataclass(frozen=True)
class DirBands:
    """Per directory: the bytes its broker's average gives it (``target``) and the band around it;
    (-inf, inf) for directories the goal does not weigh (closed ones, a broker with one open)."""

    target: FloatArray
    lower: FloatArray
    upper: FloatArray
    weighed: BoolArray

    def outside(self, held: FloatArray) -> BoolArray:
        """(D,) the directories whose ``held`` bytes are outside their band (beyond float noise)."""
        out: BoolArray = (held > self.upper * (1 + 1e-9) + 1e-9) | (held < self.lower * (1 - 1e-9) - 1e-9)
        return out


def largest_replicas(layout: DirLayout, rep: Ints, size: FloatArray) -> FloatArray:
    """(D,) the largest replica of each directory's broker (under ``rep``): its directories' grain."""
    nb = len(layout.first) - 1
    on = rep != NO_BROKER
    largest: FloatArray = np.zeros(nb)
    np.maximum.at(largest, rep[on], np.broadcast_to(size[:, None], rep.shape)[on])
    out: FloatArray = largest[layout.broker]
    return out


def dir_bands(
    layout: DirLayout, held: FloatArray, threshold: float, grain: FloatArray, unplaced: FloatArray | None = None
) -> DirBands:
    """Each open directory's share of what its broker's open and removed directories hold (and of the
    ``unplaced`` bytes per broker, not in a directory yet), in proportion to its volume size where
    each open one of that broker has a known size, else equal. The band around it is widened by the
    ``grain`` (its broker's largest replica): whole replicas cannot fill a directory more finely, as
    the count goals' bands are rounded outwards to whole items."""
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
    lower, upper = band(target, grain, threshold)
    return DirBands(target, np.where(weighed, lower, -math.inf), np.where(weighed, upper, math.inf), weighed)


def band(target: FloatArray, grain: FloatArray, threshold: float) -> tuple[FloatArray, FloatArray]:
    """``[target x (2 - threshold) - grain, target x threshold + grain]``: log-dir-distribution's band."""
    return target * (2.0 - threshold) - grain, target * threshold + grain

"""The last stage of a plan on JBOD brokers: each replica's log directory (docs/goals.md, "Log directories").

The broker-level stages decide which brokers hold each partition; this one decides in which of a
broker's directories each replica sits, so one plan moves replicas between brokers (into a named
directory) and between a broker's directories:

1. a replica its broker already held stays in its directory, unless ``remove-disks`` empties it;
2. the replicas a broker receives (and those leaving removed directories) fill its open directories
   towards each one's target, the largest first, without any extra copy: they are copied anyway;
3. rounds of moves inside each broker, from its directory furthest above its target (or above its
   limit) to the one furthest below, where a directory is out of its band or above its limit. The
   replicas arriving go first, then the largest that fit the gap, so few bytes are copied.

Only the partitions the plan may move are placed again; the others keep their directories.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.model.log_dirs import DirBands, DirLayout, dir_bands, dir_bytes, largest_replicas, per_broker
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.log_dirs import carried_dirs, dir_limits, over_limit
from kafka_balancer.planner.base.measures import log_dir_over_limit
from kafka_balancer.planner.base.state import State, arrived_replicas
from kafka_balancer.planner.catalogue import CORDONED_LOG_DIRS, LOG_DIR_CAPACITY, LOG_DIR_DISTRIBUTION
from kafka_balancer.planner.options import PlanningError
from kafka_balancer.planner.tuning import TUNING


@dataclass
class _Placing:
    """The directory placement being built, with what every round reads."""

    st: State
    layout: DirLayout
    dirs: Ints  # (P, width) directory of each replica slot
    size: FloatArray  # (P, width) bytes of each replica slot (0 where empty)
    arrived: BoolArray  # (P, width) replicas the plan brings to their broker
    free: BoolArray  # (P, width) replicas this stage may place (their partition may move)
    limits: FloatArray  # (D,)
    grain: FloatArray  # (D,) the largest replica of the directory's broker (planner.base.log_dirs)
    balance: bool  # log-dir-distribution is among the goals

    def held(self) -> FloatArray:
        return dir_bytes(self.layout, self.st.rep, self.dirs, self.st.model.size_bytes)

    def bands(self, held: FloatArray, unplaced: FloatArray | None = None) -> DirBands:
        return dir_bands(self.layout, held, self.st.options.balance_threshold, self.grain, unplaced)


def place_log_dirs(st: State, movable: BoolArray, *, balance: bool) -> None:
    """Set ``st.dirs`` for the placement ``st.rep`` (``movable``: the partitions the plan may move;
    ``balance``: whether the plan balances, so log-dir-distribution moves replicas between directories;
    an operation that only changes the cluster's shape places what it must, towards the targets)."""
    layout = st.dir_layout
    if layout is None:
        return
    rep = st.rep
    dirs = carried_dirs(layout, st.model, rep)
    on = rep != NO_BROKER
    placing = _Placing(
        st,
        layout,
        dirs,
        np.where(on, st.model.size_bytes[:, None], 0.0),
        arrived_replicas(rep, st.model.replicas),
        on & movable[:, None],
        dir_limits(layout, st.options.capacity_threshold),
        largest_replicas(layout, rep, st.model.size_bytes),
        balance and LOG_DIR_DISTRIBUTION in st.options.distribution_goals,
    )
    _fill(placing)
    if placing.balance or st.options.hard(LOG_DIR_CAPACITY):
        for _ in range(TUNING.log_dir_rounds):
            if not _round(placing):
                break
    st.dirs = placing.dirs
    _check(placing)


def _fill(pl: _Placing) -> None:
    """Directories for the replicas that need one: those arriving on a broker with directories, and
    those in a removed directory; spread over the broker's open directories towards their targets."""
    layout, rep, dirs = pl.layout, pl.st.rep, pl.dirs
    nb = pl.st.model.num_brokers
    known = np.diff(layout.first)[np.maximum(rep, 0)] > 0
    if not pl.st.options.hard(CORDONED_LOG_DIRS):
        # A broker whose every directory is cordoned may then take replicas; the plan names no
        # directory for them (Kafka picks one, as on a broker whose directories are not known): a
        # cordoned directory is never named for a new replica.
        known &= per_broker(layout, layout.open, nb)[np.maximum(rep, 0)] > 0
    in_removed = (dirs >= 0) & layout.removed[np.maximum(dirs, 0)] & pl.free
    pending = (pl.arrived & known & (rep != NO_BROKER)) | in_removed
    dirs[pending] = -1
    if not pending.any():
        return
    p, k = np.nonzero(pending)
    b = rep[p, k].astype(np.int64)
    size = pl.size[p, k]
    unplaced: FloatArray = np.bincount(b, weights=size, minlength=nb).astype(np.float64)
    _refuse_without_open(pl, b)
    held = pl.held()
    bands = pl.bands(held, unplaced)
    aim = np.where(layout.open, np.minimum(bands.target, pl.limits), 0.0)
    need = np.maximum(aim - held, 0.0)
    share = _shares(layout, need, unplaced, bands.target)
    order = np.lexsort((-size, b))
    p, k, b, size = p[order], k[order], b[order], size[order]
    before = np.cumsum(size) - size
    start = np.r_[0.0, np.cumsum(unplaced)][b]
    total = unplaced[b]
    frac = np.divide(before - start + size / 2, total, out=np.zeros_like(size), where=total > 0)
    open_dirs = np.flatnonzero(layout.open)
    cum = np.cumsum(share[open_dirs]) - np.r_[0.0, np.cumsum(unplaced)][layout.broker[open_dirs]]
    arriving = unplaced[layout.broker[open_dirs]]
    bounds = layout.broker[open_dirs] + np.divide(cum, arriving, out=np.ones_like(cum), where=arriving > 0)
    pick = open_dirs[
        np.minimum(np.searchsorted(bounds, b + np.minimum(frac, 1 - 1e-12), side="right"), open_dirs.size - 1)
    ]
    # Float rounding at a broker's last boundary: its last open directory.
    last = np.full(nb, -1, dtype=np.int64)
    last[layout.broker[open_dirs]] = open_dirs
    dirs[p, k] = np.where(layout.broker[pick] == b, pick, last[b])


def _refuse_without_open(pl: _Placing, brokers: Ints) -> None:
    """A broker left without an open directory cannot take what must be placed on it."""
    open_count = per_broker(pl.layout, pl.layout.open, pl.st.model.num_brokers)
    stuck = np.unique(brokers[open_count[brokers] == 0])
    if stuck.size:
        broker_id = int(pl.st.model.broker_ids[stuck[0]])
        raise PlanningError(
            LOG_DIR_CAPACITY,
            f"broker {broker_id} has replicas to place but every log directory of it is cordoned or being removed; "
            "keep one of its directories, or move its replicas to other brokers first (remove-brokers)",
        )


def _shares(layout: DirLayout, need: FloatArray, unplaced: FloatArray, target: FloatArray) -> FloatArray:
    """(D,) the bytes each open directory receives: its need, scaled to what its broker receives; what
    exceeds the needs is spread in proportion to the directories' targets (their shares of the broker)."""
    opened = layout.open
    needs = per_broker(layout, need, unplaced.size)[layout.broker]
    arriving = unplaced[layout.broker]
    scaled = np.where(
        needs > arriving, need * np.divide(arriving, needs, out=np.zeros_like(need), where=needs > 0), need
    )
    extra = np.maximum(arriving - needs, 0.0)
    weight = np.where(opened, target, 0.0)
    weights = per_broker(layout, weight, unplaced.size)[layout.broker]
    out: FloatArray = scaled + extra * np.divide(weight, weights, out=np.zeros_like(weight), where=weights > 0)
    return np.where(opened, out, 0.0)


def _round(pl: _Placing) -> bool:
    """One move per broker that needs one, from its directory furthest above its aim to the open one
    furthest below; returns whether anything moved."""
    layout = pl.layout
    nb = pl.st.model.num_brokers
    held = pl.held()
    bands = pl.bands(held)
    capacity = pl.st.options.hard(LOG_DIR_CAPACITY)
    limits = pl.limits if capacity else np.full_like(pl.limits, np.inf)
    out_of_band = bands.outside(held)
    work = over_limit(held, limits) | (out_of_band if pl.balance else np.zeros_like(out_of_band))
    if not work.any():
        return False
    # Aim: the target where the distribution goal weighs the directory, else what it holds; within
    # its limit (a cordoned directory sheds only what is above its limit; a removed one all).
    balanced = pl.balance & bands.weighed
    aim = np.minimum(np.where(layout.removed, 0.0, np.where(balanced, bands.target, held)), limits)
    busy = (per_broker(layout, work.astype(np.float64), nb) > 0)[layout.broker]
    excess = np.where(busy, held - aim, -np.inf)
    # Room: up to the target where the directory is balanced, else up to its limit; up to the limit
    # also on a broker with a directory above its limit (the hard goal before the balance).
    over = (per_broker(layout, over_limit(held, limits), nb) > 0)[layout.broker]
    upto = np.where(balanced & ~over, np.minimum(bands.target, limits), limits)
    room = np.where(layout.open & busy, upto - held, -np.inf)
    dst = _ranked_per_broker(layout, room, nb, 0)
    upper = np.minimum(np.where(balanced, bands.upper, limits), limits)
    lower = np.where(balanced, bands.lower, -np.inf)
    done: BoolArray = np.zeros(nb, dtype=np.bool_)
    # The directory furthest above its aim first; where nothing of it fits the gap, the next one.
    for rank in range(int(np.diff(layout.first).max())):
        src = _ranked_per_broker(layout, excess, nb, rank)
        ok = (src >= 0) & (dst >= 0) & (src != dst) & ~done
        gap = np.zeros(nb)
        gap[ok] = np.minimum(excess[src[ok]], room[dst[ok]])
        ok &= gap > 0
        if not ok.any():
            break
        src = np.where(ok, src, -1)
        # The largest single replica that still helps: both directories end nearer their aims in sum,
        # the source not below its band, the destination not above its band or limit.
        most = np.full(nb, -np.inf)
        s, d = src[ok], dst[ok]
        most[ok] = np.minimum(np.minimum(excess[s] + room[d], upper[d] - held[d]), held[s] - lower[s])
        done |= _move(pl, src, dst, gap, most)
        # An exchange puts a replica into the source: only into an open one.
        stuck = ok & ~done & layout.open[np.maximum(src, 0)]
        if stuck.any():
            done |= _swap(pl, np.where(stuck, src, -1), dst, gap)
    return bool(done.any())


def _ranked_per_broker(layout: DirLayout, value: FloatArray, nb: int, rank: int) -> Ints:
    """Per broker its directory of the ``rank``-th largest ``value`` among the positive ones (-1 where
    it has fewer)."""
    order = np.lexsort((-value, layout.broker))
    owner = layout.broker[order]
    first = np.r_[True, owner[1:] != owner[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(order.size), 0))
    at = order[(np.arange(order.size) - start) == rank]
    out: Ints = np.full(nb, -1, dtype=np.int64)
    keep = value[at] > 0
    out[layout.broker[at[keep]]] = at[keep]
    return out


def _move(pl: _Placing, src: Ints, dst: Ints, gap: FloatArray, most: FloatArray) -> BoolArray:
    """Move replicas out of each broker's ``src`` into its ``dst``: arriving ones first, then the largest
    that fit the gap; where none fits, its smallest one when that is under ``most``."""
    rep, dirs = pl.st.rep, pl.dirs
    b = np.maximum(rep, 0)
    cand = pl.free & (dirs >= 0) & (src[b] >= 0) & (dirs == src[b])
    p, k = np.nonzero(cand)
    moved: BoolArray = np.zeros(gap.size, dtype=np.bool_)
    if p.size == 0:
        return moved
    owner = rep[p, k]
    size = pl.size[p, k]
    fits = size <= gap[owner] * (1 + 1e-9)
    order = np.lexsort((-size, ~pl.arrived[p, k], ~fits, owner))
    p, k, owner, size, fits = p[order], k[order], owner[order], size[order], fits[order]
    first = np.r_[True, owner[1:] != owner[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(p.size), 0))
    cum = np.cumsum(np.where(fits, size, 0.0))
    within = cum - np.r_[0.0, cum][start]
    take = fits & (within <= gap[owner] * (1 + 1e-9))
    none = ~np.bincount(owner, weights=take.astype(np.float64), minlength=gap.size).astype(bool)
    last = np.r_[owner[1:] != owner[:-1], True]
    smallest = last & none[owner] & ~fits & (size < most[owner])
    take |= smallest
    dirs[p[take], k[take]] = dst[owner[take]]
    moved[owner[take]] = True
    return moved


def _swap(pl: _Placing, src: Ints, dst: Ints, gap: FloatArray) -> BoolArray:
    """Where no replica fits a broker's gap: exchange one of its ``src`` directory for a smaller one of
    its ``dst`` directory, the pair whose difference is nearest the gap, where that difference is under
    twice the gap (both directories end nearer their aims)."""
    rep, dirs = pl.st.rep, pl.dirs
    b = np.maximum(rep, 0)
    live = pl.free & (dirs >= 0)
    xp, xk = np.nonzero(live & (src[b] >= 0) & (dirs == src[b]))
    yp, yk = np.nonzero(live & (src[b] >= 0) & (dirs == dst[b]))
    swapped: BoolArray = np.zeros(gap.size, dtype=np.bool_)
    if xp.size == 0 or yp.size == 0:
        return swapped
    x_owner, y_owner = rep[xp, xk].astype(np.int64), rep[yp, yk].astype(np.int64)
    x_size, y_size = pl.size[xp, xk], pl.size[yp, yk]
    # Sizes as keys within each broker's segment: broker + size / (2 * largest) orders by (broker, size).
    scale = 2.0 * max(float(x_size.max()), float(y_size.max()), 1.0)
    order = np.argsort(y_owner + y_size / scale, kind="stable")
    y_keys = (y_owner + y_size / scale)[order]
    wanted = x_owner + np.maximum(x_size - gap[x_owner], 0.0) / scale
    best_y = np.full(xp.size, -1, dtype=np.int64)
    best_err = np.full(xp.size, np.inf)
    at = np.searchsorted(y_keys, wanted)
    for near in (at - 1, at):
        inside = (near >= 0) & (near < order.size)
        j = order[np.clip(near, 0, order.size - 1)]
        diff = x_size - y_size[j]
        usable = inside & (y_owner[j] == x_owner) & (diff > 0) & (diff < 2 * gap[x_owner])
        err = np.where(usable, np.abs(diff - gap[x_owner]), np.inf)
        better = err < best_err
        best_y = np.where(better, j, best_y)
        best_err = np.where(better, err, best_err)
    found = np.isfinite(best_err)
    if not found.any():
        return swapped
    # One exchange per broker: its pair nearest the gap.
    pick = np.flatnonzero(found)[np.lexsort((best_err[found], x_owner[found]))]
    pick = pick[np.r_[True, x_owner[pick][1:] != x_owner[pick][:-1]]]
    j = best_y[pick]
    dirs[xp[pick], xk[pick]] = dst[x_owner[pick]]
    dirs[yp[j], yk[j]] = src[x_owner[pick]]
    swapped[x_owner[pick]] = True
    return swapped


def _check(pl: _Placing) -> None:
    """The removed directories are empty and no directory ends above its limit where the plan answers
    for it (``log_dir_over_limit``)."""
    st, layout = pl.st, pl.layout
    held = pl.held()
    left = layout.removed & (held > 0)
    if left.any():
        d = int(np.flatnonzero(left)[0])
        raise PlanningError(
            LOG_DIR_CAPACITY,
            f"{layout.name(d, st.model.broker_ids)} would still hold {held[d]:.4g} bytes: its partitions may not "
            "move (a rebalance limited to topics or groups) or its broker's other directories cannot take them",
        )
    if not st.options.hard(LOG_DIR_CAPACITY):
        return
    over = log_dir_over_limit(st, scoped=True)
    if over.any():
        d = int(np.flatnonzero(over)[0])
        raise PlanningError(
            LOG_DIR_CAPACITY,
            f"{layout.name(d, st.model.broker_ids)} would hold {held[d]:.4g} bytes of replicas, above its limit "
            f"{pl.limits[d]:.4g} (capacityThreshold of its volume's {layout.size[d]:.4g} bytes), and its broker's "
            "other open directories cannot take the excess; add a directory, or lower the broker's disk capacity "
            "so the broker-level goals send it less",
        )

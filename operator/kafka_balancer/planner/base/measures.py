"""Goal bands and statistics: when does a goal hold, and how far is each broker from it.

A distribution goal holds when every active broker of a group is within
``[avg × (2 − threshold), avg × threshold]`` of the group's own average (counts: the band is
rounded outwards to whole numbers). A broker's *violation* is its distance outside the band;
the planner never accepts a move that increases any goal's violation on the brokers it touches.
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.model.log_dirs import DirBands, dir_bands, dir_bytes, largest_replicas, snapshot_dirs
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.leader_racks import misled
from kafka_balancer.planner.base.log_dirs import carried_dirs, dir_limits, distribution_violation
from kafka_balancer.planner.base.log_dirs import over_limit as dir_over_limit
from kafka_balancer.planner.base.state import State, arrived_replicas
from kafka_balancer.planner.catalogue import (
    CORDONED_LOG_DIRS,
    EXCLUDED_BROKERS,
    GROUP_CONFINEMENT,
    LOG_DIR_CAPACITY,
    LOG_DIR_DISTRIBUTION,
    PREFERRED_LEADER_RACKS,
    RACK_AWARENESS,
    TOPIC_LEADER_GOAL,
    TOPIC_REPLICA_GOAL,
)

# Relative slack for float comparisons, so a broker exactly on the band edge counts as inside.
EPS: Final = 1e-9
# Topics whose partitions' bytes-in vary more than this (coefficient of variation) are skipped by
# the topic-leader goal: spreading the leaders of unequal partitions evenly is not balance.
TOPIC_LEADER_MAX_CV: Final = 0.5


def bands(st: State, q: int, threshold: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per-broker (lower, upper, group average) of quantity ``q``; inactive brokers get (-inf, inf).

    The average is over the broker's balance group (``State.balance_groups``: its resource group, or
    its leader tier of it)."""
    groups = st.groups
    key, ng = st.balance_groups(q)
    weights = np.where(st.active, st.load[:, q], 0.0)
    total = np.bincount(key, weights=weights, minlength=ng)
    count = np.bincount(key, weights=st.active.astype(np.float64), minlength=ng)
    avg_g = np.divide(total, count, out=np.zeros(ng), where=count > 0)
    avg = avg_g[key]
    lower = avg * (2.0 - threshold)
    upper = avg * threshold
    if st.catalogue.count(q):
        lower = np.floor(lower + 1e-9)
        upper = np.ceil(upper - 1e-9)
    off = ~st.active | ~st.scope.groups[groups.broker]
    lower = np.where(off, -math.inf, lower)
    upper = np.where(off, math.inf, upper)
    return lower, upper, avg


def topic_bands(st: State, threshold: float, *, leaders: bool) -> tuple[FloatArray, FloatArray]:
    """Per-topic (lower, upper) band of its replica (or, with ``leaders``, leader) count over the
    active brokers of the topic's group."""
    groups = st.groups
    active_per_group = np.bincount(groups.broker[st.active], minlength=len(groups.names)).astype(np.float64)
    n = active_per_group[groups.topic]
    total = st.tactive[:, 1 if leaders else 0].astype(np.float64)
    avg = np.divide(total, n, out=np.zeros_like(total), where=n > 0)
    return np.floor(avg * (2.0 - threshold) + 1e-9), np.ceil(avg * threshold - 1e-9)


def violation(load: FloatArray, lower: FloatArray, upper: FloatArray) -> FloatArray:
    out: FloatArray = np.maximum(load - upper, 0.0) + np.maximum(lower - load, 0.0)
    return out


def tolerance(avg: FloatArray) -> FloatArray:
    out: FloatArray = np.abs(avg) * EPS + 1e-9
    return out


def topic_brokers(st: State) -> BoolArray:
    """(T, B): the active brokers of each topic's group, for topics whose group is being balanced."""
    groups = st.groups
    index = np.arange(len(groups.names))
    # Per group first (G x B), then one row per topic: a gather instead of three T x B operations.
    member = (groups.broker[None, :] == index[:, None]) & st.active[None, :] & st.scope.groups[:, None]
    out: BoolArray = member[groups.topic]
    return out


def topic_leader_applies(st: State) -> BoolArray:
    """Topics whose partitions carry similar load (bytes-in CV under TOPIC_LEADER_MAX_CV); none of a
    group with preferred leader racks (the racks decide where a topic's partitions are led).
    Computed once per State (read-only)."""
    if st.topic_leader_spread is None:
        st.topic_leader_spread = _similar_load_topics(st)
        st.topic_leader_spread.flags.writeable = False
    return st.topic_leader_spread


def _similar_load_topics(st: State) -> BoolArray:
    nt = len(st.model.topics)
    if st.model.num_partitions == 0:
        return np.zeros(nt, dtype=np.bool_)
    n = np.bincount(st.ptopic, minlength=nt).astype(np.float64)
    s1 = np.bincount(st.ptopic, weights=st.model.bytes_in, minlength=nt)
    s2 = np.bincount(st.ptopic, weights=st.model.bytes_in**2, minlength=nt)
    mean = np.divide(s1, n, out=np.zeros(nt), where=n > 0)
    var = np.maximum(np.divide(s2, n, out=np.zeros(nt), where=n > 0) - mean**2, 0.0)
    cv = np.divide(np.sqrt(var), mean, out=np.zeros(nt), where=mean > 0)
    out: BoolArray = cv <= TOPIC_LEADER_MAX_CV
    if st.tiers is not None:
        out &= ~st.tiers.prefers[st.groups.topic]
    return out


def goal_violation(st: State, goal: str) -> float:
    """Total out-of-band distance of one distribution goal, relative to its group averages."""
    threshold = st.options.balance_threshold
    if goal == LOG_DIR_DISTRIBUTION:
        held = log_dir_bytes(st)
        if held is None:
            return 0.0
        return distribution_violation(log_dir_bands(st, held), held)
    q = st.catalogue.balances(goal)
    if q is not None:
        lower, upper, avg = bands(st, q, threshold)
        v = violation(st.load[:, q], lower, upper)
        v = np.where(v > tolerance(avg), v, 0.0)
        return float(np.sum(np.divide(v, avg, out=np.zeros_like(v), where=avg > 0)))
    counts = st.tcount if goal == TOPIC_REPLICA_GOAL else st.tlead
    lo, hi = topic_bands(st, threshold, leaders=goal != TOPIC_REPLICA_GOAL)
    in_group = topic_brokers(st)
    if goal == TOPIC_LEADER_GOAL:
        in_group &= topic_leader_applies(st)[:, None]
    return float(np.sum(np.where(in_group, count_distance(counts, lo, hi), 0)))


def ended_worse(before: float, after: float) -> bool:
    """Whether a goal's violation grew from ``before`` to ``after`` (beyond float noise)."""
    return after > before + 1e-9 * max(1.0, before)


def count_distance(counts: Ints, lo: FloatArray, hi: FloatArray) -> Ints:
    """(T, B): how far each per-topic count is outside its topic's band (lo, hi per topic)."""
    out: Ints = (np.maximum(counts - hi[:, None], 0) + np.maximum(lo[:, None] - counts, 0)).astype(np.int64)
    return out


def rack_allowance(rf: Ints, racks: Ints) -> Ints:
    """How many replicas of a partition (of ``rf``) one rack may hold, with ``racks`` racks to
    spread over (at least one counted): the rack-awareness goal's ``ceil(rf / racks)``."""
    out: Ints = np.ceil(rf / np.maximum(racks, 1)).astype(np.int32)
    return out


def rack_violations(st: State, rep: Ints | None = None) -> Ints:
    """Partitions whose replicas crowd a rack beyond ``ceil(rf / racks in the group)`` (in ``rep``,
    by default the working placement)."""
    rep = st.rep if rep is None else rep
    valid = rep != NO_BROKER
    racks = np.where(valid, st.rack[np.maximum(rep, 0)], -1)
    rf = valid.sum(axis=1)
    nracks = st.group_racks()[st.groups.partition]
    allowed = rack_allowance(rf, nracks)
    worst = np.zeros(rep.shape[0], dtype=np.int32)
    for k in range(rep.shape[1]):
        same = ((racks == racks[:, k : k + 1]) & valid).sum(axis=1)
        worst = np.maximum(worst, np.where(valid[:, k], same, 0))
    bad: Ints = np.flatnonzero(worst > allowed).astype(np.int32)
    return bad


def hard_goal_status(st: State, original: Ints, scope: BoolArray | None = None) -> dict[str, bool]:
    """Which hard goals hold for the current placement (``original`` = placement before planning).

    With ``scope`` (the partitions the plan may move), a partition outside it counts only where the
    plan broke a goal it kept before, and a broker of a group the plan does not balance only where
    the plan gave it load: a rebalance limited to some topics or groups cannot mend the rest.
    """
    status: dict[str, bool] = {}
    opts = st.options
    capacity = dict(st.catalogue.capacity_goals)
    for goal in opts.hard_goals:
        if goal == RACK_AWARENESS:
            status[goal] = _racks_hold(st, original, scope)
        elif goal in capacity:
            status[goal] = not bool(over_limit(st, capacity[goal], scoped=scope is not None).any())
        elif goal == GROUP_CONFINEMENT:
            outside = _outside_group(st, st.rep)
            if scope is not None:
                outside &= scope | ~_outside_group(st, original)
            status[goal] = not outside.any()
        elif goal == EXCLUDED_BROKERS:
            status[goal] = _excluded_hold(st, original)
        elif goal == PREFERRED_LEADER_RACKS:
            status[goal] = not bool(misled_partitions(st, original, scope).any())
        elif goal in {CORDONED_LOG_DIRS, LOG_DIR_CAPACITY}:
            status[goal] = _log_dir_goal_holds(st, goal, original, scoped=scope is not None)
    return status


def _racks_hold(st: State, original: Ints, scope: BoolArray | None) -> bool:
    now = _mask(rack_violations(st), st.rep.shape[0])
    if scope is not None:
        now &= scope | ~_mask(rack_violations(st, original), st.rep.shape[0])
    return not now.any()


def _log_dir_goal_holds(st: State, goal: str, original: Ints, *, scoped: bool) -> bool:
    """cordoned-log-dirs: no replica arrives on a cordoned broker or in a cordoned directory;
    log-dir-capacity: no directory above its limit."""
    if goal == LOG_DIR_CAPACITY:
        return not bool(log_dir_over_limit(st, scoped=scoped).any())
    onto_cordoned = arrived_replicas(st.rep, original) & st.model.broker_cordoned[np.maximum(st.rep, 0)]
    return not bool(onto_cordoned.any() or into_cordoned_dirs(st).any())


def log_dir_bytes(st: State) -> FloatArray | None:
    """(D,) bytes of the replicas in each log directory, once placed (``State.dirs``); None before."""
    if st.dir_layout is None or st.dirs is None:
        return None
    return dir_bytes(st.dir_layout, st.rep, st.dirs, st.model.size_bytes)


def log_dir_bands(st: State, held: FloatArray) -> DirBands:
    """log-dir-distribution's targets and bands for ``held`` bytes per directory under ``st.rep``."""
    layout = st.dir_layout
    assert layout is not None
    grain = largest_replicas(layout, st.rep, st.model.size_bytes)
    return dir_bands(layout, held, st.options.balance_threshold, grain)


def named_dirs(st: State) -> BoolArray:
    """(P, width of ``st.rep``) replicas the plan puts in a directory it names: those a broker receives,
    and those moving between their broker's directories (none before directories are placed)."""
    layout = st.dir_layout
    if layout is None or st.dirs is None:
        return np.zeros(st.rep.shape, dtype=np.bool_)
    out: BoolArray = (st.dirs >= 0) & (st.dirs != carried_dirs(layout, st.model, st.rep))
    return out


def snapshot_log_dir_bytes(st: State) -> FloatArray | None:
    """(D,) bytes of the replicas in each log directory as the snapshot places them."""
    if st.dir_layout is None:
        return None
    model = st.model
    return dir_bytes(st.dir_layout, model.replicas, snapshot_dirs(st.dir_layout, model), model.size_bytes)


def log_dir_over_limit(st: State, *, scoped: bool) -> BoolArray:
    """(D,) directories above their limit (log-dir-capacity); ``scoped``: only those of brokers in the
    groups being balanced, or elsewhere where the plan added bytes (as for the broker limits)."""
    held = log_dir_bytes(st)
    start = snapshot_log_dir_bytes(st)
    layout = st.dir_layout
    if held is None or start is None or layout is None:
        return np.zeros(0, dtype=np.bool_)
    over = dir_over_limit(held, dir_limits(layout, st.options.capacity_threshold))
    if scoped:
        over &= st.scope.groups[st.groups.broker][layout.broker] | (held > start * (1 + EPS) + 1e-9)
    return over


def into_cordoned_dirs(st: State) -> BoolArray:
    """(P, width) replicas the plan puts in a cordoned log directory (none before directories are placed)."""
    layout = st.dir_layout
    if layout is None or st.dirs is None:
        return np.zeros(st.rep.shape, dtype=np.bool_)
    out: BoolArray = named_dirs(st) & layout.cordoned[np.maximum(st.dirs, 0)]
    return out


def misled_partitions(st: State, original: Ints | None = None, scope: BoolArray | None = None) -> BoolArray:
    """(P,) partitions not led from their preferred leader rack (none without preferred racks); with
    ``scope``, one outside it counts only where it was led from its preferred rack in ``original``."""
    if st.tiers is None:
        return np.zeros(st.rep.shape[0], dtype=np.bool_)
    may_lead = st.active & st.can_lead
    now = misled(st.tiers, st.rep, st.groups.partition, may_lead)
    if scope is not None and original is not None:
        now &= scope | ~misled(st.tiers, original, st.groups.partition, may_lead)
    return now


def over_limit(st: State, q: int, *, scoped: bool) -> BoolArray:
    """Brokers above their limit of ``q``; ``scoped``: only those in the groups being balanced, or
    elsewhere where the plan gave them load (a group left out of groupsToBalance is not its to repair)."""
    over: BoolArray = st.load[:, q] > st.limit[:, q] * (1 + EPS) + 1e-9
    if scoped:
        over &= st.scope.groups[st.groups.broker] | st.gained(q)
    return over


def _mask(indices: Ints, size: int) -> BoolArray:
    out: BoolArray = np.zeros(size, dtype=np.bool_)
    out[indices] = True
    return out


def _outside_group(st: State, rep: Ints) -> BoolArray:
    """Partitions with a replica outside their resource group (groups without brokers confine nothing)."""
    valid = rep != NO_BROKER
    home = st.groups.partition[:, None]
    ok = ~valid | (st.groups.broker[np.maximum(rep, 0)] == home) | ~st.groups.has_brokers[home]
    out: BoolArray = ~ok.all(axis=1)
    return out


def _excluded_hold(st: State, original: Ints) -> bool:
    rep = st.rep
    valid = rep != NO_BROKER
    safe = np.maximum(rep, 0)
    new_here = arrived_replicas(rep, original)
    if np.any(new_here & ~st.can_host[safe]):
        return False
    leader = rep[:, 0]
    could_lead = (valid & st.can_lead[safe]).any(axis=1)
    return not bool(np.any(~st.can_lead[leader] & could_lead & (leader != NO_BROKER)))


def spread_stats(values: FloatArray) -> dict[str, float]:
    """avg, max/avg, min/avg and stddev/avg of one quantity over some brokers (1.0 when all are zero)."""
    avg = float(values.mean())
    if avg <= 0:
        return {"avg": 0.0, "maxOverAvg": 1.0, "minOverAvg": 1.0, "stddevOverAvg": 0.0}
    return {
        "avg": avg,
        "maxOverAvg": float(values.max() / avg),
        "minOverAvg": float(values.min() / avg),
        "stddevOverAvg": float(values.std() / avg),
    }


def quantity_stats(st: State) -> dict[str, dict[str, Any]]:
    """Per group, per quantity: avg, max/avg, min/avg, stddev/avg over the group's active brokers."""
    out: dict[str, dict[str, Any]] = {}
    for g, name in enumerate(st.groups.names):
        members = st.active & (st.groups.broker == g)
        if not members.any():
            continue
        group: dict[str, Any] = {"brokers": [int(b) for b in st.model.broker_ids[members]]}
        for q, quantity in enumerate(st.catalogue.quantity_names):
            group[quantity] = spread_stats(st.load[members, q])
        out[name] = group
    return out


def balance_group_names(st: State, q: int) -> list[str]:
    """Names of the balance groups of ``q`` (``State.balance_groups``): a group, or ``group/tier`` (a
    group without a list in force: its name alone, for its one tier, the unlisted)."""
    tiers = st.tiers
    if tiers is None or not st.catalogue.leadership_carries(q):
        return list(st.groups.names)
    return [f"{g}/{t}" if tiers.racks[i] else g for i, g in enumerate(st.groups.names) for t in tiers.names(i)]


def balance_group_stats(st: State, q: int) -> dict[str, dict[str, Any]]:
    """Per balance group of ``q`` with active brokers: its brokers and the spread of ``q`` over them."""
    key, _ = st.balance_groups(q)
    out: dict[str, dict[str, Any]] = {}
    for i, name in enumerate(balance_group_names(st, q)):
        members = st.active & (key == i)
        if members.any():
            out[name] = {"brokers": [int(b) for b in st.model.broker_ids[members]], **spread_stats(st.load[members, q])}
    return out


def balancedness(st: State, violations: dict[str, float]) -> float:
    """0..100: 100 when every distribution goal holds; each goal weighs more than the next.

    A goal's share is lost in proportion to its out-of-band distance (summed over brokers,
    relative to the group average), fully lost at a distance of one average.
    """
    goals = [g for g in st.options.distribution_goals if g in violations]  # those that weigh this placement
    if not goals:
        return 100.0
    weights = np.array([1.5 ** (len(goals) - i) for i in range(len(goals))])
    scores = np.array([max(0.0, 1.0 - violations[g]) for g in goals])
    return round(float(100.0 * (weights * scores).sum() / weights.sum()), 2)

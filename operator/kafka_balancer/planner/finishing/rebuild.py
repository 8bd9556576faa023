"""Rebuilding rounds: undo a share of the plan's moves, plan them again, keep whichever moves less.

The goals are optimized one after another by greedy passes, and the finishing passes (moves back
home, stand-ins, shortcuts) only reach what one or two moves can mend, so a finished plan sits at a
local optimum. A round sends a random tenth of the moved partitions back to their original
replicas, runs every goal and finishing pass again (they now start from a nearly balanced
placement and re-place those replicas around what the rest of the plan already did) and keeps the
result only when it moves fewer bytes, no distribution goal ends further from its band, every hard
goal that held still holds and the leader counts stay at the rounded average. Otherwise the
placement goes back to what it was. The random choice is seeded: the same input gives the same
plan. One resource group at a time, the others held still, as when a group is planned alone.

A round costs about one pass of every goal, so a group's rounds shrink as it grows and stop at
``TUNING.rebuild_large`` replicas, where the plan itself must stay within its time targets (docs/performance.md).

The same keep-or-go-back test serves :func:`exchange_pass`, the second pass with replica-count
exchanges for a plan that left that goal out of band.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.measures import ended_worse, goal_violation, hard_goal_status, rack_violations
from kafka_balancer.planner.base.state import State, arrived_replicas, only_group
from kafka_balancer.planner.catalogue import Exchange
from kafka_balancer.planner.distribution.balance import balance_goal
from kafka_balancer.planner.finishing.tighten import leaders_off_average
from kafka_balancer.planner.tuning import TUNING

# Seed of the share each round undoes: the same input gives the same plan.
SEED: Final = 20261122


@dataclass(frozen=True)
class _Standing:
    """What a round must not make worse."""

    violation: dict[str, float]
    hard: dict[str, bool]
    leaders_off: bool

    @staticmethod
    def of(st: State) -> _Standing:
        return _Standing(
            {g: goal_violation(st, g) for g in st.options.distribution_goals},
            hard_goal_status(st, st.model.replicas),
            leaders_off_average(st),
        )

    def allows(self, after: _Standing) -> bool:
        if any(ended_worse(self.violation[g], v) for g, v in after.violation.items()):
            return False
        if any(held and not after.hard[g] for g, held in self.hard.items()):
            return False
        return self.leaders_off or not after.leaders_off


def rounds_for(st: State) -> int:
    """How many rounds a group gets: fewer as it grows, none from ``TUNING.rebuild_large`` replicas on."""
    replicas = int((st.rep[st.scope.movable] != NO_BROKER).sum())
    return (
        0
        if replicas >= TUNING.rebuild_large
        else min(TUNING.rebuild_max_rounds, TUNING.rebuild_work // max(replicas, 1))
    )


def rebuild_rounds(st: State, replan: Callable[[State], None], rounds: int | None = None) -> int:
    """Rounds of undoing a share of the moves and planning again (``replan``: every goal and
    finishing pass), one resource group at a time as when it is planned alone. Returns the rounds
    kept."""
    if st.model.replicas.shape != st.rep.shape:
        return 0  # the replication factor changed: the original rows do not line up
    kept = 0
    for group in np.flatnonzero(st.scope.groups).tolist():
        with only_group(st, group):
            kept += _rebuild_group(st, replan, rounds_for(st) if rounds is None else rounds)
    return kept


def _rebuild_group(st: State, replan: Callable[[State], None], rounds: int) -> int:
    if rounds <= 0:
        return 0  # before the set-up below, which costs seconds at millions of replicas
    orig = st.model.replicas
    size = st.model.copy_bytes
    revertible = _revertible(st, orig)
    rng = np.random.default_rng(SEED)
    cost = _moved_bytes(st, orig, size)
    standing = _Standing.of(st)
    kept = 0
    for _ in range(rounds):
        moved = np.flatnonzero(arrived_replicas(st.rep, orig).any(axis=1) & revertible)
        if moved.size < TUNING.rebuild_min_moved or st.budget.spent():
            break
        undo = np.sort(rng.choice(moved, size=max(1, round(TUNING.rebuild_ruin_share * moved.size)), replace=False))
        saved = st.checkpoint()
        st.rep[undo] = orig[undo]
        st.refresh_loads()
        after = _replan(st, replan, standing)
        new_cost = _moved_bytes(st, orig, size)
        if new_cost < cost and standing.allows(after):
            cost, standing = new_cost, after
            kept += 1
        else:
            st.restore(saved)
    return kept


def _replan(st: State, replan: Callable[[State], None], standing: _Standing) -> _Standing:
    """``replan``, then one more turn of each broker-level goal it left further from its band than
    ``standing``, with every goal guarded; returns where the goals then stand.

    A goal's turn comes before the later goals' turns and the finishing passes, whose moves may open
    a way it lacked: the count exchanges' pass of a 1.08M-replica plan brought the replica and
    leader counts into their bands but left network-in 0.01 of a broker's average outside its own
    (so the pass was thrown away), and one more network-in turn mended that in 0.1 s."""
    replan(st)
    after = _Standing.of(st)
    worse = [
        g
        for g, v in after.violation.items()
        if ended_worse(standing.violation[g], v) and st.catalogue.balances(g) is not None
    ]
    if not worse:
        return after
    with st.scoped(guarded=frozenset(st.options.distribution_goals) | st.scope.guarded):
        for goal in worse:
            balance_goal(st, goal)
    return _Standing.of(st)


def _moved_bytes(st: State, orig: Ints, size: FloatArray) -> float:
    """Bytes the group's moves copy (summed over its own partitions only, as when planned alone)."""
    return float((size * arrived_replicas(st.rep, orig).sum(axis=1))[st.scope.movable].sum())


def _revertible(st: State, orig: Ints) -> BoolArray:
    """Partitions whose original replicas may come back: every one on a live broker that is not
    being removed and inside the partition's group, the leader where it may lead, racks kept."""
    valid = orig != NO_BROKER
    safe = np.maximum(orig, 0)
    home = st.groups.partition[:, None]
    placed = st.active[safe] & (st.groups.broker[safe] == home)
    ok: BoolArray = st.scope.movable & (~valid | placed).all(axis=1) & (~valid[:, 0] | st.can_lead[safe[:, 0]])
    ok[rack_violations(st, orig)] = False
    return ok


def exchange_pass(st: State, replan: Callable[[State], None]) -> bool:
    """A plan that left the replica-count goal (the goal whose catalogue record allows count
    exchanges) out of band gets one more pass of every goal
    (``replan``), in which that goal may also exchange several light replicas for one heavy one
    (distribution.count_exchange). Kept when that goal gets closer to its band, no goal ends further
    from its band and no hard goal that held breaks. Returns whether it was kept.

    Only then: the exchanges move bytes both ways, so a plan that holds the goal without them
    keeps its bytes (docs/goals.md, "Count exchanges").

    Whenever the goal is still out of band after that pass (refused, kept short of the band, or
    stopped by the time budget, or the budget ran out before it), the goal gets one turn with the
    exchanges, every other goal guarded, in the budget's reserve (base.budget). A refused pass: at
    96 brokers of bench.strong_skew with ``maxReplicasPerBroker`` 8000 it evened the counts but left
    7 more leaderships out of their topic's band, and the counts stayed 0.022 of an average out of
    band. A budget spent: a plan cut short without it kept the brokers' replica counts from 0.34x to
    1.39x of their average (the 270-broker strongly skewed cluster at the default 60 s; the turn
    takes 0.8 s). Returns whether the pass or the turn was kept."""
    using = st.catalogue.using(Exchange.COUNT_EXCHANGES, st.options.distribution_goals)
    goal = using[0] if using else None
    if goal is None or goal_violation(st, goal) <= 0:
        return False
    standing = _Standing.of(st)
    kept = False
    if not st.budget.spent():
        saved = st.checkpoint()
        with st.scoped(exchanges=st.scope.exchanges | {Exchange.COUNT_EXCHANGES}):
            after = _replan(st, replan, standing)
        kept = _count_closer(goal, standing, after)
        if kept:
            standing = after
        else:
            st.restore(saved)
        if standing.violation[goal] <= 0:
            return kept
    with st.budget.reserve():
        return _count_turn(st, goal, standing) or kept


def _count_turn(st: State, goal: str, standing: _Standing) -> bool:
    """The replica-count goal's turn with the count exchanges, every goal guarded; kept as the pass is."""
    saved = st.checkpoint()
    guarded = frozenset(st.options.distribution_goals) | st.scope.guarded
    with st.scoped(exchanges=st.scope.exchanges | {Exchange.COUNT_EXCHANGES}, guarded=guarded):
        balance_goal(st, goal)
    if _count_closer(goal, standing, _Standing.of(st)):
        return True
    st.restore(saved)
    return False


def _count_closer(goal: str, standing: _Standing, after: _Standing) -> bool:
    """``goal`` ends closer to its band and ``standing`` allows the rest."""
    before, now = standing.violation[goal], after.violation[goal]
    return standing.allows(after) and now < before - 1e-9 * max(1.0, before)

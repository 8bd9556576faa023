"""The distribution stage: each distribution goal's turn, guarded by those before it, then the
finishing passes (:data:`FINISHING`) with every goal guarded (docs/goals.md, "Distribution goals"
and "Finishing passes"); :func:`again` runs it once more for the passes that revisit a finished plan."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Final

from kafka_balancer.planner.base.measures import goal_violation
from kafka_balancer.planner.base.round_bands import compute_bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.distribution.balance import balance_goal
from kafka_balancer.planner.distribution.topic_chains import leader_chains
from kafka_balancer.planner.distribution.topics import balance_topic_goal
from kafka_balancer.planner.finishing.detours import repair_topic_slots
from kafka_balancer.planner.finishing.revert import revert_moves
from kafka_balancer.planner.finishing.substitute import substitute_moves
from kafka_balancer.planner.finishing.tighten import leaders_off_average, tighten_leaders
from kafka_balancer.planner.options import PlannerOptions
from kafka_balancer.planner.pipeline.plan_run import (
    FixedPoint,
    PlanRun,
    Stage,
    always,
    counts_leaders,
    lead_from_preferred_racks,
    prefers_racks,
    spreads_topic_leaders,
)
from kafka_balancer.planner.tuning import TUNING


def again(run: PlanRun, *, detours: bool) -> Callable[[State], None]:
    """The distribution stage once more, untraced (the passes that revisit a finished plan),
    between the leaderships onto the preferred racks where they apply (a rebuilding round sends
    partitions back to their original leaders, which may lead from another rack)."""
    quiet = dataclasses.replace(run, trace=None, detours=detours, revisits=True)

    def replan(_st: State) -> None:
        racks = prefers_racks(quiet)
        if racks:
            lead_from_preferred_racks(quiet)
        distribute(quiet)
        if racks:
            lead_from_preferred_racks(quiet)

    return replan


def goal_order(options: PlannerOptions) -> list[str]:
    """The order distribution goals are optimized in: broker-level goals by priority, then per-topic goals."""
    goals, catalogue = options.distribution_goals, options.catalogue
    return [g for g in goals if catalogue.balances(g) is not None] + [g for g in catalogue.topic_goals if g in goals]


def distribute(run: PlanRun) -> None:
    """Every distribution goal's turn, each guarded by those before it, then the finishing passes
    with every goal guarded (docs/goals.md, "Distribution goals" and "Finishing passes")."""
    st, options = run.st, run.st.options
    done: list[str] = []
    racks = prefers_racks(run)
    for goal in goal_order(options):
        done.append(goal)
        if run.out_of_time(f"distribution goals ({goal})"):
            break
        with st.scoped(guarded=frozenset(done) | run.strict), run.step(goal):
            q = st.catalogue.balances(goal)
            if racks and q is not None and st.catalogue.leadership_carries(q):
                # The replica moves of the goals before may have changed partitions' preferred racks.
                lead_from_preferred_racks(run)
            _turn(st, goal)
    with st.scoped(guarded=frozenset(options.distribution_goals) | run.strict):
        for stage in FINISHING:
            if run.runs(stage):
                with run.step(stage.name):
                    stage.run(run)


def _turn(st: State, goal: str) -> None:
    """One goal's turn."""
    if st.catalogue.balances(goal) is None:
        # Per-topic goals come last: exchanges may now use partitions of any size.
        balance_topic_goal(st, goal, size_cap=1.0)
        return
    balance_goal(st, goal)
    for early in st.catalogue.early_turns(goal):
        if early in st.options.distribution_goals:
            # While the brokers still have slack in the later goals' bands, one-way moves can even out
            # the topics; at the end only exchanges (twice the bytes) could.
            balance_topic_goal(st, early, rounds=TUNING.topic_spread_early_rounds)


def _topic_goals_again(run: PlanRun) -> None:
    """Leadership moves of the last goal free some replica moves of the one before: once more,
    briefly (it finishes a few slots; at millions of replicas more rounds would not pay)."""
    st = run.st
    for goal in st.catalogue.topic_goals:
        if goal in st.options.distribution_goals:
            balance_topic_goal(
                st, goal, size_cap=1.0, rounds=TUNING.topic_spread_early_rounds, chains_share=TUNING.repeat_chains_share
            )


def _final_chains(run: PlanRun) -> None:
    """The traffic and leader counts changed since the topic-leader goal's turn: its chains (no data
    moves) may now find a way for what it left out of band. Briefly: at millions of replicas a full
    call would take a minute."""
    leader_chains(run.st, compute_bands(run.st), share=TUNING.final_chains_share)


def _finish_by_leadership(run: PlanRun) -> None:
    """Leadership moves and trades (no data moves) for the leader-borne goals still out of band.

    Such a goal can end its own turn short (its brokers' other loads at their edges then) and the
    passes after it only keep it from getting worse; the moves they made since may have opened a
    way. Every goal is guarded, so nothing that holds breaks.
    """
    st = run.st
    catalogue = st.catalogue
    balanced = [(g, catalogue.balances(g)) for g in goal_order(st.options)]
    short = [
        g for g, q in balanced if q is not None and catalogue.leadership_carries(q) and goal_violation(st, g) > 1e-9
    ]
    for goal in short:
        balance_goal(st, goal, leadership_only=True)
    if leaders_off_average(st):
        # The passes since the leader counts were finished (topic-leader chains, detours) and the
        # moves above may have moved some off the rounded average.
        tighten_leaders(st)


def _far_turns(run: PlanRun) -> int:
    """TUNING.far_turns, one in a pass that revisits a finished plan."""
    return 1 if run.revisits else TUNING.far_turns


FINISHING: Final = (
    Stage("per-topic goals again", always, _topic_goals_again, bounded=True),
    Stage("moves back home", always, lambda run: revert_moves(run.st), bounded=True),
    Stage("stand-ins", always, lambda run: substitute_moves(run.st), bounded=True),
    # The leader counts are evened out inside the leader tiers, so the leaderships first go where the
    # hard goal puts them: the replica moves since the first leadership stage took some off their
    # preferred racks, and moving those back after the counts were finished moved the counts with
    # them (bench.planner scale --preferred-leader-racks 1 at 320k replicas: 0.001 of an average over
    # their band at the end). A hard goal's stage.
    Stage("leadership to preferred racks before the counts", prefers_racks, lead_from_preferred_racks),
    Stage("leader counts to the average", counts_leaders, lambda run: tighten_leaders(run.st), bounded=True),
    Stage("topic leader chains", spreads_topic_leaders, _final_chains, bounded=True),
    Stage("detours", lambda run: run.detours, lambda run: repair_topic_slots(run.st), bounded=True),
    # After the detours: run before them, it left them fewer ways out (a mixed-rf seed kept a
    # topic slot out of band); so did the stand-ins from afar.
    Stage("shortcuts", always, lambda run: substitute_moves(run.st, arrived=True), bounded=True),
    # Each pass changes which replicas left which brokers, and so opens up some of the others' exchanges
    # again; the chains find paths for a topic's leadership among the replicas the other two moved
    # (bench.strong_skew, 270 brokers, --max-replicas 5000: the last topic-leader slot).
    FixedPoint(
        "stand-ins from afar, shortcuts and topic leader chains",
        (
            Stage("stand-ins from afar", always, lambda run: substitute_moves(run.st, far=True)),
            Stage("shortcuts", always, lambda run: substitute_moves(run.st, arrived=True)),
            Stage("topic leader chains", spreads_topic_leaders, _final_chains, bounded=True),
        ),
        _far_turns,
    ),
    # Replica moves since the first leadership stage may have taken a leader's rack away or brought a
    # more preferred one in (where a partition has fewer replicas than there are racks); the leader-borne
    # goals then finish inside the tiers, by leadership moves that keep each partition in its rack.
    # A hard goal's stage: never cut by the time budget.
    Stage("leadership to preferred racks again", prefers_racks, lead_from_preferred_racks),
    Stage("leader-borne goals by leadership", always, _finish_by_leadership, bounded=True),
)

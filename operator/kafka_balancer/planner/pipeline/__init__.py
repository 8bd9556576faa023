"""``plan``: the stages of a plan, in order, each with when it applies and what it does.

:data:`~kafka_balancer.planner.pipeline.stages.STAGES` is the whole plan: the operation's shape
change, the hard goals (precheck, evacuation, leadership, capacity), the distribution goals with
their finishing passes, and the passes that revisit a finished plan (rebuilding rounds, count
exchanges). The distribution stage runs each goal's turn
(:func:`~kafka_balancer.planner.pipeline.distribution.goal_order`) and then
:data:`~kafka_balancer.planner.pipeline.distribution.FINISHING`. docs/goals.md describes each stage;
``plan(..., trace=Trace())`` (``kafka-balancer plan --trace``) records what each one did.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, ClusterModel
from kafka_balancer.model.proposal import Proposal
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.budget import Budget
from kafka_balancer.planner.base.measures import ended_worse, goal_violation, hard_goal_status
from kafka_balancer.planner.base.resource_groups import resolve_groups
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.options import PlannerOptions, PlanningError
from kafka_balancer.planner.pipeline.plan_run import PlanRun
from kafka_balancer.planner.pipeline.stages import STAGES
from kafka_balancer.planner.proposal import build_proposal
from kafka_balancer.planner.trace import Trace


def plan(model: ClusterModel, options: PlannerOptions | None = None, *, trace: Trace | None = None) -> Proposal:
    """Compute the proposal for ``model`` under ``options``; raises PlanningError on an unmet hard goal.

    Each distribution goal is optimized under the guard of the goals before it (a later goal never
    undoes an earlier one) and may temporarily worsen the goals after it, which then repair
    themselves in their turn. When a goal still ends worse than it started, the plan is recomputed
    with that goal guarded from the start, so applying a plan never makes a statistic worse, except
    where the hard goals' stages (replicas leaving a dead broker, say) left it worse: the summary's
    ``goalsWorsenedByHardGoals`` names those. ``trace`` records what each stage of the last run did.
    """
    options = options or PlannerOptions()
    budget = Budget(options.max_planning_seconds)
    before = State(model, options, resolve_groups(model, options))
    # Also while replicas sit on dead or removed brokers: the bands before are around the averages of
    # the brokers that stay (a plan that skipped the recomputation then left the per-topic spread
    # worse than it found it, where guarding the goal kept it: issue 56).
    comparable = options.operation.kind.balances_from_start
    # The broker-level goals (the directory goal is the last stage's, on the placement it is given).
    broker_goals = [g for g in options.distribution_goals if options.catalogue.goal(g).kind != "directory"]
    start = {g: goal_violation(before, g) for g in broker_goals} if comparable else {}
    strict: frozenset[str] = frozenset()
    while True:
        if trace is not None:
            trace.clear()
        st = _run(model, options, strict, trace, budget)
        worse = {g for g, v in start.items() if ended_worse(v, goal_violation(st, g))}
        if not worse - strict or budget.spent():
            break
        strict |= worse
    _final_checks(st, model.replicas, before.scope.movable)
    # Guarded from the start, no distribution move made these worse: the hard goals' stages did.
    forced = tuple(g for g in broker_goals if g in worse & strict)
    return build_proposal(model, options, before, st, budget.cut_short, worsened_by_hard_goals=forced)


def _run(
    model: ClusterModel,
    options: PlannerOptions,
    strict: frozenset[str],
    trace: Trace | None,
    budget: Budget | None = None,
) -> State:
    """Every stage that applies, in order; each after the operation within what it left movable."""
    st = State(model, options, resolve_groups(model, options))
    if budget is not None:
        st.budget = budget
    free = st.scope.movable
    run = PlanRun(st, strict, free=free, movable=free, evacuated=np.zeros(0, dtype=np.int64), trace=trace)
    for stage in STAGES:
        if run.runs(stage):
            with st.scoped(movable=run.movable), run.step(stage.name):
                stage.run(run)
    return st


def _final_checks(st: State, original: Ints, answers_for: BoolArray) -> None:
    """Every hard goal the plan is responsible for holds (``answers_for``: the partitions it may move)."""
    status = hard_goal_status(st, original, answers_for)
    if not st.options.operation.kind.moves_data:
        # Demotion moves no data, so it cannot fix racks, groups, or loads leadership does not carry.
        status = {g: ok for g, ok in status.items() if st.catalogue.leadership_mends(g)}
    failed = [g for g, ok in status.items() if not ok]
    if failed:
        raise PlanningError(failed[0], f"the plan would still break hard goal {failed[0]}; see docs/goals.md")
    offline = (st.rep != NO_BROKER) & ~st.active[np.maximum(st.rep, 0)]
    if st.options.operation.kind.moves_data and offline.any():
        p = int(np.flatnonzero(offline.any(axis=1))[0])
        raise PlanningError("excluded-brokers", f"partition {st.model.topic_name(p)} still has a replica offline")

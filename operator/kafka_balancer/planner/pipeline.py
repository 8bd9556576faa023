"""``plan``: the stages of a plan, in order, each with when it applies and what it does.

:data:`STAGES` is the whole plan: the operation's shape change, the hard goals (precheck,
evacuation, leadership, capacity), the distribution goals with their finishing passes, and the
passes that revisit a finished plan (rebuilding rounds, count exchanges). The distribution stage
runs each goal's turn (:func:`goal_order`) and then :data:`FINISHING`. docs/goals.md describes each
stage; ``plan(..., trace=Trace())`` (``kafka-balancer plan --trace``) records what each one did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Final

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, ClusterModel
from kafka_balancer.model.proposal import Proposal
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.budget import Budget
from kafka_balancer.planner.base.checks import compute_bands
from kafka_balancer.planner.base.measures import ended_worse, goal_violation, hard_goal_status
from kafka_balancer.planner.base.state import State, resolve_groups
from kafka_balancer.planner.catalogue import LEADER_COUNT_GOAL, TOPIC_LEADER_GOAL, TOPIC_REPLICA_GOAL
from kafka_balancer.planner.distribution.balance import balance_goal
from kafka_balancer.planner.distribution.topic_chains import leader_chains
from kafka_balancer.planner.distribution.topics import balance_topic_goal
from kafka_balancer.planner.finishing.detours import repair_topic_slots
from kafka_balancer.planner.finishing.rebuild import exchange_pass, rebuild_rounds
from kafka_balancer.planner.finishing.revert import revert_moves
from kafka_balancer.planner.finishing.substitute import substitute_moves
from kafka_balancer.planner.finishing.tighten import leaders_off_average, tighten_leaders
from kafka_balancer.planner.hard.evacuate import bad_slots, evacuate, fix_leadership
from kafka_balancer.planner.hard.feasibility import precheck
from kafka_balancer.planner.hard.leader_racks import applies as leader_racks_apply
from kafka_balancer.planner.hard.leader_racks import lead_from_preferred_racks
from kafka_balancer.planner.hard.operations import change_replication_factor, move_topics
from kafka_balancer.planner.hard.pinned import repair_capacity, repair_capacity_by_leadership, repair_racks_and_groups
from kafka_balancer.planner.log_dirs.placement import place_log_dirs
from kafka_balancer.planner.options import PlannerOptions, PlanningError
from kafka_balancer.planner.proposal import build_proposal
from kafka_balancer.planner.trace import Trace

# Operations that only change the cluster's shape: no distribution rounds afterwards, so the
# data moved is just what the operation needs.
SHAPE_ONLY: Final = frozenset(
    {"demote-brokers", "fix-offline-replicas", "change-replication-factor", "move-topics", "remove-disks"}
)
# The per-topic replica goal also runs once right after this goal's turn.
TOPIC_SPREAD_EARLY_AFTER: Final = "disk-distribution"
# Rounds of that early pass (and of the repeat at the end): gains fall off fast (measured at 1.3M
# replicas: half the distance in the first 10 rounds, under 1% per round after that).
TOPIC_SPREAD_EARLY_ROUNDS: Final = 12
# Share of the leader chains' per-call caps for the last call, after the leader counts are finished
# (the caps only bind on very large clusters: 2.8M replicas, 65 s for the full caps).
FINAL_CHAINS_SHARE: Final = 0.05
# And for the chains of the per-topic repeat (2.8M replicas: 21 s for 471 slots with the full caps).
REPEAT_CHAINS_SHARE: Final = 0.3
# Turns of stand-ins from afar and shortcuts (bench.strong_skew at 1.3M replicas: the first takes
# 1.05% off the plan's bytes, the second 0.3%). A pass that revisits a finished plan (a rebuilding
# round, the count exchanges) takes one: in every round the second cost the small clusters, which get
# up to 16 rounds, 8-21% of their time (bench.planner table rows 2 and 1: 7.8 -> 8.5 s, 6.7 -> 8.1 s).
FAR_TURNS: Final = 2


@dataclass
class PlanRun:
    """One run of the stages: the working state and what a stage hands on to the next."""

    st: State
    strict: frozenset[str]  # distribution goals guarded from the start (see :func:`plan`)
    free: BoolArray  # the partitions the options let move, before the operation pins any
    movable: BoolArray  # what the stages after the operation may move (the operation sets it)
    evacuated: Ints  # partitions whose replicas the evacuation re-placed
    trace: Trace | None = None
    detours: bool = True  # the finishing passes include the detours
    revisits: bool = False  # a pass that revisits a finished plan (rebuilding rounds, count exchanges)

    def step(self, name: str) -> AbstractContextManager[None]:
        return nullcontext() if self.trace is None else self.trace.step(self.st, name)

    def again(self, *, detours: bool) -> Callable[[State], None]:
        """The distribution stage once more, untraced (the passes that revisit a finished plan),
        between the leaderships onto the preferred racks where they apply (a rebuilding round sends
        partitions back to their original leaders, which may lead from another rack)."""
        quiet = dataclasses.replace(self, trace=None, detours=detours, revisits=True)

        def replan(_st: State) -> None:
            racks = _prefers_racks(quiet)
            if racks:
                _lead_from_preferred_racks(quiet)
            _distribute(quiet)
            if racks:
                _lead_from_preferred_racks(quiet)

        return replan

    def runs(self, stage: Stage) -> bool:
        """Whether ``stage`` runs now: it applies, and it is not bounded or the time budget is not spent."""
        self._starting(stage.name)
        return stage.applies(self) and not (stage.bounded and self.st.budget.spent())

    def out_of_time(self, step: str) -> bool:
        """Whether the time budget is spent as ``step`` (a part of a bounded stage) would start."""
        self._starting(step)
        return self.st.budget.spent()

    def _starting(self, name: str) -> None:
        """Names the step starting to the budget: a step of the first pass (a revisit's steps are part
        of the revisiting stage)."""
        if not self.revisits:
            self.st.budget.stage = name


@dataclass(frozen=True)
class Stage:
    """A named stage: ``applies`` says whether it runs in this plan, ``run`` does its work."""

    name: str
    applies: Callable[[PlanRun], bool]
    run: Callable[[PlanRun], object]  # what it returns (a count of moves, say) is not used
    # A search for balance: skipped once the time budget is spent (the hard goals' stages never are).
    bounded: bool = False


def plan(model: ClusterModel, options: PlannerOptions | None = None, *, trace: Trace | None = None) -> Proposal:
    """Compute the proposal for ``model`` under ``options``; raises PlanningError on an unmet hard goal.

    Each distribution goal is optimized under the guard of the goals before it (a later goal never
    undoes an earlier one) and may temporarily worsen the goals after it, which then repair
    themselves in their turn. When a goal still ends worse than it started, the plan is recomputed
    with that goal guarded from the start, so applying a plan never makes a statistic worse.
    ``trace`` records what each stage of the last run did.
    """
    options = options or PlannerOptions()
    budget = Budget(options.max_planning_seconds)
    before = State(model, options, resolve_groups(model, options))
    comparable = options.operation.type in {"rebalance", "add-brokers"} and not _holds_inactive(before)
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
    return build_proposal(model, options, before, st, budget.cut_short)


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


def _holds_inactive(st: State) -> bool:
    """Whether replicas sit on dead or removed brokers (then group averages change as they leave)."""
    return bool(((st.rep != NO_BROKER) & ~st.active[np.maximum(st.rep, 0)]).any())


# ----- the stages of a plan ---------------------------------------------------------------------------


def _operation(run: PlanRun) -> None:
    """The operation's shape change (replication factor, topics moved); what the rest may move."""
    st = run.st
    _check_operation(st)
    op = st.options.operation
    if op.type == "change-replication-factor" and op.replication_factor is not None:
        change_replication_factor(st, op.topics, op.replication_factor)
    elif op.type == "move-topics":
        target_group = None
        if op.target_group is not None:
            target_group = st.groups.names.index(op.target_group)
            targets = st.groups.broker == target_group
        else:
            targets = st.named_targets()
        run.movable = move_topics(st, op.topics, targets & st.active, target_group)
        if op.target_group is None:
            # Named brokers: the topics stay on them (the capacity repair may settle them on another
            # named broker, and moves others to make room).
            run.movable = np.zeros_like(run.movable)
    elif shape_only(st.options):
        run.movable = np.zeros_like(run.movable)


def _check_operation(st: State) -> None:
    op = st.options.operation
    for b in op.brokers:
        st.index_of(b, "operation.brokers")
    for b in op.target_brokers:
        st.index_of(b, "operation.targetBrokers")
    if op.type == "add-brokers":
        for b in op.brokers:
            i = st.index_of(b, "operation.brokers")
            if not st.model.broker_alive[i]:
                raise PlanningError("invalid-options", f"field 'operation.brokers' names broker {b}, which is down")


def shape_only(options: PlannerOptions) -> bool:
    """Whether the plan only changes the cluster's shape (no distribution goals afterwards).

    Removing brokers onto named target brokers is such a change, as a hardware swap: their
    replicas land on the targets and nothing else moves (a rebalance over the targets and the
    rest would move replicas from the removed brokers onwards, off the brokers the user named).
    """
    op = options.operation
    return op.type in SHAPE_ONLY or (op.type == "remove-brokers" and bool(op.target_brokers))


def _evacuation(run: PlanRun) -> None:
    """Re-place what may not stay; a removed broker's replicas onto the ``targetBrokers`` when named.

    Those go first, as they have the fewest places to go: a dead broker's replica of the same
    partition (which may go anywhere in the group) placed first could take the one target whose
    rack kept the partition spread.
    """
    st = run.st
    parts, slots = bad_slots(st, ~st.active)
    run.evacuated = parts
    op = st.options.operation
    if op.type == "remove-brokers" and op.target_brokers:
        removed = st.removed[st.rep[parts, slots]]
        evacuate(st, parts[removed], slots[removed], st.named_targets())
        parts, slots = parts[~removed], slots[~removed]
    evacuate(st, parts, slots)


def _prefers_racks(run: PlanRun) -> bool:
    return leader_racks_apply(run.st)


def _lead_from_preferred_racks(run: PlanRun) -> None:
    """Leadership onto each partition's preferred leader rack, wherever the options let it move
    (also where the operation pinned the partition: a leadership change moves no data)."""
    lead_from_preferred_racks(run.st, run.free | run.movable)


def _places_log_dirs(run: PlanRun) -> bool:
    # demote-brokers moves no data: every replica stays in its directory.
    return run.st.dir_layout is not None and _moves_data(run)


def _place_log_dirs(run: PlanRun) -> None:
    place_log_dirs(run.st, run.free, balance=_balances(run))


def _always(_run: PlanRun) -> bool:
    return True


def _moves_data(run: PlanRun) -> bool:
    # demote-brokers moves no data: the totals that must fit are not its to change.
    return run.st.options.operation.type != "demote-brokers"


def _balances(run: PlanRun) -> bool:
    return not shape_only(run.st.options)


# ----- the distribution stage -------------------------------------------------------------------------


def goal_order(options: PlannerOptions) -> list[str]:
    """The order distribution goals are optimized in: broker-level goals by priority, then per-topic goals."""
    goals, catalogue = options.distribution_goals, options.catalogue
    return [g for g in goals if catalogue.balances(g) is not None] + [g for g in catalogue.topic_goals if g in goals]


def _distribute(run: PlanRun) -> None:
    """Every distribution goal's turn, each guarded by those before it, then the finishing passes
    with every goal guarded (docs/goals.md, "Distribution goals" and "Finishing passes")."""
    st, options = run.st, run.st.options
    done: list[str] = []
    racks = _prefers_racks(run)
    for goal in goal_order(options):
        done.append(goal)
        if run.out_of_time(f"distribution goals ({goal})"):
            break
        with st.scoped(guarded=frozenset(done) | run.strict), run.step(goal):
            q = st.catalogue.balances(goal)
            if racks and q is not None and st.catalogue.leadership_carries(q):
                # The replica moves of the goals before may have changed partitions' preferred racks.
                _lead_from_preferred_racks(run)
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
    if goal == TOPIC_SPREAD_EARLY_AFTER and TOPIC_REPLICA_GOAL in st.options.distribution_goals:
        # While the brokers still have slack in the later goals' bands, one-way moves can even out
        # the topics; at the end only exchanges (twice the bytes) could.
        balance_topic_goal(st, TOPIC_REPLICA_GOAL, rounds=TOPIC_SPREAD_EARLY_ROUNDS)


def _topic_goals_again(run: PlanRun) -> None:
    """Leadership moves of the last goal free some replica moves of the one before: once more,
    briefly (it finishes a few slots; at millions of replicas more rounds would not pay)."""
    st = run.st
    for goal in st.catalogue.topic_goals:
        if goal in st.options.distribution_goals:
            balance_topic_goal(
                st, goal, size_cap=1.0, rounds=TOPIC_SPREAD_EARLY_ROUNDS, chains_share=REPEAT_CHAINS_SHARE
            )


def _final_chains(run: PlanRun) -> None:
    """The traffic and leader counts changed since the topic-leader goal's turn: its chains (no data
    moves) may now find a way for what it left out of band. Briefly: at millions of replicas a full
    call would take a minute."""
    leader_chains(run.st, compute_bands(run.st), share=FINAL_CHAINS_SHARE)


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


def _far_and_shortcuts(run: PlanRun) -> None:
    """Turns of stand-ins from afar and shortcuts: each changes which replicas left which brokers,
    and so opens up some of the other's exchanges again."""
    for turn in range(1 if run.revisits else FAR_TURNS):
        if turn and run.out_of_time("stand-ins from afar, then shortcuts"):
            return
        with run.step("stand-ins from afar"):
            substitute_moves(run.st, far=True)
        with run.step("shortcuts again"):
            substitute_moves(run.st, arrived=True)


def _has(goal: str) -> Callable[[PlanRun], bool]:
    return lambda run: goal in run.st.options.distribution_goals


FINISHING: Final = (
    Stage("per-topic goals again", _always, _topic_goals_again, bounded=True),
    Stage("moves back home", _always, lambda run: revert_moves(run.st), bounded=True),
    Stage("stand-ins", _always, lambda run: substitute_moves(run.st), bounded=True),
    # The leader counts are evened out inside the leader tiers, so the leaderships first go where the
    # hard goal puts them: the replica moves since the first leadership stage took some off their
    # preferred racks, and moving those back after the counts were finished moved the counts with
    # them (bench.planner scale --preferred-leader-racks 1 at 320k replicas: 0.001 of an average over
    # their band at the end). A hard goal's stage.
    Stage("leadership to preferred racks before the counts", _prefers_racks, _lead_from_preferred_racks),
    Stage("leader counts to the average", _has(LEADER_COUNT_GOAL), lambda run: tighten_leaders(run.st), bounded=True),
    Stage("topic leader chains", _has(TOPIC_LEADER_GOAL), _final_chains, bounded=True),
    Stage("detours", lambda run: run.detours, lambda run: repair_topic_slots(run.st), bounded=True),
    # After the detours: run before them, it left them fewer ways out (a mixed-rf seed kept a
    # topic slot out of band); so did the stand-ins from afar.
    Stage("shortcuts", _always, lambda run: substitute_moves(run.st, arrived=True), bounded=True),
    Stage("stand-ins from afar, then shortcuts", _always, _far_and_shortcuts, bounded=True),
    # The shortcuts and stand-ins moved replicas: a topic's partitions may now offer a path its
    # leadership could not take before (bench.strong_skew, 270 brokers, --max-replicas 5000: the
    # last topic-leader slot).
    Stage("topic leader chains again", _has(TOPIC_LEADER_GOAL), _final_chains, bounded=True),
    # Replica moves since the first leadership stage may have taken a leader's rack away or brought a
    # more preferred one in (where a partition has fewer replicas than there are racks); the leader-borne
    # goals then finish inside the tiers, by leadership moves that keep each partition in its rack.
    # A hard goal's stage: never cut by the time budget.
    Stage("leadership to preferred racks again", _prefers_racks, _lead_from_preferred_racks),
    Stage("leader-borne goals by leadership", _always, _finish_by_leadership, bounded=True),
)


STAGES: Final = (
    Stage("operation", _always, _operation),
    Stage("capacity precheck", _moves_data, lambda run: precheck(run.st)),
    Stage("racks and groups of pinned partitions", _moves_data, lambda run: repair_racks_and_groups(run.st, run.free)),
    Stage("evacuation", _moves_data, _evacuation),
    Stage("leadership off excluded brokers", _always, lambda run: fix_leadership(run.st)),
    Stage("leadership to preferred racks", _prefers_racks, _lead_from_preferred_racks),
    Stage(
        "capacity by leadership",
        lambda run: not _moves_data(run),
        lambda run: repair_capacity_by_leadership(run.st, run.free),
    ),
    Stage(
        "capacity",
        _moves_data,
        lambda run: repair_capacity(run.st, run.free, run.evacuated, fewest_bytes=shape_only(run.st.options)),
    ),
    Stage("distribution goals", _balances, _distribute, bounded=True),
    # Without the detours: on small clusters they made a round cost seconds (24 s of a 66-partition
    # plan), and of 5,774 random cases one plan changed without them. The count exchanges' pass
    # keeps them: two of the plans it mends need them (docs/performance.md).
    Stage("rebuilding rounds", _balances, lambda run: rebuild_rounds(run.st, run.again(detours=False)), bounded=True),
    # Not bounded: once the search is cut short it is one turn of the replica-count goal, in the
    # budget's reserve (exchange_pass).
    Stage("count exchanges", _balances, lambda run: exchange_pass(run.st, run.again(detours=True))),
    # Again at the end: the distribution goals balance the leader-borne loads inside each leader
    # tier, which keeps most leaderships in their rack, but a leadership may still leave it where a
    # lower tier had room (or a replica move took the leader's rack away). A hard goal's stage.
    Stage("leadership back to preferred racks", _prefers_racks, _lead_from_preferred_racks),
    # JBOD: each replica's log directory, for the brokers' placement reached (a hard goal's stage).
    Stage("log directories", _places_log_dirs, _place_log_dirs),
)


def _final_checks(st: State, original: Ints, answers_for: BoolArray) -> None:
    """Every hard goal the plan is responsible for holds (``answers_for``: the partitions it may move)."""
    status = hard_goal_status(st, original, answers_for)
    if st.options.operation.type == "demote-brokers":
        # Demotion moves no data, so it cannot fix racks, groups, or loads leadership does not carry.
        status = {g: ok for g, ok in status.items() if st.catalogue.leadership_mends(g)}
    failed = [g for g, ok in status.items() if not ok]
    if failed:
        raise PlanningError(failed[0], f"the plan would still break hard goal {failed[0]}; see docs/goals.md")
    offline = (st.rep != NO_BROKER) & ~st.active[np.maximum(st.rep, 0)]
    if st.options.operation.type != "demote-brokers" and offline.any():
        p = int(np.flatnonzero(offline.any(axis=1))[0])
        raise PlanningError("excluded-brokers", f"partition {st.model.topic_name(p)} still has a replica offline")

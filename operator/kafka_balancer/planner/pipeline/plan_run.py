"""One run of the plan's stages: the working state a stage reads and hands on (:class:`PlanRun`),
a stage (:class:`Stage`), a group of passes repeated to a fixed point (:class:`FixedPoint`), and the
conditions and steps stages of both lists share."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np

from kafka_balancer.model.cluster import BoolArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import Exchange
from kafka_balancer.planner.hard.leader_racks import applies as leader_racks_apply
from kafka_balancer.planner.hard.leader_racks import lead_from_preferred_racks as lead_from_racks
from kafka_balancer.planner.trace import Trace


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

    def runs(self, stage: Stage | FixedPoint) -> bool:
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


@dataclass(frozen=True)
class FixedPoint:
    """A named group of passes, each able to open moves for the others, repeated: a turn runs every
    pass that applies, in order, and the group stops after a turn that changed nothing (no replica,
    leadership or load moved: the next turn would start from the same state and change nothing
    either), after ``turns(run)`` turns, or when the time budget is spent before a turn (a bounded
    stage; a pass marked bounded is also skipped inside a turn once it is spent). Each pass is a step
    of the trace."""

    name: str
    passes: tuple[Stage, ...]
    turns: Callable[[PlanRun], int]
    bounded: bool = True

    def applies(self, run: PlanRun) -> bool:
        return any(p.applies(run) for p in self.passes)

    def run(self, run: PlanRun) -> int:
        """Runs the turns; returns how many ran."""
        st, ran = run.st, 0
        while ran < self.turns(run) and not (ran and run.out_of_time(self.name)):
            ran += 1
            rep, load = st.rep.copy(), st.load.copy()
            for p in self.passes:
                if p.applies(run) and not (p.bounded and st.budget.spent()):
                    with run.step(p.name):
                        p.run(run)
            if np.array_equal(rep, st.rep) and np.array_equal(load, st.load):
                break
        return ran


def always(_run: PlanRun) -> bool:
    return True


def counts_leaders(run: PlanRun) -> bool:
    """Whether the plan has a goal over the leader count (a count only leaders carry: the catalogue's
    ``leader_count_goals``), which leadership moves alone can finish."""
    return bool(run.st.catalogue.leader_count_goals(run.st.options.distribution_goals))


def spreads_topic_leaders(run: PlanRun) -> bool:
    """Whether the plan has a per-topic goal over a topic's leaders (the catalogue's ``topic_leader_goals``)."""
    return bool(run.st.catalogue.topic_leader_goals(run.st.options.distribution_goals))


def exchanges_counts(run: PlanRun) -> bool:
    """Whether the plan has a goal whose record allows count exchanges (the replica count)."""
    return bool(run.st.catalogue.using(Exchange.COUNT_EXCHANGES, run.st.options.distribution_goals))


def prefers_racks(run: PlanRun) -> bool:
    return leader_racks_apply(run.st)


def lead_from_preferred_racks(run: PlanRun) -> None:
    """Leadership onto each partition's preferred leader rack, wherever the options let it move
    (also where the operation pinned the partition: a leadership change moves no data)."""
    lead_from_racks(run.st, run.free | run.movable)

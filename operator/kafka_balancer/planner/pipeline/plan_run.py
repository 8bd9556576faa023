"""One run of the plan's stages: the working state a stage reads and hands on (:class:`PlanRun`),
a stage (:class:`Stage`), and the conditions and steps stages of both lists share."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

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

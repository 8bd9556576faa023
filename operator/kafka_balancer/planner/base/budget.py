"""The planner's time budget (``goals.maxPlanningSeconds``, ``plan --max-seconds``).

The hard goals are never cut short by it: a plan that breaks one is no plan. What the budget
bounds is the search for balance: once it is spent, the distribution stages stop at their next
round and the stages after them do not run, and the plan is the placement reached so far (which
holds every hard goal: the stages before the distribution goals made it so). The capacity repair
also stops its search when the budget is spent; a repair left unfinished is then a planning
failure that says so. ``cut_short`` names the first stage the budget stopped, for the summary.

The search stops at ``1 - TUNING.reserve_share`` of the seconds; the rest is kept for a step that must
follow a search cut short (``reserve``): the replica-count goal's turn with count exchanges, when
the budget stopped the pass that has them (finishing.rebuild.exchange_pass). That step gets the
reserve's length from when it starts, also when the round running as the search ran out overran
into it (a round at 1M replicas can take seconds).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from kafka_balancer.planner.tuning import TUNING


@dataclass
class Budget:
    """Seconds the planner may spend, from its creation (``math.inf``: no limit)."""

    seconds: float = math.inf
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    stage: str = field(default="", init=False)  # the stage running (the pipeline names it)
    cut_short: str | None = field(default=None, init=False)
    _reserve_ends: float | None = field(default=None, init=False)  # while in the reserve (``reserve``)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def spent(self) -> bool:
        """Whether the budget is spent; the stage running when it first says so is the one cut short."""
        if self._reserve_ends is not None:
            return self.clock() >= self._reserve_ends
        if self.cut_short is not None:
            return True
        if self.clock() - self.started < self.seconds * (1.0 - TUNING.reserve_share):
            return False
        self.cut_short = self.stage
        return True

    def seconds_left(self) -> float:
        """Seconds until :meth:`spent` says so (``math.inf`` without a limit), for a step that must
        bound its own time (a solver's time limit)."""
        if self._reserve_ends is not None:
            return max(0.0, self._reserve_ends - self.clock())
        if self.cut_short is not None:
            return 0.0
        return max(0.0, self.started + self.seconds * (1.0 - TUNING.reserve_share) - self.clock())

    @contextmanager
    def reserve(self) -> Iterator[None]:
        """Inside, the budget is spent at its full seconds, or the reserve's length after entering
        it if that is later."""
        now = self.clock()
        self._reserve_ends = max(self.started + self.seconds, now + self.seconds * TUNING.reserve_share)
        try:
            yield
        finally:
            self._reserve_ends = None

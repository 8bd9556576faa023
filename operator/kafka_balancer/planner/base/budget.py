"""The planner's time budget (``goals.maxPlanningSeconds``, ``plan --max-seconds``).

The hard goals are never cut short by it: a plan that breaks one is no plan. What the budget
bounds is the search for balance: once it is spent, the distribution stages stop at their next
round and the stages after them do not run, and the plan is the placement reached so far (which
holds every hard goal: the stages before the distribution goals made it so). The capacity repair
also stops its search when the budget is spent; a repair left unfinished is then a planning
failure that says so. ``cut_short`` names the first stage the budget stopped, for the summary.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Budget:
    """Seconds the planner may spend, from its creation (``math.inf``: no limit)."""

    seconds: float = math.inf
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    stage: str = field(default="", init=False)  # the stage running (the pipeline names it)
    cut_short: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def spent(self) -> bool:
        """Whether the budget is spent; the stage running when it first says so is the one cut short."""
        if self.cut_short is not None:
            return True
        if self.clock() - self.started < self.seconds:
            return False
        self.cut_short = self.stage
        return True

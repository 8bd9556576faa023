"""A decision being made, which each situation of the decision reads and adds to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from kafka_balancer.controller.decision.actions import Action, Ask, Observation
from kafka_balancer.controller.decision.seen import Problem, Seen
from kafka_balancer.controller.status import BalancePolicyStatus
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec


@dataclass
class Draft:
    """A decision being made: its inputs (the spec, the status it started from, what was seen), the
    next status so far, and what goes with it."""

    spec: BalancePolicySpec
    before: BalancePolicyStatus
    seen: Seen
    status: BalancePolicyStatus
    actions: list[Action] = field(default_factory=list)
    stall: Problem | None = None
    stopping: str | None = None  # why the running execution is being stopped (the Reconciling condition)
    model: Literal["measured", "live"] = "measured"

    def ask(self, what: Observation, *, trigger: str = "", model: Literal["measured", "live"] = "measured") -> bool:
        self.actions.append(Ask(what, trigger, model))
        return True

    def stalled(self, problem: Problem) -> bool:
        self.stall = problem
        return True


# A situation decides (True: the decision is made, or waits for the observation it asked for) or
# leaves it to the situations after it (False).
Situation = Callable[[Draft], bool]

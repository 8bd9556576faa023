"""Pure planning: goals and operations over the model produce a proposal. No I/O.

Entry points: :func:`plan` (model + options -> Proposal, or PlanningError), :func:`evaluate`
(balance statistics only), :func:`options_from_policy` (CRD spec -> options), and the per-group
split/merge helpers for planning resource groups in parallel.
"""

from kafka_balancer.model.policy import DISTRIBUTION_GOALS, HARD_GOALS, OPERATIONS
from kafka_balancer.planner.core import Evaluation, evaluate, plan
from kafka_balancer.planner.options import (
    GroupOptions,
    OperationOptions,
    PlannerOptions,
    PlanningError,
)

__all__ = [
    "DISTRIBUTION_GOALS",
    "HARD_GOALS",
    "OPERATIONS",
    "Evaluation",
    "GroupOptions",
    "OperationOptions",
    "PlannerOptions",
    "PlanningError",
    "evaluate",
    "plan",
]

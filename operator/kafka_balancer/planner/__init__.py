"""Pure planning: goals and operations over the model produce a proposal. No I/O.

Entry points: :func:`plan` (model + options -> Proposal, or PlanningError), :func:`evaluate`
(balance statistics only), :func:`options_from_policy` (CRD spec -> options), and the per-group
split/merge helpers for planning resource groups in parallel.
"""

from kafka_balancer.model.policy.fields import OPERATIONS
from kafka_balancer.model.quantities import Quantity
from kafka_balancer.planner.catalogue import CATALOGUE, Catalogue, Exchange, Goal
from kafka_balancer.planner.options import GroupOptions, OperationOptions, PlannerOptions, PlanningError
from kafka_balancer.planner.pipeline import plan
from kafka_balancer.planner.proposal import Evaluation, evaluate
from kafka_balancer.planner.trace import Trace

# The goals' names, from the goal catalogue (the CRD's lists name the same goals, in the same order).
HARD_GOALS = CATALOGUE.hard_goals
DISTRIBUTION_GOALS = CATALOGUE.distribution_goals

__all__ = [
    "CATALOGUE",
    "DISTRIBUTION_GOALS",
    "HARD_GOALS",
    "OPERATIONS",
    "Catalogue",
    "Evaluation",
    "Exchange",
    "Goal",
    "GroupOptions",
    "OperationOptions",
    "PlannerOptions",
    "PlanningError",
    "Quantity",
    "Trace",
    "evaluate",
    "plan",
]

"""Whether the current proposal may execute now, and why not: one pure function, one decision.

The reviewed proposal is the executed proposal: in Manual mode, spec.approvedProposal must equal the
id of the proposal in status; the plan then executed is the one stored with that id, never a
recomputed one. A stale or unknown id is refused, nothing runs, and the Stalled condition says why.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from kafka_balancer.controller.cron import in_maintenance_window
from kafka_balancer.model.policy import BalancePolicySpec


@dataclass(frozen=True)
class Decision:
    execute: bool
    reason: str  # CamelCase, used as the condition reason and the Event reason
    message: str
    stalled: bool = False  # needs a human (e.g. a stale approval)


def decide(
    spec: BalancePolicySpec,
    proposal_id: str | None,
    *,
    proposal_empty: bool,
    executed_ids: frozenset[str],
    now: dt.datetime,
    cut_short: str | None = None,
) -> Decision:
    """``executed_ids``: proposals already executed to completion (never run twice); ``cut_short``:
    the planning stage the time budget stopped (status.proposal.timeBudgetReached)."""
    approved = spec.approved_proposal
    if spec.paused:
        return Decision(False, "Paused", "spec.paused is true: no proposal is executed")
    if proposal_id is None:
        if spec.mode == "Manual" and approved is not None:
            return Decision(
                False, "UnknownProposal", f"approvedProposal '{approved}' names no current proposal", stalled=True
            )
        return Decision(False, "NoProposal", "no proposal yet")
    if proposal_empty and cut_short is not None:
        # Not balanced: the planner stopped before its first move. A human raises the budget.
        return Decision(
            False,
            "TimeBudgetReached",
            f"proposal {proposal_id} changes nothing: goals.maxPlanningSeconds ran out in stage {cut_short} "
            "before any move (status.proposal.goalsViolated lists what is out of band); raise it",
            stalled=True,
        )
    if proposal_empty:
        return Decision(False, "NothingToDo", f"proposal {proposal_id} changes nothing: the cluster is balanced")
    if proposal_id in executed_ids:
        return Decision(False, "AlreadyExecuted", f"proposal {proposal_id} was already executed")
    if spec.mode == "DryRun":
        return Decision(False, "DryRun", f"mode DryRun: proposal {proposal_id} is reported, never executed")
    if spec.mode == "Manual":
        if approved is None:
            return Decision(
                False,
                "AwaitingApproval",
                f"set spec.approvedProposal to '{proposal_id}' to execute the proposal in status.proposal",
            )
        if approved != proposal_id:
            return Decision(
                False,
                "StaleApproval",
                f"approvedProposal '{approved}' is not the current proposal '{proposal_id}' (the cluster or the spec "
                f"changed since it was made, or the id is wrong): review status.proposal and approve its id",
                stalled=True,
            )
    if not in_maintenance_window(spec.execution.maintenance_windows, now):
        return Decision(False, "OutsideMaintenanceWindow", "waiting for the next execution.maintenanceWindows window")
    why = "approved" if spec.mode == "Manual" else "mode Auto"
    return Decision(True, "Approved", f"proposal {proposal_id} executes ({why})")

"""Whether the current proposal may execute now, and why not: one pure function, one decision.

The reviewed proposal is the executed proposal: in Manual mode, spec.approvedProposal must equal the
id of the proposal in status; the plan then executed is the one stored with that id, never a
recomputed one. A stale or unknown id is refused, nothing runs, and the Stalled condition says why.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_balancer.controller.cron import in_maintenance_window
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec

# The Stalled reason of an approval that names another proposal than the current one.
STALE_APPROVAL = "StaleApproval"


@dataclass(frozen=True)
class Doubts:
    """What holds a proposal back besides the spec: ``cut_short``, the planning stage the time budget
    stopped (status.proposal.timeBudgetReached); ``review_tampered``, why the copies people review were
    found not to be the proposal (status.proposal.reviewTampered)."""

    cut_short: str | None = None
    review_tampered: str | None = None


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
    doubts: Doubts | None = None,
) -> Decision:
    """``executed_ids``: proposals already executed to completion (never run twice)."""
    doubts = doubts or Doubts()
    cut_short, review_tampered = doubts.cut_short, doubts.review_tampered
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
        if approved == proposal_id and review_tampered is not None:
            # The approval may rest on copies that said something else: it counts once given again.
            return Decision(
                False,
                "ProposalTampered",
                f"{review_tampered}; the copies are restored: review them, then withdraw spec.approvedProposal and "
                f"set it to '{proposal_id}' again",
                stalled=True,
            )
        if approved != proposal_id:
            return Decision(
                False,
                STALE_APPROVAL,
                f"approvedProposal '{approved}' is not the current proposal '{proposal_id}' (the cluster or the spec "
                f"changed since it was made, or the id is wrong): review status.proposal and approve its id",
                stalled=True,
            )
    if not in_maintenance_window(spec.execution.maintenance_windows, now):
        return Decision(False, "OutsideMaintenanceWindow", "waiting for the next execution.maintenanceWindows window")
    why = "approved" if spec.mode == "Manual" else "mode Auto"
    return Decision(True, "Approved", f"proposal {proposal_id} executes ({why})")


def approver(body: Mapping[str, Any]) -> str | None:
    """Who set spec.approvedProposal, from the object's managedFields: the field manager (kubectl-patch,
    kubectl-client-side-apply, a GitOps tool's name, ...), its operation and time, the newest entry that
    owns the field. The API server's audit log names the user behind that request."""
    entries = ((body.get("metadata") or {}).get("managedFields")) or []
    owners = [
        e
        for e in entries
        if isinstance(e, Mapping) and "f:approvedProposal" in (((e.get("fieldsV1") or {}).get("f:spec")) or {})
    ]
    if not owners:
        return None
    newest = max(owners, key=lambda e: str(e.get("time") or ""))
    manager = str(newest.get("manager") or "unknown")[:120]
    return f"{manager} ({newest.get('operation', 'Update')} at {newest.get('time', 'an unknown time')})"

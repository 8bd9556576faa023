"""Pure conversions between the parts' outputs and what users read: status fields, metrics, Events.

No I/O: the reconciler calls these with what it read (executor progress, the planner's summary,
the previous status) and writes the results.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from kafka_balancer.controller.status import (
    RECONCILING,
    STALLED,
    STUCK_LISTED,
    BalancePolicyStatus,
    GroupImbalance,
    Progress,
    ProposalStatus,
)
from kafka_balancer.executor import Progress as ExecProgress
from kafka_balancer.metrics import ExecutionFigures
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec
from kafka_balancer.model.summary import ProposalSummary


def throttled_brokers(record: dict[str, Any]) -> int:
    """Brokers whose replication rate the execution set and has not restored yet (executor checkpoint)."""
    throttles = record.get("throttles") or {}
    return len(throttles.get("brokers") or [])


def threshold(spec: BalancePolicySpec) -> float:
    """The ratio above which this policy calls its cluster imbalanced (for alerts)."""
    return spec.triggers.on_imbalance.threshold if spec.triggers.on_imbalance else spec.goals.balance_threshold


def servers(text: str) -> set[str]:
    return {s.strip().lower() for s in text.split(",") if s.strip()}


def parse_time(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def executed_ids(status: BalancePolicyStatus) -> frozenset[str]:
    if status.last_run is not None and status.last_run.result == "Completed":
        return frozenset({status.last_run.proposal_id})
    return frozenset()


def figures(progress: ExecProgress) -> ExecutionFigures:
    return ExecutionFigures(
        bytes_moved=int(progress.bytes_moved),
        bytes_total=int(progress.bytes_total),
        partitions_moved=progress.partitions_done,
        partitions_total=progress.partitions_total,
        in_flight=progress.partitions_in_progress,
        eta_seconds=progress.eta_seconds,
        stuck=len(progress.stuck),
    )


def progress(progress: ExecProgress) -> Progress:
    return Progress(
        bytes_moved=int(progress.bytes_moved),
        bytes_total=int(progress.bytes_total),
        partitions_done=progress.partitions_done,
        partitions_total=progress.partitions_total,
        percent=round(100.0 * progress.fraction, 1),
        eta_seconds=None if progress.eta_seconds is None else int(progress.eta_seconds),
        stuck_moves=len(progress.stuck),
        stuck=list(progress.stuck[:STUCK_LISTED]),
        waiting=progress.waiting[:1000],
        taken_over=list(progress.taken_over[:STUCK_LISTED]),
    )


def stuck_reasons(progress: ExecProgress) -> dict[str, str]:
    """Stuck moves that wait (for a target broker missing from the metadata) rather than copy nothing,
    each with the executor's reason: the broker and how long it has been missing."""
    return {name: progress.blocked[name] for name in progress.stuck if name in progress.blocked}


def group_rows(summary: ProposalSummary, spec: BalancePolicySpec) -> list[GroupImbalance]:
    """Per-group max/avg of the watched resource, before and after, from the planner's summary."""
    resource = spec.triggers.on_imbalance.resource if spec.triggers.on_imbalance else "disk"
    rows = []
    for group in sorted(summary.groups):
        before = summary.max_over_avg(group, resource, after=False)
        if before is not None:
            after = summary.max_over_avg(group, resource, after=True)
            rows.append(GroupImbalance(name=group, resource=resource, before=before, after=after))
    return rows


def describe(proposal: ProposalStatus) -> str:
    return (
        f"proposal {proposal.id} ({proposal.trigger or 'made'}): {proposal.moves} moves, "
        f"{proposal.bytes_to_move} bytes, "
        f"{proposal.leader_changes} leader changes, balancedness {proposal.balancedness_before:.1f} -> "
        f"{proposal.balancedness_after:.1f}"
    )


def transitions(before: BalancePolicyStatus, after: BalancePolicyStatus) -> list[tuple[str, str, str]]:
    """An Event for every condition whose status or reason changed."""
    old = {c.type: (c.status, c.reason) for c in before.conditions}
    events = []
    for cond in after.conditions:
        if old.get(cond.type) == (cond.status, cond.reason) or cond.type == RECONCILING:
            continue
        warning = cond.type == STALLED and cond.status == "True"
        events.append(("Warning" if warning else "Normal", cond.reason, f"{cond.type}={cond.status}: {cond.message}"))
    return events

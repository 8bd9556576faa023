"""The last situation: whether the proposal executes now, and the state when it does not; a proposal
that cannot be read back whole is replaced, never executed."""

from __future__ import annotations

from kafka_balancer.controller import summaries
from kafka_balancer.controller.approval import Doubts, decide
from kafka_balancer.controller.decision.actions import Event
from kafka_balancer.controller.decision.draft import Draft
from kafka_balancer.controller.decision.running import report_running
from kafka_balancer.controller.decision.seen import Problem
from kafka_balancer.controller.status import EXECUTING, PROPOSAL_READY, set_condition


def deciding(nxt: Draft) -> bool:
    """Whether the proposal executes now (approval.decide), and the state when it does not."""
    spec, seen = nxt.spec, nxt.seen
    status = nxt.status
    proposal = status.proposal
    assert proposal is not None  # pending ran before
    executed = summaries.executed_ids(status)
    empty = proposal.moves + proposal.leader_changes == 0
    if seen.review_tampered is not None and seen.review_tampered[0] == proposal.id and not proposal.review_tampered:
        proposal.review_tampered = seen.review_tampered[1]
    if proposal.review_tampered is not None and spec.approved_proposal != proposal.id:
        proposal.review_tampered = None  # the approval given on the tampered copies is withdrawn
    decision = decide(
        spec,
        proposal.id,
        proposal_empty=empty,
        executed_ids=executed,
        now=seen.now,
        doubts=Doubts(proposal.time_budget_reached, proposal.review_tampered),
    )
    status.conditions = set_condition(
        status.conditions,
        PROPOSAL_READY,
        not empty and proposal.id not in executed,
        reason=decision.reason,
        message=decision.message,
        generation=seen.generation,
    )
    if decision.stalled:
        return nxt.stalled(Problem(decision.reason, decision.message))
    if decision.execute:
        if seen.started is None:
            return nxt.ask("start")
        if isinstance(seen.started, Problem) and seen.started.reason in ("ProposalLost", "ProposalTampered"):
            return replace_lost(nxt, seen.started)
        if isinstance(seen.started, Problem):
            return nxt.stalled(seen.started)
        if seen.started.proposal is not None:
            status.proposal = proposal = seen.started.proposal  # with who approved it
        approved = f" (approved by {proposal.approved_by})" if proposal.approved_by else ""
        nxt.actions.append(
            Event(
                "Normal",
                "ExecutionStarted",
                f"executing proposal {proposal.id}{approved}: {summaries.describe(proposal)}",
            )
        )
        report_running(nxt, seen.started, stopping=seen.started.stop_reason)
        return True
    status.conditions = set_condition(
        status.conditions, EXECUTING, False, reason=decision.reason, message="", generation=seen.generation
    )
    if empty or proposal.id in executed:
        done = status.last_run is not None and status.last_run.proposal_id == proposal.id
        status.state = "Completed" if done else "Balanced"
    else:
        status.state = "Paused" if spec.paused else "ProposalReady"
    return True


def replace_lost(nxt: Draft, lost: Problem) -> bool:
    """What was reviewed cannot be read back whole, so it is never executed: a new proposal takes its
    place and the next round decides on it (the same id when nothing changed, so the approval stands
    and exactly the reviewed plan runs; else Manual mode needs the new id approved)."""
    seen, status = nxt.seen, nxt.status
    if seen.proposal is None:
        return nxt.ask("proposal", trigger="ProposalLost", model=nxt.model)
    if isinstance(seen.proposal, Problem):
        return nxt.stalled(seen.proposal)
    assert status.proposal is not None
    message = f"proposal {status.proposal.id}: {lost.message}; proposal {seen.proposal.id} replaces it"
    status.proposal = seen.proposal
    if lost.reason == "ProposalTampered" and nxt.spec.mode == "Manual":
        # What the approver read was not the proposal: the approval counts once given again (approval.decide).
        status.proposal.review_tampered = lost.message
    nxt.actions.append(Event("Warning", lost.reason, message))
    status.state = "ProposalReady"
    return True

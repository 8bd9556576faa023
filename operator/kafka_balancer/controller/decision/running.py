"""The situations of an execution of this process: refused while it runs, running, just finished,
resumed after a restart; and how a running execution is reported."""

from __future__ import annotations

import json
from typing import Literal

from kafka_balancer.controller.decision.actions import Action, Event, StopRun
from kafka_balancer.controller.decision.draft import Draft
from kafka_balancer.controller.decision.seen import Problem, RunView, Seen
from kafka_balancer.controller.status import EXECUTING, BalancePolicyStatus, LastRun, set_condition
from kafka_balancer.executor import ExecutionState
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec


def stop_reason(spec: BalancePolicySpec, proposal_id: str) -> str | None:
    """Why the spec withdraws a running execution of ``proposal_id`` (paused, approval withdrawn, DryRun),
    or None. The planning inputs changing is the other reason (SpecChanged): see executing."""
    if spec.paused:
        return "Paused"
    if spec.mode == "DryRun" or (spec.mode == "Manual" and spec.approved_proposal != proposal_id):
        return "ApprovalWithdrawn"
    return None


def refused_run(status: BalancePolicyStatus, actions: list[Action], seen: Seen, problem: Problem) -> str | None:
    """The spec, its groups or its Secret cannot be used (Stalled) while an execution of this process runs:
    it no longer describes that execution (another cluster, credentials no longer bound to it, a spec
    that does not parse), so the execution stops and cleans up, with the connection and credentials it
    started with (nothing reaches a server the policy names now). It is reported until it has ended.
    Returns why it is being stopped (the Stalled reason, Reconciling's), or None."""
    run, last = seen.run, seen.finished
    if last is not None:
        _record_finished(status, actions, seen, last)
    elif run is not None and not run.done:
        actions.append(StopRun(f"Stalled: {problem.reason}"))
        if run.progress is not None:
            status.progress = run.progress
        status.conditions = set_condition(
            status.conditions,
            EXECUTING,
            True,
            reason="Executing",
            message=f"stopping: the policy is Stalled ({problem.reason})",
            generation=seen.generation,
        )
        return problem.reason
    elif seen.last_finished is not None:
        status.last_run = seen.last_finished
    return None


def executing(nxt: Draft) -> bool:
    """An execution of this process is running: it stops cleanly where the spec withdrew it (paused,
    approval withdrawn, planning inputs changed; documented in docs/crds.md); other changes
    (throttle, concurrency) apply from the next execution."""
    spec, seen = nxt.spec, nxt.seen
    run = seen.run
    if run is not None and run.proposal is not None and run.proposal != nxt.status.proposal:
        # The body this reconciliation started from is older than the status that started the run
        # (kopf writes a handler's status after its lock is released): keep the run's proposal, or
        # the status written now would drop it.
        nxt.status.proposal = run.proposal
    if run is None or run.done:
        if run is None and seen.last_finished is not None:
            # This process wrote the newest run, which the body it started from may not show yet.
            nxt.status.last_run = seen.last_finished
        return False
    stop = stop_reason(spec, run.proposal_id)
    if stop is None and nxt.status.proposal is not None and seen.fingerprint != nxt.status.proposal.fingerprint:
        stop = "SpecChanged"
    if stop is not None:
        nxt.actions.append(StopRun(stop))
    report_running(nxt, run, stopping=run.stop_reason or stop)
    return True


def finished(nxt: Draft) -> bool:
    """The execution this process ran has ended: record how, then go on planning."""
    last = nxt.seen.finished
    if last is not None:
        _record_finished(nxt.status, nxt.actions, nxt.seen, last)
    return False


def _record_finished(status: BalancePolicyStatus, actions: list[Action], seen: Seen, last: LastRun) -> None:
    """How the execution this process ran ended, the same whether the spec is usable or refused: its
    LastRun and last progress, an Execution<result> event, and Executing False."""
    status.last_run = last
    if seen.progress is not None:
        status.progress = seen.progress
    kind: Literal["Normal", "Warning"] = "Normal" if last.result == "Completed" else "Warning"
    message = last.message or last.result.lower()
    actions.append(Event(kind, f"Execution{last.result}", f"proposal {last.proposal_id}: {message}"))
    status.conditions = set_condition(
        status.conditions, EXECUTING, False, reason=last.result, message=last.message, generation=seen.generation
    )


def resuming(nxt: Draft) -> bool:
    """An unfinished execution in status and none running here: the operator restarted. Resume it,
    unless it is the one this process just finished (a checkpoint older than its end)."""
    seen = nxt.seen
    if resumable(nxt.status, seen.last_finished) is None:
        return False
    if seen.resumed is None:
        return nxt.ask("resume")
    if isinstance(seen.resumed, Problem) and seen.resumed.reason == "ProposalLost":
        return nxt.stalled(Problem("ProposalLost", f"{seen.resumed.message}; the execution cannot resume"))
    if isinstance(seen.resumed, Problem):
        return nxt.stalled(seen.resumed)
    run = seen.resumed
    nxt.actions.append(
        Event("Normal", "ExecutionResumed", f"resumed proposal {run.proposal_id} from the checkpoint in status")
    )
    report_running(nxt, run, stopping=run.stop_reason)
    return True


def resumable(status: BalancePolicyStatus, last_finished: LastRun | None) -> str | None:
    """The proposal id of the unfinished execution in ``status`` this process should resume, or None."""
    if not status.execution_checkpoint or status.proposal is None:
        return None
    record = json.loads(status.execution_checkpoint)
    if ExecutionState(record.get("state", "Pending")).finished:
        return None
    proposal_id = str((record.get("context") or {}).get("proposalId", ""))
    if proposal_id != status.proposal.id:
        return None
    if last_finished is not None and last_finished.proposal_id == proposal_id:
        return None
    return proposal_id


def report_running(nxt: Draft, run: RunView, *, stopping: str | None) -> None:
    status = nxt.status
    status.state = "Executing"
    if run.progress is not None:
        newly_stuck = sorted(set(run.progress.stuck) - set(nxt.before.progress.stuck if nxt.before.progress else ()))
        if newly_stuck:
            named = (
                f"{name} ({run.stuck_reasons[name]})" if name in run.stuck_reasons else name for name in newly_stuck
            )
            message = (
                f"proposal {run.proposal_id}: {run.progress.stuck_moves} move(s) copied nothing, or waited for a "
                f"target broker missing from the metadata, for spec.execution.stuckAfterSeconds "
                f"({nxt.spec.execution.stuck_after_seconds}s): " + ", ".join(named)
            )
            nxt.actions.append(Event("Warning", "MovesStuck", message))
        before = set(nxt.before.progress.taken_over if nxt.before.progress else ())
        taken = sorted(set(run.progress.taken_over) - before)
        if taken:
            message = (
                f"proposal {run.proposal_id}: another tool reassigned {len(taken)} partition(s) this execution was "
                f"moving, to other replicas; left to it: " + ", ".join(taken)
            )
            nxt.actions.append(Event("Warning", "MovesTakenOver", message))
        status.progress = run.progress
    why = f"stopping: {stopping}" if stopping else f"executing proposal {run.proposal_id}"
    nxt.stopping = stopping
    status.conditions = set_condition(
        status.conditions, EXECUTING, True, reason="Executing", message=why, generation=status.observed_generation
    )

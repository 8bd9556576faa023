"""What one reconciliation of a BalancePolicy decides: the next status and the actions to take. Pure.

:func:`next_status` takes the spec, the status the reconciliation started from and what the
reconciler has observed so far (:class:`Seen`), and returns the next status and the actions. When
it needs one more observation (the cluster, the load, the imbalance, a proposal, an execution
started or resumed), the last action asks for it (:class:`Ask`); the reconciler makes it, adds it to
what it saw and asks again. So a reconciliation reads only what its decisions need, in the order
they need it (one whose execution is still running reads no cluster), and every decision is made
here, from values, in one place: the reconciler gathers inputs and carries out actions.

Each situation a policy can be in has its function, tried in order (:data:`SITUATIONS`), as the
Strimzi operator's computeNextStatus has one per state: refused, executing, an execution finished,
the cluster read, resuming an execution, analysing the load, proposing, pending, and deciding
whether the proposal executes.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal

from kafka_balancer.controller import summaries
from kafka_balancer.controller.approval import Doubts, decide
from kafka_balancer.controller.status import (
    EXECUTING,
    PROPOSAL_READY,
    READY,
    RECONCILING,
    STALLED,
    BalancePolicyStatus,
    ConsumerGroupStatus,
    DurabilityStatus,
    LastRun,
    ObservedCluster,
    Progress,
    ProposalStatus,
    is_true,
    set_condition,
)
from kafka_balancer.controller.triggers import Observed, Recorded, why_propose
from kafka_balancer.executor import ExecutionState
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec

# ----- what the reconciler observed -------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """Something that needs a human (the Stalled condition's reason and message)."""

    reason: str
    message: str


@dataclass(frozen=True)
class RunView:
    """An execution this process runs for the policy, as it is now."""

    proposal_id: str
    done: bool
    stop_reason: str | None = None
    progress: Progress | None = None
    proposal: ProposalStatus | None = None  # the proposal it executes, as status held it when it started
    # Why a stuck move is stuck, when it is not that it copies nothing (summaries.stuck_reasons).
    stuck_reasons: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ClusterSeen:
    """What reading the cluster found (the durability audit and consumer groups ride along)."""

    cluster: ObservedCluster
    durability: DurabilityStatus | None = None
    consumer_groups: list[ConsumerGroupStatus] | None = None

    @property
    def alive(self) -> tuple[int, ...]:
        return tuple(self.cluster.brokers)


@dataclass(frozen=True)
class NotAnalysed:
    """The first usable analysis of the load is not there yet (ProposalReady=False says why)."""

    reason: str
    message: str


@dataclass(frozen=True)
class Seen:
    """What the reconciler observed, each item once asked for (None: not observed yet)."""

    now: dt.datetime
    generation: int
    fingerprint: str = ""
    refused: Problem | None = None  # the spec, its groups or its Secret cannot be used
    run: RunView | None = None  # an execution of this process (running, or done: then ``finished`` says how)
    finished: LastRun | None = None  # the execution that just ended (recorded by this reconciliation)
    progress: Progress | None = None  # that execution's last progress
    last_finished: LastRun | None = None  # the newest execution this process finished
    cluster: ClusterSeen | Problem | None = None
    resumed: RunView | Problem | None = None
    analysis: NotAnalysed | Problem | Literal["measured", "live"] | None = None
    imbalance: float | None = None
    measured: bool = False  # the imbalance was asked for (it may still be None: not computed)
    proposal: ProposalStatus | Problem | None = None  # made by this reconciliation
    started: RunView | Problem | None = None
    # (proposal id, why) when this process found the copies people review of that proposal tampered: kept
    # here too, for a reconciliation that starts from a body older than the status that says so.
    review_tampered: tuple[str, str] | None = None


# ----- what the reconciler does ------------------------------------------------------------------------


Observation = Literal["cluster", "resume", "analysis", "imbalance", "proposal", "start"]


@dataclass(frozen=True)
class Ask:
    """One more observation the decision needs: ``what`` names it; ``model`` is the model to plan
    and measure on (``measured`` or ``live``, see :func:`_analysing`)."""

    what: Observation
    trigger: str = ""  # why a proposal is made
    model: Literal["measured", "live"] = "measured"


@dataclass(frozen=True)
class StopRun:
    """Stop the running execution cleanly (in-flight moves cancelled, throttles removed)."""

    reason: str


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event on the policy."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass(frozen=True)
class CountError:
    """The reconciliation stalled with this reason (kafka_balancer_reconcile_errors_total)."""

    reason: str


Action = Ask | StopRun | Event | CountError


# ----- the decision ------------------------------------------------------------------------------------


@dataclass
class _Next:
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
Situation = Callable[[_Next], bool]


def next_status(
    spec: BalancePolicySpec | None, status: BalancePolicyStatus, seen: Seen
) -> tuple[BalancePolicyStatus, list[Action]]:
    """The status after this reconciliation and the actions to take (the last an :class:`Ask` when
    the decision needs one more observation). ``status`` is the status it started from; ``spec`` is
    None when it could not be read (then ``seen.refused`` says why)."""
    next_ = status.model_copy(deep=True)
    next_.observed_generation = seen.generation
    if spec is None or seen.refused is not None:
        actions: list[Action] = []
        problem = seen.refused or Problem("InvalidSpec", "no spec")
        stopping = _refused_run(next_, actions, seen, problem)
        _conclude(next_, actions, stall=problem, stopping=stopping)
        return next_, actions
    nxt = _Next(spec, status, seen, next_)
    for situation in SITUATIONS:
        if situation(nxt):
            break
    if not (nxt.actions and isinstance(nxt.actions[-1], Ask)):
        _conclude(nxt.status, nxt.actions, stall=nxt.stall, stopping=nxt.stopping)
    return nxt.status, nxt.actions


def stop_reason(spec: BalancePolicySpec, proposal_id: str) -> str | None:
    """Why the spec withdraws a running execution of ``proposal_id`` (paused, approval withdrawn, DryRun),
    or None. The planning inputs changing is the other reason (SpecChanged): see _executing."""
    if spec.paused:
        return "Paused"
    if spec.mode == "DryRun" or (spec.mode == "Manual" and spec.approved_proposal != proposal_id):
        return "ApprovalWithdrawn"
    return None


def _refused_run(status: BalancePolicyStatus, actions: list[Action], seen: Seen, problem: Problem) -> str | None:
    """The spec, its groups or its Secret cannot be used (Stalled) while an execution of this process runs:
    it no longer describes that execution (another cluster, credentials no longer bound to it, a spec
    that does not parse), so the execution stops and cleans up, with the connection and credentials it
    started with (nothing reaches a server the policy names now). It is reported until it has ended.
    Returns why it is being stopped (the Stalled reason, Reconciling's), or None."""
    run, last = seen.run, seen.finished
    if last is not None:
        status.last_run = last
        status.progress = seen.progress or status.progress
        kind: Literal["Normal", "Warning"] = "Normal" if last.result == "Completed" else "Warning"
        message = f"proposal {last.proposal_id}: {last.message or last.result.lower()}"
        actions.append(Event(kind, f"Execution{last.result}", message))
        status.conditions = set_condition(
            status.conditions, EXECUTING, False, reason=last.result, message=last.message, generation=seen.generation
        )
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


def _executing(nxt: _Next) -> bool:
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
    _report_running(nxt, run, stopping=run.stop_reason or stop)
    return True


def _finished(nxt: _Next) -> bool:
    """The execution this process ran has ended: record how, then go on planning."""
    seen = nxt.seen
    last = seen.finished
    if last is None:
        return False
    status = nxt.status
    status.last_run = last
    if seen.progress is not None:
        status.progress = seen.progress
    kind: Literal["Normal", "Warning"] = "Normal" if last.result == "Completed" else "Warning"
    message = last.message or last.result.lower()
    nxt.actions.append(Event(kind, f"Execution{last.result}", f"proposal {last.proposal_id}: {message}"))
    status.conditions = set_condition(
        status.conditions, EXECUTING, False, reason=last.result, message=last.message, generation=seen.generation
    )
    return False


def _cluster(nxt: _Next) -> bool:
    """Read the cluster: its id, live brokers, durability audit and consumer groups."""
    seen = nxt.seen
    if seen.cluster is None:
        return nxt.ask("cluster")
    if isinstance(seen.cluster, Problem):
        return nxt.stalled(seen.cluster)
    status = nxt.status
    status.durability, status.consumer_groups = seen.cluster.durability, seen.cluster.consumer_groups
    status.observed_cluster = seen.cluster.cluster
    return False


def _resuming(nxt: _Next) -> bool:
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
    _report_running(nxt, run, stopping=run.stop_reason)
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


def _analysing(nxt: _Next) -> bool:
    """The model to plan on: the live placement with the measured load (policies with a sample
    store). While the first usable analysis is pending the policy is Analysing; once a proposal
    exists, a later analysis hiccup does not hold back its approval: the live model stands in."""
    seen = nxt.seen
    if seen.analysis is None:
        return nxt.ask("analysis")
    if isinstance(seen.analysis, Problem):
        return nxt.stalled(seen.analysis)
    if isinstance(seen.analysis, NotAnalysed):
        if nxt.status.proposal is None:
            nxt.status.state = "Analysing"
            nxt.status.conditions = set_condition(
                nxt.status.conditions,
                PROPOSAL_READY,
                False,
                reason=seen.analysis.reason,
                message=seen.analysis.message,
                generation=seen.generation,
            )
            return True
        nxt.model = "live"
    else:
        nxt.model = seen.analysis
    if not seen.measured:
        return nxt.ask("imbalance", model=nxt.model)
    nxt.status.imbalance = seen.imbalance
    return False


def _proposing(nxt: _Next) -> bool:
    """A new proposal, only for a reason (first one, planning inputs changed, schedule, imbalance,
    brokers changed): otherwise the id a person approved would keep changing under them."""
    spec, before, seen = nxt.spec, nxt.before, nxt.seen
    status = nxt.status
    proposal = status.proposal
    executed = summaries.executed_ids(status)
    pending = proposal is not None and proposal.moves + proposal.leader_changes > 0 and proposal.id not in executed
    assert isinstance(seen.cluster, ClusterSeen)  # _cluster ran before
    previous = tuple(before.observed_cluster.brokers) if before.observed_cluster else None
    reason = why_propose(
        spec,
        Observed(seen.now, seen.fingerprint, seen.cluster.alive, status.imbalance),
        Recorded(
            fingerprint=proposal.fingerprint if proposal else None,
            brokers=previous,
            last_schedule=summaries.parse_time(status.last_schedule_time),
            executing=False,
            pending=pending,
        ),
    )
    if reason is None:
        return False
    if reason == "Schedule":
        status.last_schedule_time = seen.now.replace(microsecond=0).isoformat().replace("+00:00", "Z")
    if seen.proposal is None:
        return nxt.ask("proposal", trigger=reason, model=nxt.model)
    if isinstance(seen.proposal, Problem):
        return nxt.stalled(seen.proposal)
    status.proposal = seen.proposal
    nxt.actions.append(Event("Normal", "ProposalCreated", summaries.describe(seen.proposal)))
    return False


def _pending(nxt: _Next) -> bool:
    """No proposal yet."""
    if nxt.status.proposal is not None:
        return False
    nxt.status.state = "Pending"
    return True


def _deciding(nxt: _Next) -> bool:
    """Whether the proposal executes now (approval.decide), and the state when it does not."""
    spec, seen = nxt.spec, nxt.seen
    status = nxt.status
    proposal = status.proposal
    assert proposal is not None  # _pending ran before
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
            return _replace_lost(nxt, seen.started)
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
        _report_running(nxt, seen.started, stopping=seen.started.stop_reason)
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


def _replace_lost(nxt: _Next, lost: Problem) -> bool:
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


SITUATIONS: Final[tuple[Situation, ...]] = (
    _executing,
    _finished,
    _cluster,
    _resuming,
    _analysing,
    _proposing,
    _pending,
    _deciding,
)


def _report_running(nxt: _Next, run: RunView, *, stopping: str | None) -> None:
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


def _conclude(
    status: BalancePolicyStatus, actions: list[Action], *, stall: Problem | None, stopping: str | None
) -> None:
    """The summary conditions, in the polarity kstatus reads (Flux's default health check; docs/gitops.md).

    Stalled: a human must act (kstatus: Failed). Ready: the spec is accepted and reconciled, also during
    a long execution and while samples are collected, so `wait: true` never waits on a rebalance (a bad
    spec is not Ready). Reconciling: only while an execution the spec withdrew (paused, approval
    withdrawn, planning inputs changed) is being stopped: the latest spec is not in effect until its
    in-flight moves are cancelled and its throttles removed, which takes one reconciliation or two.
    """
    generation = status.observed_generation
    if stall is None:
        status.conditions = set_condition(
            status.conditions, STALLED, False, reason="Reconciled", message="", generation=generation
        )
        status.conditions = set_condition(
            status.conditions, READY, True, reason="Reconciled", message="spec accepted", generation=generation
        )
    else:
        actions.append(CountError(stall.reason))
        status.state = "Stalled"
        status.conditions = set_condition(
            status.conditions, STALLED, True, reason=stall.reason, message=stall.message, generation=generation
        )
        running = is_true(status.conditions, EXECUTING)
        status.conditions = set_condition(
            status.conditions,
            READY,
            running,
            reason="Executing" if running else stall.reason,
            message=stall.message,
            generation=generation,
        )
    status.conditions = set_condition(
        status.conditions,
        RECONCILING,
        stopping is not None,
        reason="Reconciled" if stopping is None else stopping,
        message=""
        if stopping is None
        else "stopping the execution: cancelling its moves in flight, removing throttles",
        generation=generation,
    )

"""The decision: the situations tried in order, then the summary conditions (Stalled, Ready,
Reconciling) the decision ends with."""

from __future__ import annotations

from typing import Final

from kafka_balancer.controller.decision.actions import Action, Ask, CountError
from kafka_balancer.controller.decision.deciding import deciding
from kafka_balancer.controller.decision.draft import Draft, Situation
from kafka_balancer.controller.decision.planning import analysing, pending, proposing, reading_cluster
from kafka_balancer.controller.decision.running import executing, finished, refused_run, resuming
from kafka_balancer.controller.decision.seen import Problem, Seen
from kafka_balancer.controller.status import (
    EXECUTING,
    READY,
    RECONCILING,
    STALLED,
    BalancePolicyStatus,
    is_true,
    set_condition,
)
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec

SITUATIONS: Final[tuple[Situation, ...]] = (
    executing,
    finished,
    reading_cluster,
    resuming,
    analysing,
    proposing,
    pending,
    deciding,
)


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
        stopping = refused_run(next_, actions, seen, problem)
        conclude(next_, actions, stall=problem, stopping=stopping)
        return next_, actions
    nxt = Draft(spec, status, seen, next_)
    for situation in SITUATIONS:
        if situation(nxt):
            break
    if not (nxt.actions and isinstance(nxt.actions[-1], Ask)):
        conclude(nxt.status, nxt.actions, stall=nxt.stall, stopping=nxt.stopping)
    return nxt.status, nxt.actions


def conclude(
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

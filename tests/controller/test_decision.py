"""decision.next_status, the reconciler's decisions as a pure function: each situation from values,
with no Kubernetes, Kafka or planner around it, and the observations it asks for in order."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from kafka_balancer.controller import summaries
from kafka_balancer.controller.decision.actions import Ask, CountError, Event, StopRun
from kafka_balancer.controller.decision.next_status import next_status
from kafka_balancer.controller.decision.seen import ClusterSeen, NotAnalysed, Problem, RunView, Seen
from kafka_balancer.controller.status import (
    EXECUTING,
    PROPOSAL_READY,
    READY,
    RECONCILING,
    STALLED,
    BalancePolicyStatus,
    LastRun,
    ObservedCluster,
    ProposalStatus,
    condition,
)
from kafka_balancer.controller.status import Progress as StatusProgress
from kafka_balancer.executor import ExecutionState, Progress
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec
from kafka_balancer.model.policy.parsing import parse_balance_policy_spec

NOW = dt.datetime(2026, 11, 16, 3, 0, tzinfo=dt.UTC)
CLUSTER = ClusterSeen(ObservedCluster(cluster_id="c1", brokers=[0, 1, 2]))


def _spec(**fields: Any) -> BalancePolicySpec:
    return parse_balance_policy_spec({"cluster": {"bootstrapServers": "k:9092"}, **fields})


def _proposal(pid: str = "0123456789abcdef", moves: int = 3, fingerprint: str = "f1") -> ProposalStatus:
    return ProposalStatus(
        id=pid,
        operation="rebalance",
        moves=moves,
        bytes_to_move=100 * moves,
        leader_changes=0,
        balancedness_before=50.0,
        balancedness_after=100.0,
        config_map="p-proposal",
        created_at="2026-11-16T02:00:00Z",
        fingerprint=fingerprint,
    )


def _seen(**fields: Any) -> Seen:
    return Seen(NOW, 2, "f1", **fields)


def _state(status: BalancePolicyStatus, type_: str) -> tuple[str, str] | None:
    found = condition(status.conditions, type_)
    return None if found is None else (found.status, found.reason)


def test_a_running_execution_is_stopped_where_the_spec_withdrew_it_and_no_cluster_is_read() -> None:
    before = BalancePolicyStatus(proposal=_proposal())
    run = RunView("0123456789abcdef", done=False)
    status, actions = next_status(_spec(mode="Auto", paused=True), before, _seen(run=run))
    assert actions == [StopRun("Paused")]
    assert status.state == "Executing"
    found = condition(status.conditions, EXECUTING)
    assert found is not None
    assert found.message == "stopping: Paused"
    assert _state(status, READY) == ("True", "Reconciled")
    assert _state(status, RECONCILING) == ("True", "Paused")  # the paused spec is not in effect yet
    # Inputs unchanged, it runs on: nothing to do, and a long execution is not Reconciling (kstatus: Current).
    status, actions = next_status(_spec(mode="Auto"), before, _seen(run=run))
    assert actions == []
    assert _state(status, READY) == ("True", "Reconciled")
    assert _state(status, RECONCILING) == ("False", "Reconciled")


def test_a_reconciliation_from_a_body_older_than_the_run_keeps_the_runs_proposal() -> None:
    # kopf writes the status that started the run after the handler: the next reconciliation may
    # start from the body before it, with no proposal. The status it writes must not drop it.
    stale = BalancePolicyStatus()
    run = RunView("0123456789abcdef", done=False, proposal=_proposal())
    status, _ = next_status(_spec(mode="Auto", paused=True), stale, _seen(run=run))
    assert status.proposal == _proposal()
    assert status.state == "Executing"
    # Done (stopped when paused): recorded, and the proposal stays the one it executed.
    ended = LastRun(proposal_id="0123456789abcdef", result="Stopped", message="Paused")
    done = RunView("0123456789abcdef", done=True, proposal=_proposal())
    seen = _seen(run=done, finished=ended, last_finished=ended, cluster=CLUSTER, analysis="live", measured=True)
    status, _ = next_status(_spec(mode="Auto", paused=True), stale, seen)
    assert status.proposal == _proposal()
    assert status.last_run == ended
    assert status.state == "Paused"


def test_the_first_reconciliation_asks_for_the_cluster_the_imbalance_then_a_proposal() -> None:
    spec, before = _spec(mode="Manual"), BalancePolicyStatus()
    seen = _seen()
    _, actions = next_status(spec, before, seen)
    assert actions == [Ask("cluster")]
    seen = _seen(cluster=CLUSTER, analysis="live")
    _, actions = next_status(spec, before, seen)
    assert actions == [Ask("imbalance", model="live")]
    seen = _seen(cluster=CLUSTER, analysis="live", measured=True, imbalance=1.4)
    _, actions = next_status(spec, before, seen)
    assert actions == [Ask("proposal", trigger="FirstProposal", model="live")]
    made = _proposal()
    status, actions = next_status(spec, before, _seen(cluster=CLUSTER, analysis="live", measured=True, proposal=made))
    assert status.proposal == made
    assert status.state == "ProposalReady"
    assert status.observed_cluster == CLUSTER.cluster
    assert _state(status, PROPOSAL_READY) == ("True", "AwaitingApproval")
    assert _state(status, READY) == ("True", "Reconciled")
    assert [a.reason for a in actions if isinstance(a, Event)] == ["ProposalCreated"]


def test_an_approved_proposal_asks_for_an_execution_and_reports_it_started() -> None:
    spec = _spec(mode="Auto")
    before = BalancePolicyStatus(proposal=_proposal(), observed_cluster=CLUSTER.cluster)
    seen = _seen(cluster=CLUSTER, analysis="measured", measured=True)
    _, actions = next_status(spec, before, seen)
    assert actions == [Ask("start")]
    run = RunView("0123456789abcdef", done=False)
    status, actions = next_status(spec, before, _seen(cluster=CLUSTER, analysis="measured", measured=True, started=run))
    assert status.state == "Executing"
    assert [a.reason for a in actions if isinstance(a, Event)] == ["ExecutionStarted"]


def test_what_needs_a_human_stalls_and_keeps_what_was_decided_before() -> None:
    before = BalancePolicyStatus(proposal=_proposal())
    spec = _spec(mode="Manual", approvedProposal="ffffffffffffffff")
    seen = _seen(cluster=CLUSTER, analysis="live", measured=True)
    status, actions = next_status(spec, before, seen)
    assert status.state == "Stalled"
    assert _state(status, STALLED) == ("True", "StaleApproval")
    assert _state(status, READY) == ("False", "StaleApproval")
    assert _state(status, PROPOSAL_READY) == ("True", "StaleApproval")  # decided before the stall
    assert CountError("StaleApproval") in actions
    unreachable = Problem("ClusterUnreachable", "spec.cluster.bootstrapServers k:9092: timed out")
    status, _ = next_status(spec, before, _seen(cluster=unreachable))
    assert _state(status, STALLED) == ("True", "ClusterUnreachable")
    status, actions = next_status(None, before, _seen(refused=Problem("UnknownResourceGroup", "no group 'a'")))
    assert status.state == "Stalled"
    assert actions == [CountError("UnknownResourceGroup")]


def test_the_first_analysis_pending_is_analysing_but_an_existing_proposal_plans_on_the_live_model() -> None:
    spec = _spec()
    waiting = NotAnalysed("SparkApplicationRunning", "analysis SparkApplication main-1 is Running")
    status, actions = next_status(spec, BalancePolicyStatus(), _seen(cluster=CLUSTER, analysis=waiting))
    assert status.state == "Analysing"
    assert actions == []
    assert _state(status, PROPOSAL_READY) == ("False", "SparkApplicationRunning")
    assert _state(status, READY) == ("True", "Reconciled")
    assert _state(status, RECONCILING) == ("False", "Reconciled")  # samples take hours: kstatus reads Current
    before = BalancePolicyStatus(proposal=_proposal(), observed_cluster=CLUSTER.cluster)
    _, actions = next_status(spec, before, _seen(cluster=CLUSTER, analysis=waiting))
    assert actions == [Ask("imbalance", model="live")]


def test_a_finished_execution_is_recorded_and_planning_goes_on() -> None:
    last = LastRun(proposal_id="0123456789abcdef", result="Completed", message="")
    before = BalancePolicyStatus(proposal=_proposal())
    status, actions = next_status(_spec(mode="Auto"), before, _seen(finished=last, last_finished=last))
    assert status.last_run == last
    assert _state(status, EXECUTING) == ("False", "Completed")
    assert actions == [Event("Normal", "ExecutionCompleted", "proposal 0123456789abcdef: completed"), Ask("cluster")]
    # Once the cluster is read: executed, so it is Completed and nothing runs twice.
    seen = _seen(finished=last, last_finished=last, cluster=CLUSTER, analysis="live", measured=True)
    status, actions = next_status(_spec(mode="Auto"), before, seen)
    assert status.state == "Completed"
    assert not any(isinstance(a, Ask) for a in actions)


def test_an_execution_that_ends_while_the_spec_is_refused_is_recorded_as_when_it_is_usable() -> None:
    # The Stalled spec changes what follows the run's end (no planning), not how that end is reported:
    # the same LastRun, progress, event and Executing condition.
    last = LastRun(proposal_id="0123456789abcdef", result="Stopped", message="Stalled: UnknownResourceGroup")
    progress = StatusProgress(bytes_moved=100, bytes_total=300, partitions_done=1, partitions_total=3, percent=33.3)
    before = BalancePolicyStatus(proposal=_proposal())
    seen = _seen(finished=last, last_finished=last, progress=progress)
    refused = Problem("UnknownResourceGroup", "no group 'a'")
    usable, usable_actions = next_status(_spec(mode="Auto"), before, seen)
    stalled, stalled_actions = next_status(None, before, _seen(finished=last, progress=progress, refused=refused))
    ended = Event("Warning", "ExecutionStopped", "proposal 0123456789abcdef: Stalled: UnknownResourceGroup")
    assert usable_actions[0] == stalled_actions[0] == ended
    assert usable.last_run == stalled.last_run == last
    assert usable.progress == stalled.progress == progress
    assert condition(usable.conditions, EXECUTING) == condition(stalled.conditions, EXECUTING)
    assert _state(stalled, EXECUTING) == ("False", "Stopped")
    assert stalled.state == "Stalled"


def test_an_unfinished_execution_in_status_is_resumed_unless_this_process_finished_it() -> None:
    record = {"state": "MovingReplicas", "context": {"proposalId": "0123456789abcdef"}}
    before = BalancePolicyStatus(proposal=_proposal(), execution_checkpoint=json.dumps(record))
    _, actions = next_status(_spec(mode="Auto"), before, _seen(cluster=CLUSTER))
    assert actions == [Ask("resume")]
    run = RunView("0123456789abcdef", done=False)
    status, actions = next_status(_spec(mode="Auto"), before, _seen(cluster=CLUSTER, resumed=run))
    assert status.state == "Executing"
    assert [a.reason for a in actions if isinstance(a, Event)] == ["ExecutionResumed"]
    # A body older than the status this process wrote when the run ended: not resumed again.
    ended = LastRun(proposal_id="0123456789abcdef", result="Completed")
    status, actions = next_status(_spec(mode="Auto"), before, _seen(cluster=CLUSTER, last_finished=ended))
    assert actions == [Ask("analysis")]
    assert status.last_run == ended


def test_a_move_stuck_on_a_missing_target_broker_is_announced_with_the_broker_and_how_long() -> None:
    # issue 55: one move copies nothing, another waits for broker 9, which the metadata has not listed for
    # stuckAfterSeconds; the MovesStuck event names both, the waiting one with the executor's reason.
    missing = "target broker 9 has been missing from the metadata for 1830 s (stuckAfterSeconds 1800)"
    progress = Progress(
        state=ExecutionState.MOVING_REPLICAS,
        partitions_total=3,
        partitions_done=0,
        partitions_in_progress=1,
        partitions_dead=0,
        partitions_aborted=0,
        bytes_total=300.0,
        bytes_moved=0.0,
        leaders_total=0,
        leaders_done=0,
        rate_bytes_per_sec=0.0,
        eta_seconds=None,
        elapsed_seconds=1900.0,
        stuck=("orders-0", "orders-1"),
        blocked={"orders-1": missing, "orders-2": "ISR size 2 is at or below min.insync.replicas=2"},
    )
    run = RunView(
        "0123456789abcdef",
        done=False,
        progress=summaries.progress(progress),
        stuck_reasons=summaries.stuck_reasons(progress),
    )
    before = BalancePolicyStatus(proposal=_proposal())
    status, actions = next_status(_spec(mode="Auto"), before, _seen(run=run))
    assert status.progress is not None
    assert status.progress.stuck_moves == 2
    assert status.progress.stuck == ["orders-0", "orders-1"]
    stuck = [a for a in actions if isinstance(a, Event) and a.reason == "MovesStuck"]
    assert [(e.type, e.message) for e in stuck] == [
        (
            "Warning",
            "proposal 0123456789abcdef: 2 move(s) copied nothing, or waited for a target broker missing from the "
            f"metadata, for spec.execution.stuckAfterSeconds (1800s): orders-0, orders-1 ({missing})",
        )
    ]

"""The executions this process runs, one a policy: started or resumed when the decision asks, recorded
when they end, and remembered for reconciliations that start from an older body.

kopf writes the status a handler returns after the handler (and its lock) is done, so the next
reconciliation can start from a body older than that status. What this process knows of its
executions (the last one finished, the proposal the running one executes) is therefore kept here and
given to the decision (decision.seen.Seen) rather than read back from the body. Blocking (Kubernetes
client, Kafka port).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
from collections.abc import Callable
from typing import Any, Literal, cast

from kafka_balancer.controller import summaries
from kafka_balancer.controller.approval import approver
from kafka_balancer.controller.decision.running import stop_reason
from kafka_balancer.controller.decision.seen import RunView, Seen
from kafka_balancer.controller.gathering import Gathered, connect
from kafka_balancer.controller.kubeapi import KubeApi
from kafka_balancer.controller.proposal_store import ProposalLost, ProposalStore, ProposalTampered
from kafka_balancer.controller.services import Connector, DetachablePort, Run, Runs, StatusExecutionStore, make_executor
from kafka_balancer.controller.status import BalancePolicyStatus, LastRun, ProposalStatus, now_iso
from kafka_balancer.controller.validation import Stall
from kafka_balancer.executor import ExecutionState
from kafka_balancer.executor import Progress as ExecProgress
from kafka_balancer.kafka.port import KafkaPort
from kafka_balancer.metrics import Metrics, PolicyKey
from kafka_balancer.model.proposal import Proposal


class Executions:
    """Start, resume and finish the executions of this process, and remember them (see above)."""

    def __init__(  # noqa: PLR0913 - its collaborators, by name, as the Reconciler wires them
        self,
        *,
        kube: KubeApi,
        connector: Connector,
        runs: Runs,
        metrics: Metrics,
        proposals: ProposalStore,
        poll_seconds: float | None,
        may_act: Callable[[], bool],
    ) -> None:
        self.kube = kube
        self.connector = connector
        self.runs = runs
        self.metrics = metrics
        self.proposals = proposals
        self.poll_seconds = poll_seconds  # executor poll interval; None = the executor's default
        self.may_act = may_act
        self._numbers = itertools.count(1)
        # The last run this process finished, per policy: without it a reconciliation from an older body
        # saw the run unfinished and ran it once more.
        self._finished: dict[tuple[str, str], LastRun] = {}
        # The proposal each running execution of this process executes: a reconciliation from an older
        # body must not write a status without it.
        self._executing: dict[tuple[str, str], ProposalStatus] = {}

    def seen(self, key: tuple[str, str], seen: Seen, before: BalancePolicyStatus) -> Seen:
        """The execution of this process for the policy: running, or just finished (recorded now)."""
        run = self.runs.get(key)
        view = None if run is None else _view(run, self._executing.get(key))
        if run is not None and run.done:
            finished, progress = self._finish(key, run, before)
            return dataclasses.replace(seen, run=view, finished=finished, progress=progress, last_finished=finished)
        return dataclasses.replace(seen, run=view, last_finished=self._finished.get(key))

    def resume(self, gathered: Gathered, status: BalancePolicyStatus) -> RunView:
        """Resume the unfinished execution in status (the operator restarted)."""
        assert status.proposal is not None  # decision.running.resumable said so
        assert status.execution_checkpoint
        record = json.loads(status.execution_checkpoint)
        return self.start(gathered, status.proposal, record)

    def start(self, gathered: Gathered, reviewed: ProposalStatus, record: dict[str, Any] | None = None) -> RunView:
        """Execute the proposal in status, as stored when it was proposed (from ``record``: resumed; else
        from the checkpoint the last run left, whose throttles it adopts: executor.start)."""
        proposal = self._stored(gathered, reviewed)
        proposal_id = proposal.id
        namespace, name = gathered.key
        spec = gathered.spec
        if reviewed.approved_by is None:
            who = approver(gathered.body) if spec.mode == "Manual" else "mode Auto"
            reviewed = reviewed.model_copy(update={"approved_by": who})
        metric_key = gathered.metric_key
        if record is None:
            record = inherited(gathered.body, proposal_id)
        # Its own connection: the execution outlives this reconciliation.
        real_port = connect(self.connector, spec, gathered.credentials)
        store = StatusExecutionStore(
            self.kube,
            namespace,
            name,
            record,
            on_save=lambda saved: self.metrics.set_throttled_brokers(metric_key, summaries.throttled_brokers(saved)),
            may_act=self.may_act,
        )
        if stop_reason(spec, proposal_id) is not None:
            store.request_stop()  # resumed while withdrawn (paused meanwhile): it only winds down
        port = cast(KafkaPort, DetachablePort(real_port, store.attached))
        execution = f"{proposal_id}/{next(self._numbers)}"  # the metrics count each run from zero

        def on_progress(progress: ExecProgress) -> None:
            run.progress = progress
            self.metrics.set_execution(metric_key, summaries.figures(progress), execution=execution)

        context = {
            "proposalId": proposal_id,
            "policy": f"{namespace}/{name}",
            "uid": str(gathered.body["metadata"].get("uid")),
        }
        executor = make_executor(
            port, proposal, store, spec, on_progress=on_progress, context=context, poll_seconds=self.poll_seconds
        )
        # A resumed execution keeps the start of the run it continues (lastRun.startedAt), not the restart's.
        started = float((record or {}).get("startedAt") or 0.0)
        started_at = dt.datetime.fromtimestamp(started, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if started else now_iso()
        run = Run(proposal_id, gathered.generation, executor, store, port, started_at=started_at)
        self.metrics.set_throttle(metric_key, spec.execution.throttle_bytes_per_sec)
        self.runs.start(gathered.key, run)
        self._executing[gathered.key] = reviewed
        return _view(run, reviewed)

    def deleted(self, key: tuple[str, str]) -> None:
        """The policy is being deleted: forget its executions, and stop the running one cleanly."""
        self._finished.pop(key, None)
        self._executing.pop(key, None)
        run = self.runs.get(key)
        if run is not None:
            run.stop("PolicyDeleted")
            if run.future is not None:
                run.future.result(timeout=120)
            self.runs.pop(key)

    def _stored(self, gathered: Gathered, proposal: ProposalStatus) -> Proposal:
        """The reviewed proposal, exactly as stored when it was proposed (never recomputed)."""
        try:
            return self.proposals.load(gathered.key[0], proposal.config_map, proposal.id)
        except ProposalTampered as err:
            raise Stall("ProposalTampered", f"status.proposal.configMap: {err}") from None
        except ProposalLost as err:
            raise Stall("ProposalLost", f"status.proposal.configMap: {err}") from None

    def _finish(self, key: tuple[str, str], run: Run, before: BalancePolicyStatus) -> tuple[LastRun, Any]:
        """The run ended: forget it, and how it ended (its LastRun and last progress)."""
        self.runs.pop(key)
        self._executing.pop(key, None)
        assert run.future is not None
        try:
            result = run.future.result()
        except Exception as err:
            outcome: Literal["Completed", "Stopped", "Failed"] = "Failed"
            message, progress = str(err), run.progress
        else:
            progress = result.progress
            outcome = "Failed"
            if result.state == ExecutionState.COMPLETED:
                outcome = "Completed"
            elif result.state == ExecutionState.STOPPED:
                outcome = "Stopped"
            message = run.stop_reason or result.reason
        last = LastRun(
            proposal_id=run.proposal_id,
            result=outcome,
            started_at=run.started_at,
            finished_at=now_iso(),
            bytes_moved=int(progress.bytes_moved) if progress else 0,
            partitions_moved=int(progress.partitions_done) if progress else 0,
            message=message,
        )
        self._finished[key] = last
        cluster = before.observed_cluster.cluster_id if before.observed_cluster else ""
        self.metrics.execution_finished(PolicyKey(key[1], key[0], cluster or ""), outcome)
        return last, summaries.progress(progress) if progress is not None else None


def inherited(body: dict[str, Any], proposal_id: str) -> dict[str, Any] | None:
    """The checkpoint the last run left in status, for a new run of ``proposal_id``: it continues it when
    unfinished and of the same proposal, and adopts what it could not remove (throttles) otherwise. An
    unfinished one of another proposal (its operator stopped, the proposal changed since) is taken as
    abandoned: its moves in flight end on their own in Kafka, its throttles are the new run's to remove."""
    text = (body.get("status") or {}).get("executionCheckpoint")
    if not text:
        return None
    record: dict[str, Any] = json.loads(text)
    state = ExecutionState(str(record.get("state", ExecutionState.PENDING.value)))
    if not state.finished and (record.get("context") or {}).get("proposalId") != proposal_id:
        record = {**record, "state": ExecutionState.FAILED.value, "inFlight": []}
        record["reason"] = f"abandoned unfinished; proposal {proposal_id} replaces it"
    return record


def _view(run: Run, proposal: ProposalStatus | None) -> RunView:
    if run.progress is None:
        return RunView(run.proposal_id, run.done, run.stop_reason, None, proposal)
    progress = summaries.progress(run.progress)
    return RunView(
        run.proposal_id, run.done, run.stop_reason, progress, proposal, summaries.stuck_reasons(run.progress)
    )

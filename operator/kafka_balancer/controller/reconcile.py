"""One reconciliation of a BalancePolicy: read the spec, the groups, the cluster; decide; act; report.

Level-based: every call starts from the object as it is now and the cluster as it is now, and
returns the whole status. Blocking (Kubernetes client, Kafka port, planner): the kopf handlers call
it in a worker thread. Decisions are pure functions elsewhere (approval.decide, triggers.why_propose);
this module gathers their inputs and carries out their answers.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from kafka_balancer.controller import summaries
from kafka_balancer.controller.analysis import Analyses, EngineUnavailable, NotReady, with_measured_load
from kafka_balancer.controller.approval import decide
from kafka_balancer.controller.kubeapi import Credentials, KubeApi, owner_reference
from kafka_balancer.controller.observations import export, observe
from kafka_balancer.controller.proposal_store import (
    DEFAULT_MAX_BYTES,
    ConfigMapNotOurs,
    Owner,
    ProposalLost,
    ProposalStore,
    ProposalTooLarge,
)
from kafka_balancer.controller.services import (
    Connector,
    DetachablePort,
    Groups,
    Planner,
    Run,
    Runs,
    StatusExecutionStore,
    make_executor,
)
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
    is_true,
    now_iso,
    set_condition,
)
from kafka_balancer.controller.triggers import Observed, Recorded, planning_fingerprint, why_propose
from kafka_balancer.controller.validation import (
    Stall,
    parse_spec,
    read_credentials,
    read_groups,
    refuse_duplicate,
)
from kafka_balancer.executor import ExecutionState
from kafka_balancer.executor import Progress as ExecProgress
from kafka_balancer.kafka.port import KafkaError, KafkaPort
from kafka_balancer.metrics import Metrics, PolicyKey
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.policy import (
    BalancePolicySpec,
    PolicyError,
    check_groups,
    group_brokers,
)
from kafka_balancer.model.proposal import Proposal

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    status: BalancePolicyStatus
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)


@dataclass
class _Ctx:
    """What one reconciliation knows about its policy, passed between the steps."""

    key: tuple[str, str]  # namespace, name
    generation: int
    body: dict[str, Any]
    spec: BalancePolicySpec
    credentials: Credentials | None
    events: list[tuple[str, str, str]]
    metric_key: PolicyKey
    reconciling: str = ""  # why the policy is still in progress (e.g. samples being collected)
    reconciling_reason: str = ""  # the Reconciling condition's reason then (CollectingSamples, SparkApplicationRunning)


@dataclass(frozen=True)
class ReconcilerOptions:
    execution_poll_seconds: float | None = None  # executor poll interval; None = the executor's default
    proposal_max_bytes: int = DEFAULT_MAX_BYTES  # the largest proposal (JSON) stored in ConfigMaps


class Reconciler:
    def __init__(
        self,
        *,
        kube: KubeApi,
        connector: Connector,
        planner: Planner,
        runs: Runs,
        metrics: Metrics,
        options: ReconcilerOptions | None = None,
        analyses: Analyses | None = None,
    ) -> None:
        self.analyses = analyses
        self.kube = kube
        self.connector = connector
        self.planner = planner
        self.runs = runs
        self.metrics = metrics
        self.options = options or ReconcilerOptions()
        self.proposals = ProposalStore(kube, self.options.proposal_max_bytes)
        self._execution_numbers = itertools.count(1)
        # The last run this process finished, per policy. kopf writes the status a handler returns
        # after the handler (and its lock) is done, so the next reconciliation can start from a body
        # older than that status: without this it saw the run unfinished and ran it once more.
        self._finished: dict[tuple[str, str], LastRun] = {}

    # ----- entry points -------------------------------------------------------------------
    def reconcile(self, body: dict[str, Any]) -> Outcome:
        meta = body.get("metadata", {})
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        generation = int(meta.get("generation") or 1)
        before = BalancePolicyStatus.model_validate(body.get("status") or {})
        status = before.model_copy(deep=True)
        status.observed_generation = generation
        events: list[tuple[str, str, str]] = []
        self.metrics.reconciled(name, namespace)
        reconciling, reconciling_reason = "", ""
        try:
            reconciling_reason, reconciling = self._reconcile(body, status, events)
            status.conditions = set_condition(
                status.conditions, STALLED, False, reason="Reconciled", message="", generation=generation
            )
            status.conditions = set_condition(
                status.conditions, READY, True, reason="Reconciled", message="spec accepted", generation=generation
            )
        except Stall as stall:
            self.metrics.error(name, namespace, stall.reason)
            status.state = "Stalled"
            status.conditions = set_condition(
                status.conditions, STALLED, True, reason=stall.reason, message=stall.message, generation=generation
            )
            # An execution that runs on (spec fixed later) keeps the policy Ready; a bad spec does not.
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
            status.state in {"Analysing", "Executing"},
            reason=(reconciling_reason or "CollectingSamples") if status.state == "Analysing" else status.state,
            message=reconciling,
            generation=generation,
        )
        self.metrics.set_state(name, namespace, status.state)
        return Outcome(status, events + summaries.transitions(before, status))

    def deleted(self, body: dict[str, Any]) -> None:
        """The policy is being deleted: stop its execution cleanly and forget its metrics."""
        meta = body.get("metadata", {})
        key = (str(meta.get("namespace")), str(meta.get("name")))
        self._finished.pop(key, None)
        if self.analyses is not None:
            self.analyses.stop(key)
        run = self.runs.get(key)
        if run is not None:
            run.stop("PolicyDeleted")
            if run.future is not None:
                run.future.result(timeout=120)
            self.runs.pop(key)
        cluster = ((body.get("status") or {}).get("observedCluster") or {}).get("clusterId")
        self.metrics.forget(key[1], key[0], [c for c in (cluster,) if c])

    # ----- the steps ----------------------------------------------------------------------
    def _reconcile(
        self, body: dict[str, Any], status: BalancePolicyStatus, events: list[tuple[str, str, str]]
    ) -> tuple[str, str]:
        """Carry out one reconciliation into ``status``; returns the Reconciling condition's (reason, message)."""
        meta = body["metadata"]
        namespace, name = str(meta["namespace"]), str(meta["name"])
        generation = int(meta.get("generation") or 1)
        key = (namespace, name)
        spec = parse_spec(body)
        groups = read_groups(self.kube, namespace, spec)
        refuse_duplicate(self.kube, body, spec)
        credentials = read_credentials(self.kube, namespace, spec)
        ctx = _Ctx(key, generation, body, spec, credentials, events, PolicyKey(name, namespace, ""))

        group_specs = {g: s.model_dump(mode="json") for g, s in groups}
        fingerprint = planning_fingerprint(spec, group_specs)
        run = self.runs.get(key)
        finished = self._finished.get(key)
        if run is None and finished is not None:
            status.last_run = finished  # this process wrote the newest one (see __init__)
        if run is not None and not run.done:
            # Documented in docs/crds.md: these changes stop the run cleanly (in-flight moves cancelled,
            # throttles removed); others (throttle, concurrency) apply from the next execution.
            withdrawn = spec.mode == "DryRun" or (spec.mode == "Manual" and spec.approved_proposal != run.proposal_id)
            if spec.paused:
                run.stop("Paused")
            elif withdrawn:
                run.stop("ApprovalWithdrawn")
            elif status.proposal is not None and fingerprint != status.proposal.fingerprint:
                run.stop("SpecChanged")
            self._report_running(run, status, spec)
            return "", ""
        if run is not None:
            self._finish(key, run, status, events)

        port = self._connect(spec, credentials)
        try:
            model = port.read_cluster(with_sizes=True)
            description = port.describe_cluster()
            seen = observe(port, model, spec)
        except KafkaError as err:
            raise Stall(
                "ClusterUnreachable", f"spec.cluster.bootstrapServers {spec.cluster.bootstrap_servers}: {err}"
            ) from None
        finally:
            port.close()
        cluster_id = description.cluster_id or spec.cluster.bootstrap_servers
        refuse_duplicate(self.kube, body, spec, cluster_id)
        racks = {int(b): model.broker_racks[i] for i, b in enumerate(model.broker_ids.tolist())}
        try:
            check_groups(groups, topics=model.topics, racks=racks)
        except PolicyError as err:
            raise Stall("OverlappingResourceGroups", str(err)) from None
        alive = tuple(
            int(b) for b, up in zip(model.broker_ids.tolist(), model.broker_alive.tolist(), strict=True) if up
        )
        metric_key = ctx.metric_key = PolicyKey(name, namespace, cluster_id)
        export(self.metrics, metric_key, seen)
        status.durability, status.consumer_groups = seen.durability, seen.consumer_groups
        previous_brokers = tuple(status.observed_cluster.brokers) if status.observed_cluster else None
        status.observed_cluster = ObservedCluster(cluster_id=cluster_id, brokers=list(alive))

        if self._resume(ctx, status):
            return "", ""
        measured = self._measured(ctx, model, groups, racks, status)
        if measured is None:
            return ctx.reconciling_reason, ctx.reconciling
        model = measured
        status.imbalance = self._imbalance(model, spec, groups, metric_key)

        executed = summaries.executed_ids(status)
        proposal = status.proposal
        pending = proposal is not None and proposal.moves + proposal.leader_changes > 0 and proposal.id not in executed
        now = dt.datetime.now(dt.UTC)
        reason = why_propose(
            spec,
            Observed(now, fingerprint, alive, status.imbalance),
            Recorded(
                fingerprint=proposal.fingerprint if proposal else None,
                brokers=previous_brokers,
                last_schedule=summaries.parse_time(status.last_schedule_time),
                executing=False,
                pending=pending,
            ),
        )
        if reason == "Schedule":
            status.last_schedule_time = now_iso()
        if reason is not None:
            status.proposal = self._propose(ctx, groups, model, fingerprint, reason)
            events.append(("Normal", "ProposalCreated", summaries.describe(status.proposal)))
        proposal = status.proposal
        if proposal is None:
            status.state = "Pending"
            return "", ""
        empty = proposal.moves + proposal.leader_changes == 0
        decision = decide(spec, proposal.id, proposal_empty=empty, executed_ids=executed, now=now)
        status.conditions = set_condition(
            status.conditions,
            PROPOSAL_READY,
            not empty and proposal.id not in executed,
            reason=decision.reason,
            message=decision.message,
            generation=generation,
        )
        if decision.stalled:
            raise Stall(decision.reason, decision.message)
        if decision.execute:
            try:
                stored = self.proposals.load(namespace, proposal.config_map, proposal.id)
            except ProposalLost as lost:
                # What was reviewed cannot be read back whole: it is never executed. A new proposal takes
                # its place; the next round decides on it (the same id when nothing changed, so the
                # approval stands and exactly the reviewed plan runs; else Manual mode approves the new id).
                status.proposal = self._propose(ctx, groups, model, fingerprint, "ProposalLost")
                message = f"proposal {proposal.id}: {lost}; proposal {status.proposal.id} replaces it"
                events.append(("Warning", "ProposalLost", message))
                status.state = "ProposalReady"
                return "", ""
            self._start(ctx, stored, None)
            events.append(
                ("Normal", "ExecutionStarted", f"executing proposal {proposal.id}: {summaries.describe(proposal)}")
            )
            run = self.runs.get(key)
            if run is not None:
                self._report_running(run, status, spec)
            return "", ""
        status.conditions = set_condition(
            status.conditions, EXECUTING, False, reason=decision.reason, message="", generation=generation
        )
        if empty or proposal.id in executed:
            done = status.last_run is not None and status.last_run.proposal_id == proposal.id
            status.state = "Completed" if done else "Balanced"
        else:
            status.state = "Paused" if spec.paused else "ProposalReady"
        return "", ""

    def _connect(self, spec: BalancePolicySpec, credentials: Credentials | None) -> KafkaPort:
        try:
            return self.connector(spec.cluster, credentials)
        except (KafkaError, OSError) as err:
            raise Stall(
                "ClusterUnreachable", f"spec.cluster.bootstrapServers {spec.cluster.bootstrap_servers}: {err}"
            ) from None

    def _measured(
        self,
        ctx: _Ctx,
        live: ClusterModel,
        groups: Groups,
        racks: dict[int, str | None],
        status: BalancePolicyStatus,
    ) -> ClusterModel | None:
        """The model to plan on: live placement with the measured load when the policy has a sample store.

        None while the first usable analysis is pending (state Analysing). Once a proposal exists, a
        later analysis hiccup does not hold back its approval: the live model stands in.
        """
        url = self.analyses.store_url(ctx.spec) if self.analyses is not None else None
        if self.analyses is None or url is None:
            return live
        try:
            self.analyses.ensure_sampler(ctx.key, ctx.metric_key, ctx.spec, ctx.credentials, url)
        except (ValueError, OSError) as err:  # the store URL (StoreError is a ValueError) or the local directory
            raise Stall("InvalidSpec", f"spec.analysis.samples {url}: {err}") from None
        brokers = {name: group_brokers(group, racks) for name, group in groups}
        try:
            analysed = self.analyses.analyse(
                ctx.key, ctx.metric_key, ctx.spec, brokers, url, owner=owner_reference(ctx.body)
            )
        except EngineUnavailable as err:
            # A failed SparkApplication is reported, not hidden behind the live model: its reason is the user's clue.
            raise Stall(err.reason, str(err)) from None
        except NotReady as err:
            if status.proposal is not None:
                log.info("%s/%s: planning on the live model: %s", ctx.key[0], ctx.key[1], err)
                return live
            status.state = "Analysing"
            ctx.reconciling, ctx.reconciling_reason = str(err), err.reason
            return None
        return with_measured_load(live, analysed.model)

    def _imbalance(self, model: ClusterModel, spec: BalancePolicySpec, groups: Groups, key: PolicyKey) -> float | None:
        """Measure the balance now (metrics, the onImbalance trigger); the watched resource's worst ratio."""
        resource = spec.triggers.on_imbalance.resource if spec.triggers.on_imbalance else "disk"
        try:
            balance = self.planner.evaluate(model, spec, groups)
        except Exception as err:
            # A bad number here must not stop the policy: the proposal step reports planning errors.
            log.warning("imbalance of %s/%s not computed: %s", key.namespace, key.policy, err)
            return None
        self.metrics.set_balance(key, balance.groups, balance.balancedness)
        self.metrics.set_threshold(key, resource, summaries.threshold(spec))
        return round(balance.worst(resource), 4)

    def _propose(
        self, ctx: _Ctx, groups: Groups, model: ClusterModel, fingerprint: str, trigger: str
    ) -> ProposalStatus:
        spec, body, key = ctx.spec, ctx.body, ctx.metric_key
        with self.metrics.planning_seconds.labels(key.policy, key.namespace, key.cluster).time():
            try:
                proposal = self.planner.propose(model, spec, groups)
            except Exception as err:
                reason = getattr(err, "reason", None)
                if reason is None:
                    raise
                raise Stall("UnsatisfiableGoal", str(err)) from None
        summary = dict(proposal.summary)
        try:
            config_map = self.proposals.save(key.namespace, Owner(owner_reference(body)), proposal)
        except ProposalTooLarge as err:
            raise Stall("ProposalTooLarge", str(err)) from None
        except ConfigMapNotOurs as err:
            raise Stall("ConfigMapConflict", str(err)) from None
        self.metrics.set_proposal(
            key,
            moves=int(summary.get("moves", len(proposal.plan))),
            bytes_to_move=int(summary.get("bytesToMove", 0)),
            leader_changes=len(proposal.leader_changes),
        )
        return ProposalStatus(
            id=proposal.id,
            operation=spec.operation.type,
            moves=int(summary.get("moves", len(proposal.plan))),
            partitions=len(proposal.plan),
            bytes_to_move=int(summary.get("bytesToMove", 0)),
            leader_changes=len(proposal.leader_changes),
            balancedness_before=float(summary.get("balancednessBefore", 0.0)),
            balancedness_after=float(summary.get("balancednessAfter", 0.0)),
            groups=summaries.group_rows(summary, spec),
            config_map=config_map,
            created_at=now_iso(),
            trigger=trigger,
            fingerprint=fingerprint,
        )

    def _stored_proposal(self, namespace: str, proposal: ProposalStatus) -> Proposal:
        """The reviewed proposal of an execution to resume, exactly as stored (never recomputed)."""
        try:
            return self.proposals.load(namespace, proposal.config_map, proposal.id)
        except ProposalLost as err:
            raise Stall("ProposalLost", f"status.proposal.configMap: {err}; the execution cannot resume") from None

    # ----- executions ---------------------------------------------------------------------
    def _start(self, ctx: _Ctx, proposal: Proposal, record: dict[str, Any] | None) -> None:
        proposal_id = proposal.id
        namespace, name = ctx.key
        metric_key = ctx.metric_key
        real_port = self._connect(ctx.spec, ctx.credentials)  # its own connection: the execution outlives this call
        store = StatusExecutionStore(
            self.kube,
            namespace,
            name,
            record,
            on_save=lambda saved: self.metrics.set_throttled_brokers(metric_key, summaries.throttled_brokers(saved)),
        )
        port = cast(KafkaPort, DetachablePort(real_port, store.detached))
        execution = f"{proposal_id}/{next(self._execution_numbers)}"  # the metrics count each run from zero

        def on_progress(progress: ExecProgress) -> None:
            run.progress = progress
            self.metrics.set_execution(metric_key, summaries.figures(progress), execution=execution)

        context = {
            "proposalId": proposal_id,
            "policy": f"{namespace}/{name}",
            "uid": str(ctx.body["metadata"].get("uid")),
        }
        executor = make_executor(
            port,
            proposal,
            store,
            ctx.spec,
            on_progress=on_progress,
            context=context,
            poll_seconds=self.options.execution_poll_seconds,
        )
        # A resumed execution keeps the start of the run it continues (lastRun.startedAt), not the restart's.
        started = float((record or {}).get("startedAt") or 0.0)
        started_at = dt.datetime.fromtimestamp(started, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if started else now_iso()
        run = Run(proposal_id, ctx.generation, executor, store, port, started_at=started_at)
        self.runs.start(ctx.key, run)

    def _resume(self, ctx: _Ctx, status: BalancePolicyStatus) -> bool:
        """An unfinished execution in status and none running here: the operator restarted. Resume it."""
        if not status.execution_checkpoint or status.proposal is None:
            return False
        record = json.loads(status.execution_checkpoint)
        if ExecutionState(record.get("state", "Pending")).finished:
            return False
        proposal_id = str((record.get("context") or {}).get("proposalId", ""))
        if proposal_id != status.proposal.id:
            return False
        finished = self._finished.get(ctx.key)
        if finished is not None and finished.proposal_id == proposal_id:
            return False  # a checkpoint older than the end of the run this process finished
        self._start(ctx, self._stored_proposal(ctx.key[0], status.proposal), record)
        ctx.events.append(
            ("Normal", "ExecutionResumed", f"resumed proposal {proposal_id} from the checkpoint in status")
        )
        run = self.runs.get(ctx.key)
        if run is not None:
            self._report_running(run, status, ctx.spec)
        return True

    def _report_running(self, run: Run, status: BalancePolicyStatus, spec: BalancePolicySpec) -> None:
        status.state = "Executing"
        if run.progress is not None:
            status.progress = summaries.progress(run.progress)
        why = f"stopping: {run.stop_reason}" if run.stop_reason else f"executing proposal {run.proposal_id}"
        status.conditions = set_condition(
            status.conditions, EXECUTING, True, reason="Executing", message=why, generation=status.observed_generation
        )
        del spec

    def _finish(
        self, key: tuple[str, str], run: Run, status: BalancePolicyStatus, events: list[tuple[str, str, str]]
    ) -> None:
        self.runs.pop(key)
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
        status.last_run = LastRun(
            proposal_id=run.proposal_id,
            result=outcome,
            started_at=run.started_at,
            finished_at=now_iso(),
            bytes_moved=int(progress.bytes_moved) if progress else 0,
            partitions_moved=int(progress.partitions_done) if progress else 0,
            message=message,
        )
        self._finished[key] = status.last_run
        if progress is not None:
            status.progress = summaries.progress(progress)
        cluster = status.observed_cluster.cluster_id if status.observed_cluster else ""
        self.metrics.execution_finished(PolicyKey(key[1], key[0], cluster or ""), outcome)
        kind = "Normal" if outcome == "Completed" else "Warning"
        events.append((kind, f"Execution{outcome}", f"proposal {run.proposal_id}: {message or outcome.lower()}"))
        status.conditions = set_condition(
            status.conditions, EXECUTING, False, reason=outcome, message=message, generation=status.observed_generation
        )

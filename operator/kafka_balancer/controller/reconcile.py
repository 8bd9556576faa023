"""One reconciliation of a BalancePolicy: gather what the decision needs, carry out what it decides.

Level-based: every call starts from the object as it is now and the cluster as it is now, and
returns the whole status. Every decision is :func:`decision.next_status.next_status`'s, a pure
function of the spec, the status and what was observed; this module reads the spec, its groups and
Secret, the executions of this process, the cluster, the load and the planner when the decision
asks for them, and carries out its actions (stop or start an execution, events, metrics). Blocking
(Kubernetes client, Kafka port, planner): the kopf handlers call it in a worker thread.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from kafka_balancer.controller import summaries
from kafka_balancer.controller.analysis import Analyses, EngineUnavailable, NotReady, with_measured_load
from kafka_balancer.controller.approval import approver
from kafka_balancer.controller.claims import Claim, ClusterAccess, check_claim
from kafka_balancer.controller.decision.actions import Action, Ask, CountError, Event, StopRun
from kafka_balancer.controller.decision.next_status import next_status
from kafka_balancer.controller.decision.running import stop_reason
from kafka_balancer.controller.decision.seen import ClusterSeen, NotAnalysed, Problem, RunView, Seen
from kafka_balancer.controller.kubeapi import Credentials, KubeApi, owner_reference
from kafka_balancer.controller.observations import cordons, export, observe
from kafka_balancer.controller.proposal_store import (
    DEFAULT_MAX_BYTES,
    ConfigMapNotOurs,
    Owner,
    ProposalLost,
    ProposalStore,
    ProposalTampered,
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
from kafka_balancer.controller.status import BalancePolicyStatus, LastRun, ObservedCluster, ProposalStatus, now_iso
from kafka_balancer.controller.triggers import planning_fingerprint
from kafka_balancer.controller.validation import Stall, parse_spec, read_credentials, read_groups
from kafka_balancer.executor import ExecutionState
from kafka_balancer.executor import Progress as ExecProgress
from kafka_balancer.kafka.isolated import KafkaClientCrashedError
from kafka_balancer.kafka.port import InvalidMetadataError, KafkaError, KafkaPort
from kafka_balancer.metrics import Metrics, PolicyKey
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec
from kafka_balancer.model.policy.groups import check_groups, group_brokers
from kafka_balancer.model.policy.parsing import PolicyError
from kafka_balancer.model.proposal import Proposal
from kafka_balancer.model.summary import ProposalSummary
from kafka_balancer.planner import PlannerOptions
from kafka_balancer.planner.policy import options_from_policy

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    status: BalancePolicyStatus
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)


@dataclass
class _Ctx:
    """What one reconciliation has gathered about its policy (the decision's inputs come from here)."""

    key: tuple[str, str]  # namespace, name
    generation: int
    body: dict[str, Any]
    spec: BalancePolicySpec
    groups: Groups
    credentials: Credentials | None
    metric_key: PolicyKey
    fingerprint: str  # of the planning inputs (triggers.planning_fingerprint)
    claims: Sequence[Claim]  # every policy the operator knows (claims.check_claim)
    live: ClusterModel | None = None  # the cluster as read
    measured: ClusterModel | None = None  # with the analysed load, where the policy has a sample store
    racks: dict[int, str | None] = field(default_factory=dict)
    options: PlannerOptions | Exception | None = None  # the spec as planner options, made once
    unreachable: str | None = None  # why no bootstrap server accepted a connection (controller.admission)


@dataclass(frozen=True)
class ReconcilerOptions:
    execution_poll_seconds: float | None = None  # executor poll interval; None = the executor's default
    proposal_max_bytes: int = DEFAULT_MAX_BYTES  # the largest proposal (JSON) stored in ConfigMaps
    access: ClusterAccess = field(default_factory=ClusterAccess)  # which namespaces may claim which clusters


class Reconciler:
    def __init__(  # noqa: PLR0913 - the reconciler's collaborators, by name, as operator.py wires them
        self,
        *,
        kube: KubeApi,
        connector: Connector,
        planner: Planner,
        runs: Runs,
        metrics: Metrics,
        options: ReconcilerOptions | None = None,
        analyses: Analyses | None = None,
        may_act: Callable[[], bool] = lambda: True,
    ) -> None:
        self.analyses = analyses
        self.may_act = may_act  # False once this operator lost its Lease: executions stop (controller.lease)
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
        # The proposal each running execution of this process executes, for the same reason: a
        # reconciliation from an older body must not write a status without it.
        self._executing: dict[tuple[str, str], ProposalStatus] = {}
        # Proposals whose review copies this process found tampered (decision.seen.Seen.review_tampered), likewise.
        self._tampered: dict[tuple[str, str], tuple[str, str]] = {}

    # ----- entry points -------------------------------------------------------------------
    def reconcile(
        self, body: dict[str, Any], claims: Sequence[Claim] = (), *, unreachable: str | None = None
    ) -> Outcome:
        """One reconciliation; ``claims``: every policy the operator knows (kopf's index), for the
        one-policy-per-cluster rule; ``unreachable``: why the cluster's servers accepted no connection
        just now (no Kafka client is made for it then)."""
        meta = body.get("metadata", {})
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        before = BalancePolicyStatus.model_validate(body.get("status") or {})
        self.metrics.reconciled(name, namespace)
        ctx, seen = self._inputs(body, before, claims)
        if ctx is not None:
            ctx.unreachable = unreachable
        for _ in range(len(_FIELDS) + 1):  # each observation is asked for once at most
            status, actions = next_status(ctx.spec if ctx else None, before, seen)
            ask = actions[-1] if actions and isinstance(actions[-1], Ask) else None
            if ctx is None or ask is None:
                break
            seen = self._observe(ctx, ask, seen, status)
        else:
            raise RuntimeError(f"reconciliation of {namespace}/{name} kept asking for {actions[-1]}")
        events = self._carry_out((namespace, name), actions)
        tampered = status.proposal.review_tampered if status.proposal is not None else None
        if status.proposal is not None and tampered is not None:
            self._tampered[(namespace, name)] = (status.proposal.id, tampered)
        else:
            self._tampered.pop((namespace, name), None)
        self.metrics.set_state(name, namespace, status.state)
        return Outcome(status, events + summaries.transitions(before, status))

    def deleted(self, body: dict[str, Any]) -> None:
        """The policy is being deleted: stop its execution cleanly and forget its metrics."""
        meta = body.get("metadata", {})
        key = (str(meta.get("namespace")), str(meta.get("name")))
        self._finished.pop(key, None)
        self._executing.pop(key, None)
        self._tampered.pop(key, None)
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

    # ----- gathering ----------------------------------------------------------------------
    def _inputs(
        self, body: dict[str, Any], before: BalancePolicyStatus, claims: Sequence[Claim]
    ) -> tuple[_Ctx | None, Seen]:
        """The spec, its groups and Secret, and the executions of this process (a finished one is
        recorded now); what cannot be read is the decision's ``refused``."""
        meta = body["metadata"]
        namespace, name = str(meta["namespace"]), str(meta["name"])
        generation = int(meta.get("generation") or 1)
        key = (namespace, name)
        seen = Seen(dt.datetime.now(dt.UTC), generation, review_tampered=self._tampered.get(key))
        seen = self._runs_seen(key, seen, before)
        try:
            spec = parse_spec(body)
            check_claim(Claim.of(body), claims, self.options.access)
            groups = read_groups(self.kube, namespace, spec)
            credentials = read_credentials(self.kube, namespace, spec)
        except Stall as stall:
            # The execution running goes on being reported (and is stopped: decision.next_status).
            return None, dataclasses.replace(seen, refused=Problem(stall.reason, stall.message))
        fingerprint = planning_fingerprint(spec, {g: s.model_dump(mode="json") for g, s in groups})
        ctx = _Ctx(
            key, generation, body, spec, groups, credentials, PolicyKey(name, namespace, ""), fingerprint, claims
        )
        return ctx, dataclasses.replace(seen, fingerprint=fingerprint)

    def _runs_seen(self, key: tuple[str, str], seen: Seen, before: BalancePolicyStatus) -> Seen:
        """The execution of this process for the policy: running, or just finished (recorded now)."""
        run = self.runs.get(key)
        view = None if run is None else _view(run, self._executing.get(key))
        if run is not None and run.done:
            finished, progress = self._finish(key, run, before)
            return dataclasses.replace(seen, run=view, finished=finished, progress=progress, last_finished=finished)
        return dataclasses.replace(seen, run=view, last_finished=self._finished.get(key))

    def _observe(self, ctx: _Ctx, ask: Ask, seen: Seen, status: BalancePolicyStatus) -> Seen:
        """Make the observation the decision asked for; a Stall is the decision's Problem."""
        try:
            if ask.what == "imbalance":
                imbalance = self._imbalance(ctx, ask.model)
                return dataclasses.replace(seen, imbalance=imbalance, measured=True, now=dt.datetime.now(dt.UTC))
            found: Any
            if ask.what == "cluster":
                found = self._cluster(ctx)
            elif ask.what == "resume":
                found = self._resume(ctx, status)
            elif ask.what == "analysis":
                found = self._analysis(ctx, status)
            elif ask.what == "proposal":
                found = self._propose(ctx, ask)
            else:  # "start": the decision executes the proposal in status
                assert status.proposal is not None
                found = self._start(ctx, status.proposal, None)
        except Stall as stall:
            found = Problem(stall.reason, stall.message)
        return dataclasses.replace(seen, **{_FIELDS[ask.what]: found})

    def _cluster(self, ctx: _Ctx) -> ClusterSeen:
        spec = ctx.spec
        if ctx.unreachable is not None:
            raise Stall(
                "ClusterUnreachable",
                f"spec.cluster.bootstrapServers {spec.cluster.bootstrap_servers}: {ctx.unreachable}",
            )
        port = self._connect(spec, ctx.credentials)
        try:
            model = port.read_cluster(with_sizes=True)
            description = port.describe_cluster()
            seen = observe(port, model, spec)
        except KafkaError as err:
            raise kafka_stall(spec, err) from None
        finally:
            port.close()
        cluster_id = description.cluster_id or spec.cluster.bootstrap_servers
        check_claim(Claim.of(ctx.body), ctx.claims, self.options.access, cluster_id)
        ctx.racks = {int(b): model.broker_racks[i] for i, b in enumerate(model.broker_ids.tolist())}
        try:
            check_groups(ctx.groups, topics=model.topics, racks=ctx.racks)
        except PolicyError as err:
            raise Stall("OverlappingResourceGroups", str(err)) from None
        alive = [int(b) for b, up in zip(model.broker_ids.tolist(), model.broker_alive.tolist(), strict=True) if up]
        ctx.live = model
        ctx.metric_key = PolicyKey(ctx.key[1], ctx.key[0], cluster_id)
        export(self.metrics, ctx.metric_key, seen)
        observed = ObservedCluster(cluster_id=cluster_id, brokers=alive, **cordons(model))
        return ClusterSeen(observed, seen.durability, seen.consumer_groups)

    def _connect(self, spec: BalancePolicySpec, credentials: Credentials | None) -> KafkaPort:
        try:
            return self.connector(spec.cluster, credentials)
        except KafkaError as err:
            raise kafka_stall(spec, err) from None
        except OSError as err:
            raise Stall(
                "ClusterUnreachable", f"spec.cluster.bootstrapServers {spec.cluster.bootstrap_servers}: {err}"
            ) from None

    def _analysis(self, ctx: _Ctx, status: BalancePolicyStatus) -> Literal["measured", "live"] | NotAnalysed:
        """The live placement with the measured load, when the policy has a sample store ("live":
        it has none; NotAnalysed while the first usable analysis is pending)."""
        url = self.analyses.store_url(ctx.spec) if self.analyses is not None else None
        if self.analyses is None or url is None:
            return "live"
        try:
            self.analyses.ensure_sampler(ctx.key, ctx.metric_key, ctx.spec, ctx.credentials, url)
        except (ValueError, OSError) as err:  # the store URL (StoreError is a ValueError) or the local directory
            raise Stall("InvalidSpec", f"spec.analysis.samples {url}: {err}") from None
        brokers = {name: group_brokers(group, ctx.racks) for name, group in ctx.groups}
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
            return NotAnalysed(err.reason, str(err))
        assert ctx.live is not None  # the cluster was read first
        ctx.measured = with_measured_load(ctx.live, analysed.model)
        return "measured"

    def _model(self, ctx: _Ctx, which: Literal["measured", "live"]) -> ClusterModel:
        model = ctx.measured if which == "measured" and ctx.measured is not None else ctx.live
        assert model is not None  # the cluster was read first
        return model

    def _planner_options(self, ctx: _Ctx, model: ClusterModel) -> PlannerOptions | Exception:
        """The spec and its groups as planner options: made once per reconciliation."""
        if ctx.options is None:
            try:
                ctx.options = options_from_policy(ctx.spec, ctx.groups, model)
            except Exception as err:  # reported where it is used: not measured, or a Stall when proposing
                ctx.options = err
        return ctx.options

    def _imbalance(self, ctx: _Ctx, which: Literal["measured", "live"]) -> float | None:
        """Measure the balance now (metrics, the onImbalance trigger); the watched resource's worst ratio."""
        spec, key = ctx.spec, ctx.metric_key
        model = self._model(ctx, which)
        resource = spec.triggers.on_imbalance.resource if spec.triggers.on_imbalance else "disk"
        try:
            options = self._planner_options(ctx, model)
            if isinstance(options, Exception):
                raise options
            balance = self.planner.evaluate(model, spec, ctx.groups, options=options)
        except Exception as err:
            # A bad number here must not stop the policy: the proposal step reports planning errors.
            log.warning("imbalance of %s/%s not computed: %s", key.namespace, key.policy, err)
            return None
        self.metrics.set_balance(key, balance.groups, balance.balancedness)
        self.metrics.set_threshold(key, resource, summaries.threshold(spec))
        return round(balance.worst(resource), 4)

    def _propose(self, ctx: _Ctx, ask: Ask) -> ProposalStatus:
        spec, key = ctx.spec, ctx.metric_key
        model = self._model(ctx, ask.model)
        with self.metrics.planning_seconds.labels(key.policy, key.namespace, key.cluster).time():
            try:
                options = self._planner_options(ctx, model)
                if isinstance(options, Exception):
                    raise options
                proposal = self.planner.propose(model, spec, ctx.groups, options=options)
            except Exception as err:
                reason = getattr(err, "reason", None)
                if reason is None:
                    raise
                raise Stall("UnsatisfiableGoal", str(err)) from None
        summary = ProposalSummary.of(proposal.summary)
        try:
            config_map = self.proposals.save(key.namespace, Owner(owner_reference(ctx.body)), proposal)
        except ProposalTooLarge as err:
            raise Stall("ProposalTooLarge", str(err)) from None
        except ConfigMapNotOurs as err:
            raise Stall("ConfigMapConflict", str(err)) from None
        moves, bytes_to_move = summary.moves, int(summary.bytes_to_move)
        self.metrics.set_proposal(
            key, moves=moves, bytes_to_move=bytes_to_move, leader_changes=len(proposal.leader_changes)
        )
        return ProposalStatus(
            id=proposal.id,
            operation=spec.operation.type,
            moves=moves,
            partitions=len(proposal.plan),
            bytes_to_move=bytes_to_move,
            leader_changes=len(proposal.leader_changes),
            balancedness_before=summary.balancedness_before,
            balancedness_after=summary.balancedness_after,
            groups=summaries.group_rows(summary, spec),
            goals_violated=summary.goals_violated,
            goals_worsened_by_hard_goals=summary.goals_worsened_by_hard_goals,
            time_budget_reached=None if summary.time_budget_reached is None else summary.time_budget_reached.stage,
            config_map=config_map,
            created_at=now_iso(),
            trigger=ask.trigger,
            fingerprint=ctx.fingerprint,
        )

    def _stored(self, ctx: _Ctx, proposal: ProposalStatus) -> Proposal:
        """The reviewed proposal, exactly as stored when it was proposed (never recomputed)."""
        try:
            return self.proposals.load(ctx.key[0], proposal.config_map, proposal.id)
        except ProposalTampered as err:
            raise Stall("ProposalTampered", f"status.proposal.configMap: {err}") from None
        except ProposalLost as err:
            raise Stall("ProposalLost", f"status.proposal.configMap: {err}") from None

    # ----- executions ---------------------------------------------------------------------
    def _resume(self, ctx: _Ctx, status: BalancePolicyStatus) -> RunView:
        """Resume the unfinished execution in status (the operator restarted)."""
        assert status.proposal is not None  # decision.running.resumable said so
        assert status.execution_checkpoint
        record = json.loads(status.execution_checkpoint)
        return self._start(ctx, status.proposal, record)

    def _start(self, ctx: _Ctx, reviewed: ProposalStatus, record: dict[str, Any] | None) -> RunView:
        """Execute the proposal in status, as stored when it was proposed (from ``record``: resumed; else
        from the checkpoint the last run left, whose throttles it adopts: executor.start)."""
        proposal = self._stored(ctx, reviewed)
        proposal_id = proposal.id
        namespace, name = ctx.key
        if reviewed.approved_by is None:
            who = approver(ctx.body) if ctx.spec.mode == "Manual" else "mode Auto"
            reviewed = reviewed.model_copy(update={"approved_by": who})
        metric_key = ctx.metric_key
        if record is None:
            record = inherited(ctx.body, proposal_id)
        real_port = self._connect(ctx.spec, ctx.credentials)  # its own connection: the execution outlives this call
        store = StatusExecutionStore(
            self.kube,
            namespace,
            name,
            record,
            on_save=lambda saved: self.metrics.set_throttled_brokers(metric_key, summaries.throttled_brokers(saved)),
            may_act=self.may_act,
        )
        withdrawn = stop_reason(ctx.spec, proposal_id)
        if withdrawn is not None:
            store.request_stop()  # resumed while withdrawn (paused meanwhile): it only winds down
        port = cast(KafkaPort, DetachablePort(real_port, store.attached))
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
        self.metrics.set_throttle(metric_key, ctx.spec.execution.throttle_bytes_per_sec)
        self.runs.start(ctx.key, run)
        self._executing[ctx.key] = reviewed
        return _view(run, reviewed)

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

    def _carry_out(self, key: tuple[str, str], actions: list[Action]) -> list[tuple[str, str, str]]:
        """The decision's actions; returns its events."""
        events: list[tuple[str, str, str]] = []
        for action in actions:
            if isinstance(action, StopRun):
                run = self.runs.get(key)
                if run is not None:
                    run.stop(action.reason)
            elif isinstance(action, Event):
                events.append((action.type, action.reason, action.message))
            elif isinstance(action, CountError):
                self.metrics.error(key[1], key[0], action.reason)
        return events


# The field of Seen each observation fills (with a Problem where it stalls; measuring never does).
_FIELDS: dict[str, str] = {
    "cluster": "cluster",
    "resume": "resumed",
    "analysis": "analysis",
    "imbalance": "measured",
    "proposal": "proposal",
    "start": "started",
}


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


def kafka_stall(spec: BalancePolicySpec, err: KafkaError) -> Stall:
    """A Kafka error while reading the cluster as the Stalled reason that says what kind it is."""
    reason = "ClusterUnreachable"
    if isinstance(err, InvalidMetadataError):
        reason = "InvalidClusterMetadata"  # the cluster says what Kafka never does: nothing of it is used
    elif isinstance(err, KafkaClientCrashedError):
        reason = "KafkaClientCrashed"  # its worker process died; the operator did not
    return Stall(reason, f"spec.cluster.bootstrapServers {spec.cluster.bootstrap_servers}: {err}")


def _view(run: Run, proposal: ProposalStatus | None) -> RunView:
    if run.progress is None:
        return RunView(run.proposal_id, run.done, run.stop_reason, None, proposal)
    progress = summaries.progress(run.progress)
    return RunView(
        run.proposal_id, run.done, run.stop_reason, progress, proposal, summaries.stuck_reasons(run.progress)
    )

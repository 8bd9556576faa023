"""One reconciliation of a BalancePolicy: gather what the decision needs, carry out what it decides.

Level-based: every call starts from the object as it is now and the cluster as it is now, and
returns the whole status. Every decision is :func:`decision.next_status.next_status`'s, a pure
function of the spec, the status and what was observed; this module makes the observations it asks
for (controller.gathering: the spec, its groups and Secret, the cluster, the load; controller.proposing:
the planner; controller.executions: the executions of this process) and carries out its actions (stop
an execution, events, metrics). Blocking (Kubernetes client, Kafka port, planner): the kopf handlers
call it in a worker thread.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_balancer.controller import proposing, summaries
from kafka_balancer.controller.analysis import Analyses
from kafka_balancer.controller.claims import Claim, ClusterAccess
from kafka_balancer.controller.decision.actions import Action, Ask, CountError, Event, StopRun
from kafka_balancer.controller.decision.next_status import next_status
from kafka_balancer.controller.decision.seen import Problem, Seen
from kafka_balancer.controller.executions import Executions
from kafka_balancer.controller.gathering import Gathered, read_analysis, read_cluster, read_policy
from kafka_balancer.controller.kubeapi import KubeApi
from kafka_balancer.controller.proposal_store import DEFAULT_MAX_BYTES, ProposalStore
from kafka_balancer.controller.services import Connector, Planner, Runs
from kafka_balancer.controller.status import BalancePolicyStatus
from kafka_balancer.controller.validation import Stall
from kafka_balancer.metrics import Metrics


@dataclass
class Outcome:
    status: BalancePolicyStatus
    events: list[tuple[str, str, str]] = field(default_factory=list)  # (type, reason, message)


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
        self.kube = kube
        self.connector = connector
        self.planner = planner
        self.runs = runs
        self.metrics = metrics
        self.options = options or ReconcilerOptions()
        self.proposals = ProposalStore(kube, self.options.proposal_max_bytes)
        self.executions = Executions(
            kube=kube,
            connector=connector,
            runs=runs,
            metrics=metrics,
            proposals=self.proposals,
            poll_seconds=self.options.execution_poll_seconds,
            may_act=may_act,  # False once this operator lost its Lease: executions stop (controller.lease)
        )
        # Proposals whose review copies this process found tampered (decision.seen.Seen.review_tampered):
        # kopf writes the returned status after the handler is done, so the next reconciliation can
        # start from an older body (as for the executions: controller.executions).
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
        gathered, seen = self._inputs(body, before, claims)
        if gathered is not None:
            gathered.unreachable = unreachable
        for _ in range(len(_FIELDS) + 1):  # each observation is asked for once at most
            status, actions = next_status(gathered.spec if gathered else None, before, seen)
            ask = actions[-1] if actions and isinstance(actions[-1], Ask) else None
            if gathered is None or ask is None:
                break
            seen = self._observe(gathered, ask, seen, status)
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
        self._tampered.pop(key, None)
        if self.analyses is not None:
            self.analyses.stop(key)
        self.executions.deleted(key)
        cluster = ((body.get("status") or {}).get("observedCluster") or {}).get("clusterId")
        self.metrics.forget(key[1], key[0], [c for c in (cluster,) if c])

    # ----- gathering ----------------------------------------------------------------------
    def _inputs(
        self, body: dict[str, Any], before: BalancePolicyStatus, claims: Sequence[Claim]
    ) -> tuple[Gathered | None, Seen]:
        """The spec, its groups and Secret, and the executions of this process (a finished one is
        recorded now); what cannot be read is the decision's ``refused``."""
        meta = body["metadata"]
        key = (str(meta["namespace"]), str(meta["name"]))
        generation = int(meta.get("generation") or 1)
        seen = Seen(dt.datetime.now(dt.UTC), generation, review_tampered=self._tampered.get(key))
        seen = self.executions.seen(key, seen, before)
        try:
            gathered = read_policy(self.kube, body, generation, claims, self.options.access)
        except Stall as stall:
            # The execution running goes on being reported (and is stopped: decision.next_status).
            return None, dataclasses.replace(seen, refused=Problem(stall.reason, stall.message))
        return gathered, dataclasses.replace(seen, fingerprint=gathered.fingerprint)

    def _observe(self, gathered: Gathered, ask: Ask, seen: Seen, status: BalancePolicyStatus) -> Seen:
        """Make the observation the decision asked for; a Stall is the decision's Problem."""
        try:
            if ask.what == "imbalance":
                imbalance = proposing.imbalance(gathered, self.planner, self.metrics, ask.model)
                return dataclasses.replace(seen, imbalance=imbalance, measured=True, now=dt.datetime.now(dt.UTC))
            found: Any
            if ask.what == "cluster":
                found = read_cluster(gathered, self.connector, self.metrics, self.options.access)
            elif ask.what == "resume":
                found = self.executions.resume(gathered, status)
            elif ask.what == "analysis":
                found = read_analysis(gathered, self.analyses, status)
            elif ask.what == "proposal":
                found = proposing.propose(gathered, self.planner, self.metrics, self.proposals, ask)
            else:  # "start": the decision executes the proposal in status
                assert status.proposal is not None
                found = self.executions.start(gathered, status.proposal)
        except Stall as stall:
            found = Problem(stall.reason, stall.message)
        return dataclasses.replace(seen, **{_FIELDS[ask.what]: found})

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

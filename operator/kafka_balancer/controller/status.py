"""The BalancePolicy and ResourceGroup status as typed models, and metav1.Condition bookkeeping.

Status reports what the controller observed and did; it never drives the controller (no phase
machine): every reconciliation recomputes conditions from the spec, the cluster and the executor.
``state`` is a one-word summary for ``kubectl get`` only. Plan details go to a ConfigMap; status
holds the summary and a reference.
"""

from __future__ import annotations

import datetime as dt
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

# Condition types, in the polarity kstatus reads (docs/gitops.md): Ready is True whenever the spec is
# accepted and the controller works on it, including while samples are collected and during a long
# execution; Stalled is True when a human must act; Reconciling only while a withdrawn execution stops.
READY: Final = "Ready"
RECONCILING: Final = "Reconciling"
STALLED: Final = "Stalled"
PROPOSAL_READY: Final = "ProposalReady"
EXECUTING: Final = "Executing"
CONDITION_TYPES: Final = (READY, RECONCILING, STALLED, PROPOSAL_READY, EXECUTING)

State = Literal[
    "Pending",  # accepted, nothing measured yet
    "Analysing",  # sampling/analysing/planning
    "Balanced",  # nothing to do
    "ProposalReady",  # a proposal waits (DryRun, or Manual without a matching approval)
    "Executing",
    "Completed",  # the last execution finished
    "Paused",
    "Stalled",  # needs a human: see the Stalled condition
]


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


# Conditions are a list-map keyed by type, as metav1.Condition prescribes (+listType=map,
# +listMapKey=type): server-side apply merges them by type, and a second entry of one type is refused.
CONDITIONS_LIST_MAP: Final[dict[str, JsonValue]] = {
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
}

STUCK_LISTED: Final = 20  # stuck moves named in status.progress.stuck (all are counted)


class StatusModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", use_attribute_docstrings=True
    )


class Condition(StatusModel):
    """metav1.Condition."""

    type: str
    """Ready, Reconciling, Stalled, ProposalReady or Executing."""
    status: Literal["True", "False", "Unknown"]
    """True, False or Unknown."""
    reason: str
    """CamelCase reason, e.g. UnknownResourceGroup, ClusterUnreachable, AwaitingApproval."""
    message: str = ""
    """Human-readable detail naming the field, value, broker or group at fault."""
    last_transition_time: str
    """When status last changed (RFC 3339)."""
    observed_generation: int | None = None
    """metadata.generation the condition was computed for."""


class GroupImbalance(StatusModel):
    """Imbalance of one resource group: the most loaded broker over the group's average."""

    name: str
    """ResourceGroup name (`cluster` when the policy has no groups)."""
    resource: str
    """Resource the ratio is computed on (disk, network-in, ...)."""
    before: float
    """max/avg before the proposal."""
    after: float | None = None
    """max/avg after the proposal."""


class ProposalStatus(StatusModel):
    """Summary of the current proposal; the plan itself is in the ConfigMap."""

    id: str
    """Deterministic id: set spec.approvedProposal to this value to execute it (Manual mode)."""
    operation: str
    """Operation the proposal realises."""
    moves: int
    """Replica moves (a partition that moves two replicas counts two)."""
    partitions: int = 0
    """Partitions whose replica list or order changes (the entries of plan.json)."""
    bytes_to_move: int
    """Bytes copied by the replica moves."""
    leader_changes: int
    """Preferred-leader changes."""
    balancedness_before: float
    """0 to 100, before."""
    balancedness_after: float
    """0 to 100, after."""
    groups: list[GroupImbalance] = Field(default_factory=list)
    """Per-group imbalance."""
    goals_violated: list[str] = Field(default_factory=list)
    """Goals out of band (or broken) after the plan: the summary's goalsViolated."""
    goals_worsened_by_hard_goals: list[str] = Field(default_factory=list)
    """Distribution goals the plan leaves worse than it found them because the hard goals required it
    (replicas taken off dead or removed brokers, hard goals repaired): the summary's
    goalsWorsenedByHardGoals."""
    time_budget_reached: str | None = None
    """The planning stage that goals.maxPlanningSeconds cut short (absent: the planner ran to the end);
    the plan holds every hard goal, and the distribution goals it did not finish are in goalsViolated."""
    config_map: str
    """ConfigMap (same namespace) holding the proposal (binaryData proposal.json.gz, continued in
    <name>-2 ... when it has more than one part) and, while they fit, plan.json and summary.json."""
    created_at: str
    """When the proposal was made."""
    trigger: str = ""
    """Why it was made: FirstProposal, SpecChanged, Schedule, Imbalance, BrokersChanged, ProposalLost (the
    stored copy of the approved proposal could not be read back whole)."""
    fingerprint: str = ""
    """Hash of the planning inputs (cluster, groups, goals, operation, analysis) it was made from."""
    review_tampered: str | None = None
    """Set when the copies people review (plan.json, summary.json) were found to differ from the verified
    proposal: they are restored, and an approval given meanwhile does not count (Stalled/ProposalTampered)
    until spec.approvedProposal is withdrawn and given again."""
    approved_by: str | None = None
    """Who approved it: the field manager that set spec.approvedProposal (kubectl, a GitOps tool, ...) and
    when (the API server's audit log names the user behind it), recorded when its execution starts."""


class Progress(StatusModel):
    """Progress of the running (or last) execution."""

    bytes_moved: int = 0
    """Bytes copied so far."""
    bytes_total: int = 0
    """Bytes to copy in this execution."""
    partitions_done: int = 0
    """Partitions whose reassignment completed."""
    partitions_total: int = 0
    """Partitions to reassign."""
    percent: float = 0.0
    """Bytes moved over bytes total (partitions when no bytes move), 0 to 100."""
    eta_seconds: int | None = None
    """Estimated seconds left at the current rate."""
    stuck_moves: int = 0
    """Moves in flight that copied nothing, or pending moves whose target broker was missing from the
    cluster metadata, for `spec.execution.stuckAfterSeconds`."""
    stuck: list[str] = Field(default_factory=list, max_length=STUCK_LISTED)
    """The first of them (`topic-partition`, sorted), at most 20: the status stays small."""
    waiting: str = ""
    """What the execution waits for while the cluster cannot answer (its controller down, a broker hung),
    and since when; empty while it answers. Waited for up to 600 s, then the execution stops, resumable."""
    taken_over: list[str] = Field(default_factory=list, max_length=STUCK_LISTED)
    """Moves another tool re-targeted while in flight (`topic-partition`, at most 20): left to it."""


class LastRun(StatusModel):
    """Outcome of the last execution."""

    proposal_id: str
    """Proposal executed."""
    result: Literal["Completed", "Stopped", "Failed"]
    """Completed, Stopped (cancelled, paused or spec changed) or Failed."""
    started_at: str | None = None
    """Start time."""
    finished_at: str | None = None
    """End time."""
    bytes_moved: int = 0
    """Bytes copied."""
    partitions_moved: int = 0
    """Partitions reassigned."""
    message: str = ""
    """Detail, e.g. the error that stopped it."""


class ObservedCluster(StatusModel):
    """What the controller last saw of the Kafka cluster (for broker-change triggers)."""

    cluster_id: str | None = None
    """Kafka cluster id."""
    brokers: list[int] = Field(default_factory=list)
    """Live broker ids."""
    cordoned_brokers: list[int] = Field(default_factory=list)
    """Brokers whose every log directory is cordoned (cordoned.log.dirs, KIP-1066): no plan gives them a
    new replica."""
    cordoned_log_dirs: dict[str, list[str]] = Field(default_factory=dict)
    """Cordoned log directories by broker id, for every broker with one: they take no new replica."""


class ConsumerGroupStatus(StatusModel):
    """One consumer group's balance (spec.analysis.consumerGroups), most imbalanced first."""

    group: str
    """Consumer group id."""
    assignor: str | None = None
    """Partition assignor the group uses."""
    members: int
    """Members."""
    imbalance_ratio: float
    """Partitions on the busiest member over the mean (1 = even)."""
    lag_imbalance_ratio: float | None = None
    """Lag of the most lagging member over the mean, when lag is known."""
    total_lag: int | None = None
    """Total lag in messages."""
    recommended_assignor: str
    """Assignor that would spread this group best (see docs/consumers.md)."""


class DurabilityStatus(StatusModel):
    """Summary of the durability audit (see docs/audit.md)."""

    topics: int
    """Topics audited."""
    flagged_topics: int
    """Topics with at least one risky setting."""
    topic_flags: dict[str, int] = Field(default_factory=dict)
    """Topics per flag (replication-factor-below-3, min-insync-replicas-below-2, ...)."""
    partitions_at_risk: int
    """Partitions offline, under-replicated or at/below min.insync.replicas now."""
    partition_risks: dict[str, int] = Field(default_factory=dict)
    """Partitions per risk."""


class BalancePolicyStatus(StatusModel):
    """Observed state of a BalancePolicy."""

    observed_generation: int | None = None
    """metadata.generation last reconciled."""
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=CONDITIONS_LIST_MAP)
    """Ready, Reconciling, Stalled, ProposalReady, Executing."""
    state: State = "Pending"
    """One-word summary for kubectl get; read the conditions for decisions."""
    imbalance: float | None = None
    """Worst max/avg ratio over groups for the watched resource (triggers.onImbalance.resource or disk)."""
    proposal: ProposalStatus | None = None
    """The current proposal."""
    progress: Progress | None = None
    """Progress of the running or last execution."""
    last_run: LastRun | None = None
    """Outcome of the last execution."""
    observed_cluster: ObservedCluster | None = None
    """Cluster id and brokers last seen."""
    last_schedule_time: str | None = None
    """Last time the schedule trigger fired."""
    consumer_groups: list[ConsumerGroupStatus] | None = None
    """The most imbalanced consumer groups (when spec.analysis.consumerGroups.enabled)."""
    durability: DurabilityStatus | None = None
    """Durability audit of the cluster's topic settings and partitions."""
    execution_checkpoint: str | None = None
    """Executor checkpoint (opaque JSON, written by the execution): lets a restarted operator resume it."""


class ResourceGroupStatus(StatusModel):
    """Observed state of a ResourceGroup."""

    observed_generation: int | None = None
    """metadata.generation last validated."""
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=CONDITIONS_LIST_MAP)
    """Ready (spec valid) and Stalled (why not)."""


def set_condition(
    conditions: list[Condition],
    type_: str,
    status: bool,
    *,
    reason: str,
    message: str = "",
    generation: int | None = None,
) -> list[Condition]:
    """Return conditions with ``type_`` set; lastTransitionTime only moves when the status flips."""
    value: Literal["True", "False"] = "True" if status else "False"
    out: list[Condition] = []
    found = False
    for cond in conditions:
        if cond.type != type_:
            out.append(cond)
            continue
        found = True
        since = cond.last_transition_time if cond.status == value else now_iso()
        out.append(
            Condition(
                type=type_,
                status=value,
                reason=reason,
                message=message,
                last_transition_time=since,
                observed_generation=generation,
            )
        )
    if not found:
        out.append(
            Condition(
                type=type_,
                status=value,
                reason=reason,
                message=message,
                last_transition_time=now_iso(),
                observed_generation=generation,
            )
        )
    order = {t: i for i, t in enumerate(CONDITION_TYPES)}
    return sorted(out, key=lambda c: order.get(c.type, len(order)))


def condition(conditions: list[Condition], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)


def is_true(conditions: list[Condition], type_: str) -> bool:
    found = condition(conditions, type_)
    return found is not None and found.status == "True"

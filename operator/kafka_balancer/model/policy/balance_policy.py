"""The BalancePolicy spec, one section a class: cluster, goals, operation, triggers, execution, analysis."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from kafka_balancer.model.policy.fields import (
    BOOTSTRAP_PATTERN,
    CRON_PATTERN,
    DEFAULT_MAX_PLANNING_SECONDS,
    DISTRIBUTION_GOALS,
    HARD_GOALS,
    HHMM_PATTERN,
    MAX_PLANNING_SECONDS_LIMIT,
    PROPOSAL_ID_PATTERN,
    BrokerId,
    DistributionGoal,
    HardGoal,
    ImbalanceResource,
    K8sName,
    Mode,
    OperationName,
    RackName,
    SpecModel,
    TopicName,
    listed_once,
)
from kafka_balancer.model.policy.operations import operation_kind

# ----- BalancePolicy.spec.cluster ---------------------------------------------------------------


class SecretReference(SpecModel):
    """A Secret in the policy's namespace holding the Kafka credentials, under fixed keys: `username` and
    `password` (SASL), `ca.crt` (PEM CA bundle for SSL; without it the system CAs), and `bootstrapServers`
    (required: the comma-separated host:port list these credentials may be sent to; every server of
    `bootstrapServers` must be in it). No other key is read."""

    name: K8sName
    """Name of the Secret."""


class ClusterConnection(SpecModel):
    """How the operator reaches the Kafka cluster."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self.securityProtocol != 'SASL_PLAINTEXT' || self.allowPlaintextCredentials",
                    "message": "securityProtocol SASL_PLAINTEXT sends the credentials without TLS: use SASL_SSL,"
                    " or set allowPlaintextCredentials: true",
                }
            ]
        }
    )

    bootstrap_servers: Annotated[str, Field(pattern=BOOTSTRAP_PATTERN)]
    """Comma-separated host:port list, e.g. `kafka-0.kafka:9092,kafka-1.kafka:9092`."""
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    """Kafka `security.protocol`."""
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    """Kafka `sasl.mechanism`; required with SASL_PLAINTEXT and SASL_SSL."""
    credentials_secret: SecretReference | None = None
    """Secret (same namespace) with the keys `username` and `password` (SASL), `ca.crt` (PEM CA bundle; else the
    system CAs) and `bootstrapServers` (the servers these credentials may be sent to: every server of
    bootstrapServers must be listed); required with SASL. No other key is read."""
    allow_plaintext_credentials: bool = False
    """Allow SASL_PLAINTEXT: the SASL login without TLS (PLAIN sends the password in clear; SCRAM exposes it to
    offline guessing). Refused unless true."""

    @model_validator(mode="after")
    def _sasl_needs_credentials(self) -> ClusterConnection:
        if self.security_protocol.startswith("SASL"):
            if self.sasl_mechanism is None:
                raise ValueError(f"saslMechanism is required with securityProtocol {self.security_protocol}")
            if self.credentials_secret is None:
                raise ValueError(f"credentialsSecret is required with securityProtocol {self.security_protocol}")
        if self.security_protocol == "SASL_PLAINTEXT" and not self.allow_plaintext_credentials:
            raise ValueError(
                "securityProtocol SASL_PLAINTEXT sends the credentials without TLS: use SASL_SSL,"
                " or set allowPlaintextCredentials: true"
            )
        return self


# ----- BalancePolicy.spec.goals -----------------------------------------------------------------


class Goals(SpecModel):
    """Which goals the planner optimises, in which order, and with which thresholds."""

    hard: list[HardGoal] = Field(default_factory=lambda: list(HARD_GOALS))
    """Hard goals: a proposal that breaks one is refused. Default: all of them."""
    distribution: list[DistributionGoal] = Field(default_factory=lambda: list(DISTRIBUTION_GOALS))
    """Distribution goals in priority order; a later goal never undoes an earlier one. Default: all, in the
    documented order."""
    balance_threshold: Annotated[float, Field(ge=1.0, le=10.0)] = 1.10
    """A broker is balanced when its load is within this ratio of its group's average (1.10 = ±10%)."""
    capacity_threshold: Annotated[float, Field(gt=0.0, le=1.0)] = 0.8
    """Share of a broker's capacity (disk, network, CPU) a plan may use."""
    max_replicas_per_broker: Annotated[int, Field(ge=1)] = 4000
    """Replica-capacity limit per broker."""
    excluded_brokers_for_replicas: list[BrokerId] = Field(default_factory=list)
    """Brokers that receive no new replicas."""
    excluded_brokers_for_leadership: list[BrokerId] = Field(default_factory=list)
    """Brokers that receive no new leaders."""
    max_planning_seconds: Annotated[float, Field(gt=0.0, le=MAX_PLANNING_SECONDS_LIMIT)] = DEFAULT_MAX_PLANNING_SECONDS
    """Seconds the planner may search for balance: it then returns the best plan found so far that holds
    every hard goal, with the distribution goals still out of band listed (status.proposal.goalsViolated,
    status.proposal.timeBudgetReached). The search stops at 95% of it; the 5% left is what one turn of
    replica-distribution with count exchanges gets where the search stopped before its pass that has them.
    The hard goals are not cut short: a capacity repair still unfinished when it is spent fails the plan."""
    min_completeness: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0
    """Share of partitions that must have load samples in the window before a proposal is made."""
    preferred_leader_racks: list[RackName] = Field(default_factory=list, max_length=64)
    """Racks (`broker.rack`) to lead from, most preferred first: a partition is led from the first listed rack
    holding one of its replicas (on a broker that may lead), by leadership changes; the goals that leadership
    carries (leader count, leader bytes-in, network out, CPU) are balanced among the brokers of each listed rack
    (and of the unlisted racks together). A name no broker has is refused, unless a broker is down (Kafka does not
    tell its rack). A ResourceGroup's own `preferredLeaderRacks` replaces this list for the group's topics and
    brokers; the topics in no group follow this one. Empty = no preference."""

    @field_validator("hard", "distribution", "preferred_leader_racks")
    @classmethod
    def _no_duplicates(cls, names: list[str]) -> list[str]:
        return listed_once(names)


# ----- BalancePolicy.spec.operation -------------------------------------------------------------


class LogDirRef(SpecModel):
    """One log directory of one broker (remove-disks)."""

    broker: BrokerId
    """The broker's id."""
    path: Annotated[str, Field(pattern=r"^/.*", min_length=2, max_length=4096)]
    """An absolute path among the broker's `log.dirs`."""


class Operation(SpecModel):
    """What the proposal does. `rebalance` balances the groups; the others change the cluster's shape."""

    type: OperationName = "rebalance"
    """One of rebalance, add-brokers, remove-brokers, demote-brokers, fix-offline-replicas,
    change-replication-factor, move-topics, remove-disks."""
    brokers: list[BrokerId] = Field(default_factory=list)
    """Brokers to add, remove or demote (add-brokers, remove-brokers, demote-brokers)."""
    topics: list[TopicName] = Field(default_factory=list)
    """Topics to change (change-replication-factor, move-topics)."""
    replication_factor: Annotated[int, Field(ge=1)] | None = None
    """New replication factor (change-replication-factor)."""
    target_brokers: list[BrokerId] = Field(default_factory=list)
    """Brokers to move the topics onto (move-topics), or the removed brokers' replicas onto (remove-brokers: then
    nothing else moves)."""
    target_group: K8sName | None = None
    """ResourceGroup to move the topics into (move-topics)."""
    log_dirs: list[LogDirRef] = Field(default_factory=list, max_length=4096)
    """Log directories to empty (remove-disks): their replicas move to the open directories of the same broker,
    which must hold them under `capacityThreshold`. Between brokers only what a hard goal already broken needs
    moves (as for every operation)."""

    @model_validator(mode="after")
    def _required_fields(self) -> Operation:
        kind = operation_kind(self.type)
        missing = kind.missing(self)
        if missing:
            raise ValueError(f"operation {self.type} needs a non-empty {' or '.join(repr(f) for f in missing)}")
        overlap = sorted(set(self.brokers) & set(self.target_brokers))
        if kind.removes_brokers and overlap:
            raise ValueError(f"broker {overlap[0]} is both removed and a target")
        return self


# ----- BalancePolicy.spec.triggers --------------------------------------------------------------


class ImbalanceTrigger(SpecModel):
    """Make a proposal when a balance statistic crosses a threshold (checked by the controller's timer)."""

    threshold: Annotated[float, Field(gt=1.0)] = 1.25
    """Fire when the most loaded broker carries more than this ratio of its group's average."""
    resource: ImbalanceResource = "disk"
    """Statistic to watch: replicas, leaders, disk, network-in, network-out, cpu."""


class Triggers(SpecModel):
    """When the controller makes a new proposal on its own (besides spec changes)."""

    schedule: Annotated[str, Field(pattern=CRON_PATTERN)] | None = None
    """Five-field cron expression in UTC (minute hour day-of-month month day-of-week), e.g. `0 3 * * *`."""
    on_imbalance: ImbalanceTrigger | None = None
    """Propose when the cluster drifts out of balance."""
    on_broker_change: bool = False
    """Propose again (with this policy's operation, e.g. rebalance) when the set of live brokers changes."""


# ----- BalancePolicy.spec.execution -------------------------------------------------------------


class MaintenanceWindow(SpecModel):
    """A window (UTC) in which executions may start and run; outside all windows execution waits."""

    start: Annotated[str, Field(pattern=rf"{CRON_PATTERN}|{HHMM_PATTERN}")]
    """`HH:MM` (every day) or a five-field cron expression for the window's start."""
    duration_minutes: Annotated[int, Field(ge=1, le=7 * 24 * 60)]
    """Length of the window."""


class Execution(SpecModel):
    """Limits that keep an execution safe for the cluster's clients."""

    throttle_bytes_per_sec: Annotated[int, Field(ge=1)] | None = None
    """Replication throttle on the moving replicas' brokers and on copies between a broker's log directories,
    bytes/s; unset = no throttle."""
    concurrent_moves_per_broker: Annotated[int, Field(ge=1)] = 5
    """Reassignments in flight per broker."""
    concurrent_moves_total: Annotated[int, Field(ge=1)] = 1000
    """Reassignments in flight in the whole cluster."""
    max_bytes_per_run: Annotated[int, Field(ge=1)] | None = None
    """Stop after moving this many bytes; the rest waits for the next run. Unset = no limit."""
    maintenance_windows: list[MaintenanceWindow] = Field(default_factory=list)
    """When executions may run; empty = any time."""
    stuck_after_seconds: Annotated[int, Field(ge=1)] = 1800
    """A move with no progress for this long is reported as stuck."""
    cancel_stuck: bool = False
    """Cancel stuck moves (and continue with the rest) instead of only reporting them."""
    election_batch_size: Annotated[int, Field(ge=1)] = 1000
    """Partitions per preferred-leader election request."""


# ----- BalancePolicy.spec.analysis --------------------------------------------------------------


class AnalysisEngine(SpecModel):
    """Where the Spark analysis runs."""

    type: Literal["local", "connect", "sparkApplication"] = "local"
    """`local` (inside the operator, local[2]), `connect` (Spark Connect at url) or `sparkApplication`."""
    url: str | None = None
    """`local`: the Spark master (default: the operator's, `local[2]` in the chart); `connect`: the Spark
    Connect URL `sc://host:15002` (default: the operator's, the chart's `spark.connect.url`);
    `sparkApplication`: the namespace of the SparkApplications, optionally `/<name prefix>`."""

    @model_validator(mode="after")
    def _url_when_remote(self) -> AnalysisEngine:
        if self.type == "sparkApplication" and not self.url:
            raise ValueError("engine type sparkApplication needs a 'url' (the Spark namespace)")
        return self


class ConsumerGroupAnalysis(SpecModel):
    """Report consumer-group balance alongside the broker balance."""

    enabled: bool = False
    """Analyse consumer-group assignments and lag (status.consumerGroups and the consumer_group metrics)."""
    top_n: Annotated[int, Field(ge=1, le=100)] = 10
    """How many consumer groups status lists and the metrics export, the most imbalanced first."""


class Analysis(SpecModel):
    """How load is sampled and summarised before planning."""

    samples: str | None = None
    """URL of the sample store (a directory or `file://` URL of Parquet files); unset = the operator's own."""
    interval_seconds: Annotated[int, Field(ge=1)] = 60
    """Seconds between samples."""
    window_seconds: Annotated[int, Field(ge=1)] = 300
    """Seconds of samples the analysis summarises."""
    statistic: Literal["avg", "p95"] = "p95"
    """Statistic of each partition's rates over the window."""
    engine: AnalysisEngine = Field(default_factory=AnalysisEngine)
    """Where Spark runs."""
    consumer_groups: ConsumerGroupAnalysis = Field(default_factory=ConsumerGroupAnalysis)
    """Consumer-group analysis."""

    @model_validator(mode="after")
    def _window_holds_a_sample(self) -> Analysis:
        if self.window_seconds < self.interval_seconds:
            raise ValueError(
                f"windowSeconds ({self.window_seconds}) must be at least intervalSeconds ({self.interval_seconds})"
            )
        return self


# ----- the spec ---------------------------------------------------------------------------------


class BalancePolicySpec(SpecModel):
    """What balanced means for one Kafka cluster, and how the operator may get there."""

    cluster: ClusterConnection
    """The Kafka cluster this policy balances (one policy per cluster)."""
    resource_groups: list[K8sName] = Field(default_factory=list)
    """Names of ResourceGroups (same namespace) balanced separately; empty = the whole cluster as one group."""
    goals: Goals = Field(default_factory=Goals)
    """Goals and thresholds."""
    operation: Operation = Field(default_factory=Operation)
    """What the proposal does."""
    triggers: Triggers = Field(default_factory=Triggers)
    """When new proposals are made."""
    execution: Execution = Field(default_factory=Execution)
    """Execution limits."""
    analysis: Analysis = Field(default_factory=Analysis)
    """Sampling and analysis."""
    mode: Mode = "Manual"
    """`DryRun`: proposals only. `Manual`: execute the proposal named in approvedProposal. `Auto`: execute
    every proposal."""
    approved_proposal: Annotated[str, Field(pattern=PROPOSAL_ID_PATTERN)] | None = None
    """Id of the proposal to execute in Manual mode; must equal status.proposal.id."""
    paused: bool = False
    """Stop proposing and executing (an execution in flight is stopped cleanly)."""

    @field_validator("resource_groups")
    @classmethod
    def _unique_groups(cls, groups: list[str]) -> list[str]:
        return listed_once(groups)

    @model_validator(mode="after")
    def _cross_checks(self) -> BalancePolicySpec:
        target = self.operation.target_group
        if target is not None and self.resource_groups and target not in self.resource_groups:
            raise ValueError(f"operation.targetGroup '{target}' is not in resourceGroups {self.resource_groups}")
        return self

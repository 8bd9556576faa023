"""The custom resources' specs as typed models: BalancePolicy and ResourceGroup (kafkabalancer.io/v1alpha1).

Pure data. The same models parse what ``kubectl apply`` sends (the controller), a policy file given to
the CLI (the planner), and generate the CRDs' OpenAPI schemas (``kafka_balancer.controller.crdgen``),
so the three never drift apart. Field names are camelCase in YAML and snake_case in Python.

Validation that a structural schema can express (minimums, enums, patterns) lives in the field
declarations and ends up in the CRD; cross-field rules (an operation's required fields, a broker in
two groups) live in validators here and are reported by the controller as ``Stalled``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.limits import shown
from kafka_balancer.model.topic_patterns import MAX_PATTERN_LENGTH, MAX_PATTERNS, compile_pattern, matches_any

GROUP: Final = "kafkabalancer.io"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

HardGoal = Literal[
    "rack-awareness",
    "replica-capacity",
    "disk-capacity",
    "network-in-capacity",
    "network-out-capacity",
    "cpu-capacity",
    "resource-group-confinement",
    "excluded-brokers",
    "cordoned-log-dirs",
    "preferred-leader-racks",
    "log-dir-capacity",
]
DistributionGoal = Literal[
    "replica-distribution",
    "disk-distribution",
    "network-in-distribution",
    "network-out-distribution",
    "cpu-distribution",
    "leader-count-distribution",
    "leader-bytes-in-distribution",
    "topic-replica-distribution",
    "topic-leader-distribution",
    "log-dir-distribution",
]
OperationName = Literal[
    "rebalance",
    "add-brokers",
    "remove-brokers",
    "demote-brokers",
    "fix-offline-replicas",
    "change-replication-factor",
    "move-topics",
    "remove-disks",
]
ImbalanceResource = Literal["replicas", "leaders", "disk", "network-in", "network-out", "cpu"]
Mode = Literal["DryRun", "Manual", "Auto"]
# The tuples are the Literals' values, so a goal added in one place is added in both.
HARD_GOALS: Final[tuple[HardGoal, ...]] = get_args(HardGoal)
# Default priority order: a later goal never undoes an earlier one.
DISTRIBUTION_GOALS: Final[tuple[DistributionGoal, ...]] = get_args(DistributionGoal)
OPERATIONS: Final[tuple[OperationName, ...]] = get_args(OperationName)
# Balance statistics a trigger can watch (the planner's per-resource max/avg ratio).
IMBALANCE_RESOURCES: Final[tuple[ImbalanceResource, ...]] = get_args(ImbalanceResource)
MODES: Final[tuple[Mode, ...]] = get_args(Mode)

BrokerId = Annotated[int, Field(ge=0, description="A Kafka broker id.")]
# Kafka's legal topic names; checked here so a typo fails at apply time, not mid-plan.
TOPIC_NAME_PATTERN: Final = r"^[a-zA-Z0-9._-]{1,249}$"
TopicName = Annotated[str, Field(pattern=TOPIC_NAME_PATTERN, description="A Kafka topic name.")]
# A Kubernetes object name (DNS-1123 subdomain), for references to ResourceGroups and Secrets.
K8S_NAME_PATTERN: Final = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
K8sName = Annotated[str, Field(pattern=K8S_NAME_PATTERN, max_length=253)]
BOOTSTRAP_PATTERN: Final = r"^[^,\s:]+:[0-9]{1,5}(,[^,\s:]+:[0-9]{1,5})*$"
# Five cron fields (minute hour day-of-month month day-of-week); the controller parses them fully.
CRON_PATTERN: Final = r"^\s*\S+(\s+\S+){4}\s*$"
HHMM_PATTERN: Final = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
PROPOSAL_ID_PATTERN: Final = r"^[a-z0-9-]{4,63}$"
# The planner's time budget (goals.maxPlanningSeconds): its default, and the most a policy may give it
# (a reconciliation waits for the plan; an hour is beyond any cluster this planner was measured on).
DEFAULT_MAX_PLANNING_SECONDS: Final = 60.0
MAX_PLANNING_SECONDS_LIMIT: Final = 3600.0
# A broker.rack value as the ResourceGroup selector and preferredLeaderRacks name it.
RackName = Annotated[str, Field(min_length=1, max_length=255)]


def listed_once(names: list[str]) -> list[str]:
    """A list that names each entry once (goals, racks), else the first repeated one is named."""
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"'{dup[0]}' is listed twice")
    return names


class SpecModel(BaseModel):
    """Base of every spec model: camelCase in YAML, unknown fields refused, immutable."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
    )


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
        needs_brokers = {"add-brokers", "remove-brokers", "demote-brokers"}
        if self.type in needs_brokers and not self.brokers:
            raise ValueError(f"operation {self.type} needs a non-empty 'brokers' list")
        if self.type == "remove-disks" and not self.log_dirs:
            raise ValueError("operation remove-disks needs a non-empty 'logDirs' list")
        if self.type == "change-replication-factor" and (not self.topics or self.replication_factor is None):
            raise ValueError("operation change-replication-factor needs 'topics' and 'replicationFactor'")
        if self.type == "move-topics":
            if not self.topics:
                raise ValueError("operation move-topics needs a non-empty 'topics' list")
            if not self.target_brokers and self.target_group is None:
                raise ValueError("operation move-topics needs 'targetBrokers' or 'targetGroup'")
        overlap = sorted(set(self.brokers) & set(self.target_brokers))
        if self.type == "remove-brokers" and overlap:
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


# ----- the two specs ----------------------------------------------------------------------------


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
        dup = sorted({g for g in groups if groups.count(g) > 1})
        if dup:
            raise ValueError(f"group '{dup[0]}' is listed twice")
        return groups

    @model_validator(mode="after")
    def _cross_checks(self) -> BalancePolicySpec:
        target = self.operation.target_group
        if target is not None and self.resource_groups and target not in self.resource_groups:
            raise ValueError(f"operation.targetGroup '{target}' is not in resourceGroups {self.resource_groups}")
        return self


class BrokerSelector(SpecModel):
    """The brokers of a group: by id or by rack (exactly one)."""

    ids: list[BrokerId] | None = None
    """Broker ids."""
    racks: list[Annotated[str, Field(min_length=1)]] | None = None
    """Every broker whose `broker.rack` is one of these."""

    @model_validator(mode="after")
    def _exactly_one(self) -> BrokerSelector:
        if (self.ids is None) == (self.racks is None):
            raise ValueError("set exactly one of 'ids' or 'racks'")
        chosen = self.ids if self.ids is not None else self.racks
        if not chosen:
            raise ValueError("'ids' or 'racks' must not be empty")
        return self


def _linear_time(pattern: str) -> str:
    compile_pattern(pattern)  # PatternError is a ValueError: pydantic reports it at the pattern's index
    return pattern


TopicPattern = Annotated[
    str,
    Field(min_length=1, max_length=MAX_PATTERN_LENGTH),
    AfterValidator(_linear_time),
]


class TopicSelector(SpecModel):
    """The topics of a group: exact names and regular expressions (full match)."""

    names: list[TopicName] = Field(default_factory=list)
    """Topic names."""
    patterns: list[TopicPattern] = Field(default_factory=list, max_length=MAX_PATTERNS)
    """Regular expressions in RE2 syntax, matched against the whole topic name in linear time (no
    backreferences or look-around)."""

    def matches(self, topic: str) -> bool:
        return topic in self.names or matches_any(self.patterns, topic)


class ResourceGroupSpec(SpecModel):
    """A set of brokers and the topics that live on them, balanced against its own average."""

    brokers: BrokerSelector
    """The group's brokers."""
    topics: TopicSelector = Field(default_factory=TopicSelector)
    """The group's topics; a topic in no group is balanced over the brokers in no group (if every broker is in
    a group, it stays where it is: no distribution goal moves it; its replicas on dead or removed brokers go to
    any broker, rack-aware, and may settle on another broker where one ends above a capacity limit; its
    leadership moves off demoted or excluded brokers, to its preferred leader rack where a replica re-placed there
    made that rack preferred, and to another of its replicas where a broker is above a network-out or CPU limit that
    no other leadership move repairs)."""
    preferred_leader_racks: list[RackName] = Field(default_factory=list, max_length=64)
    """Racks (`broker.rack`) to lead this group's topics from, most preferred first, in place of the policy's
    `goals.preferredLeaderRacks` (which a group without its own list follows): a partition of the group's topics
    is led from the first rack of this list holding one of its replicas (on a broker that may lead); the goals
    that leadership carries are balanced among the group's brokers of each rack of this list (and of the unlisted
    racks together). In force while `preferred-leader-racks` is a hard goal of the policy. A name no broker has
    is refused, unless a broker is down. Empty = the policy's list."""

    @field_validator("preferred_leader_racks")
    @classmethod
    def _no_duplicates(cls, racks: list[str]) -> list[str]:
        return listed_once(racks)


# ----- whole objects ----------------------------------------------------------------------------


class ObjectMeta(BaseModel):
    """The part of metadata the operator reads; everything else is kept by Kubernetes."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    name: K8sName
    namespace: str = "default"
    generation: int | None = None


class BalancePolicy(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    api_version: Literal["kafkabalancer.io/v1alpha1"] = Field("kafkabalancer.io/v1alpha1", alias="apiVersion")
    kind: Literal["BalancePolicy"] = "BalancePolicy"
    metadata: ObjectMeta
    spec: BalancePolicySpec


class ResourceGroup(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    api_version: Literal["kafkabalancer.io/v1alpha1"] = Field("kafkabalancer.io/v1alpha1", alias="apiVersion")
    kind: Literal["ResourceGroup"] = "ResourceGroup"
    metadata: ObjectMeta
    spec: ResourceGroupSpec


class PolicyError(ModelError):
    """A spec that does not validate; ``field`` is the dotted camelCase path, ``value`` the bad value."""

    def __init__(self, field: str, message: str, value: Any = None):
        self.field = field
        self.value = value
        self.message = message
        shown = "" if value is None else f" (got {value!r})"
        super().__init__(f"{field}: {message}{shown}")


def _first_error(err: ValidationError, prefix: str) -> PolicyError:
    first = err.errors(include_url=False)[0]
    field = prefix
    for part in first["loc"]:
        field += f"[{part}]" if isinstance(part, int) else f".{part}"
    message = str(first["msg"]).removeprefix("Value error, ")
    value = first.get("input") if first["type"] not in {"missing"} else None
    if isinstance(value, Mapping | list):
        value = None  # a whole sub-object is not a useful "got"; the message says what is wrong
    return PolicyError(field, message, value)


def parse_balance_policy_spec(spec: Any) -> BalancePolicySpec:
    """Validate a BalancePolicy spec (as found in the object's ``spec``). Raises PolicyError."""
    try:
        return BalancePolicySpec.model_validate(spec)
    except ValidationError as err:
        raise _first_error(err, "spec") from None


def parse_resource_group_spec(spec: Any) -> ResourceGroupSpec:
    """Validate a ResourceGroup spec. Raises PolicyError."""
    try:
        return ResourceGroupSpec.model_validate(spec)
    except ValidationError as err:
        raise _first_error(err, "spec") from None


def parse_manifests(documents: Sequence[Any]) -> tuple[list[BalancePolicy], list[ResourceGroup]]:
    """Split parsed YAML documents (e.g. ``yaml.safe_load_all``) into policies and groups; others are skipped.

    Used by the CLI: a BalancePolicy manifest is also the CLI's policy file.
    """
    policies: list[BalancePolicy] = []
    groups: list[ResourceGroup] = []
    for i, doc in enumerate(documents):
        if not isinstance(doc, Mapping) or doc.get("apiVersion") != API_VERSION:
            continue
        kind = doc.get("kind")
        if kind not in ("BalancePolicy", "ResourceGroup"):
            continue
        metadata = doc.get("metadata")
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        where = f"document[{i}] ({kind} {shown(name)})"
        try:
            if kind == "BalancePolicy":
                policies.append(BalancePolicy.model_validate(doc))
            elif kind == "ResourceGroup":
                groups.append(ResourceGroup.model_validate(doc))
        except ValidationError as err:
            raise _first_error(err, where) from None
    return policies, groups


def check_groups(
    groups: Sequence[tuple[str, ResourceGroupSpec]],
    topics: Sequence[str] = (),
    racks: Mapping[int, str | None] | None = None,
) -> None:
    """Refuse a broker or topic claimed by two groups of one policy. Raises PolicyError.

    ``topics`` (the cluster's topic names) catch two patterns matching one topic, and ``racks`` (broker
    id -> rack) catch a broker chosen by id in one group and by rack in another; without them only
    literal overlaps (same id, same rack, same topic name) are found.
    """
    owner: dict[tuple[str, str], str] = {}
    for name, spec in groups:
        claims: list[tuple[str, str]] = []
        if racks is not None:
            claims += [("broker", str(b)) for b in group_brokers(spec, racks)]
        claims += [("broker", str(b)) for b in spec.brokers.ids or ()]
        claims += [("rack", r) for r in spec.brokers.racks or ()]
        claims += [("topic", t) for t in spec.topics.names]
        claims += [("topic", t) for t in topics if t not in spec.topics.names and spec.topics.matches(t)]
        for claim in dict.fromkeys(claims):
            other = owner.setdefault(claim, name)
            if other != name:
                kind, value = claim
                raise PolicyError("spec.resourceGroups", f"{kind} {value} is in two groups: '{other}' and '{name}'")


def group_brokers(spec: ResourceGroupSpec, racks: Mapping[int, str | None]) -> list[int]:
    """The broker ids of a group given the cluster's broker -> rack map (ids not in the cluster are kept)."""
    if spec.brokers.ids is not None:
        return sorted(spec.brokers.ids)
    wanted = set(spec.brokers.racks or ())
    return sorted(b for b, rack in racks.items() if rack in wanted)

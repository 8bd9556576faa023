"""The names and field types both specs share: API group, goal, operation and mode names, the
patterns Kubernetes checks at apply time, and :class:`SpecModel`, the base of every spec model."""

from __future__ import annotations

from typing import Annotated, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

# The custom resources' apiVersion, as a type (the object models require it: model.policy.parsing; a
# Literal takes no expression, so the value and its parts are read from the type).
ApiVersion = Literal["kafkabalancer.io/v1alpha1"]
API_VERSION: Final[ApiVersion] = get_args(ApiVersion)[0]
GROUP: Final = API_VERSION.partition("/")[0]
VERSION: Final = API_VERSION.partition("/")[2]

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
    """A list that names each entry once (goals, racks, resource groups), else the first repeated one is named."""
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

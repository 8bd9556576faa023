"""What the planner is asked to do: goals, thresholds, resource groups and the operation.

Plain frozen dataclasses, not the CRD's pydantic models (the goal names are the goal catalogue's,
the same set as the CRD's; the operation names are the CRD's); the converter from the BalancePolicy
spec lives in :mod:`kafka_balancer.planner.policy`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from pydantic.alias_generators import to_snake

from kafka_balancer.model.policy.fields import DEFAULT_MAX_PLANNING_SECONDS, MAX_PLANNING_SECONDS_LIMIT
from kafka_balancer.model.policy.operations import OperationKind, operation_kind
from kafka_balancer.model.topic_patterns import PatternError, compile_pattern, matches_any
from kafka_balancer.planner.catalogue import CATALOGUE, PREFERRED_LEADER_RACKS, Catalogue


class PlanningError(Exception):
    """The cluster cannot satisfy a hard goal, or the request is invalid.

    ``reason`` is a short machine-readable code (e.g. ``disk-capacity``, ``invalid-options``);
    ``details`` is the human explanation naming brokers, numbers and what would fix it.
    """

    def __init__(self, reason: str, details: str):
        self.reason = reason
        self.details = details
        super().__init__(f"{reason}: {details}")


def _invalid(field_name: str, message: str, value: object) -> PlanningError:
    return PlanningError("invalid-options", f"field '{field_name}' {message}, got {value!r}")


def _check_racks(field_name: str, racks: tuple[str, ...]) -> None:
    """A preferred-leader-racks list names each rack once (whether a broker has it is the cluster's to
    say: planner.base.leader_racks)."""
    if len(set(racks)) != len(racks):
        raise _invalid(field_name, "must not list a rack twice", list(racks))


@dataclass(frozen=True)
class GroupOptions:
    """One resource group: its brokers, the topics (names or full-match regexes) that live on them, and
    the racks its topics are led from (empty: the policy's ``goals.preferredLeaderRacks``)."""

    name: str
    broker_ids: tuple[int, ...]
    topic_names: tuple[str, ...] = ()
    topic_patterns: tuple[str, ...] = ()
    preferred_leader_racks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise _invalid("resourceGroups[].name", "must be a non-empty string", self.name)
        _check_racks(f"resourceGroups[{self.name}].preferredLeaderRacks", self.preferred_leader_racks)
        for i, pattern in enumerate(self.topic_patterns):
            try:
                compile_pattern(pattern)
            except PatternError as err:
                raise _invalid(f"resourceGroups[{self.name}].topics.patterns[{i}]", str(err), pattern) from None

    def matches(self, topic: str) -> bool:
        return topic in self.topic_names or matches_any(self.topic_patterns, topic)


@dataclass(frozen=True)
class OperationOptions:
    """The operation and its parameters (see docs/goals.md for each one's meaning)."""

    type: str = "rebalance"
    brokers: tuple[int, ...] = ()
    topics: tuple[str, ...] = ()
    replication_factor: int | None = None
    target_brokers: tuple[int, ...] = ()
    target_group: str | None = None
    # remove-disks: (broker id, log directory path) pairs to empty.
    log_dirs: tuple[tuple[int, str], ...] = ()

    def __post_init__(self) -> None:
        try:
            kind = operation_kind(self.type)
        except ValueError as err:
            raise PlanningError("invalid-options", str(err)) from None
        missing = kind.missing(self)
        if missing:
            others = f" (or {', '.join(missing[1:])})" if len(missing) > 1 else ""
            field = missing[0]
            value = getattr(self, to_snake(field))
            raise _invalid(f"operation.{field}", f"must not be empty for {self.type}{others}", value)
        if self.replication_factor is not None and self.replication_factor < 1:
            raise _invalid("operation.replicationFactor", "must be an integer >= 1", self.replication_factor)

    @property
    def kind(self) -> OperationKind:
        """The operation's record: what it needs and how a plan treats it."""
        return operation_kind(self.type)


@dataclass(frozen=True)
class PlannerOptions:
    """Everything the planner needs besides the cluster model.

    ``topics`` limits a rebalance to those topics (others never move); ``groups_to_balance``
    limits it to those resource groups (empty = all). The goals are those of ``catalogue``, in its
    order by default (the order of ``distribution_goals`` is their priority: a later goal never
    undoes an earlier one).
    """

    hard_goals: tuple[str, ...] = CATALOGUE.hard_goals
    distribution_goals: tuple[str, ...] = CATALOGUE.distribution_goals
    balance_threshold: float = 1.10
    capacity_threshold: float = 0.8
    max_replicas_per_broker: int = 4000
    excluded_brokers_for_replicas: tuple[int, ...] = ()
    excluded_brokers_for_leadership: tuple[int, ...] = ()
    resource_groups: tuple[GroupOptions, ...] = ()
    operation: OperationOptions = field(default_factory=OperationOptions)
    topics: tuple[str, ...] = ()
    groups_to_balance: tuple[str, ...] = ()
    max_rounds: int = 40
    # The time budget (planner/base/budget.py); not part of the proposal id: it bounds the search,
    # it does not say what to plan.
    max_planning_seconds: float = field(default=DEFAULT_MAX_PLANNING_SECONDS, compare=False)
    # Racks to lead from, most preferred first (empty: no preference, and not part of the proposal id).
    preferred_leader_racks: tuple[str, ...] = ()
    # The goals this plan knows (not part of the proposal id: the goal names above are).
    catalogue: Catalogue = field(default=CATALOGUE, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._check_goals()
        if not 1.0 <= self.balance_threshold <= 10.0:
            raise _invalid("goals.balanceThreshold", "must be between 1.0 and 10.0", self.balance_threshold)
        if not 0.0 < self.capacity_threshold <= 1.0:
            raise _invalid("goals.capacityThreshold", "must be in (0, 1]", self.capacity_threshold)
        if self.max_replicas_per_broker < 1:
            raise _invalid("goals.maxReplicasPerBroker", "must be >= 1", self.max_replicas_per_broker)
        if not 0.0 < self.max_planning_seconds <= MAX_PLANNING_SECONDS_LIMIT:  # NaN fails too
            raise _invalid(
                "goals.maxPlanningSeconds", f"must be in (0, {MAX_PLANNING_SECONDS_LIMIT:g}]", self.max_planning_seconds
            )
        self._check_groups()
        _check_racks("goals.preferredLeaderRacks", self.preferred_leader_racks)

    def _check_goals(self) -> None:
        """The goals are the catalogue's, each listed once."""
        hard, distribution = self.catalogue.hard_goals, self.catalogue.distribution_goals
        for name in self.hard_goals:
            if name not in hard:
                raise _invalid("goals.hard", f"must name goals among {', '.join(hard)}", name)
        for name in self.distribution_goals:
            if name not in distribution:
                raise _invalid("goals.distribution", f"must name goals among {', '.join(distribution)}", name)
        if len(set(self.distribution_goals)) != len(self.distribution_goals):
            raise _invalid("goals.distribution", "must not list a goal twice", list(self.distribution_goals))

    def _check_groups(self) -> None:
        """Groups have distinct names and brokers; the groups named elsewhere exist."""
        names = [g.name for g in self.resource_groups]
        if len(set(names)) != len(names):
            raise _invalid("resourceGroups", "must not name a group twice", names)
        seen: dict[int, str] = {}
        for group in self.resource_groups:
            for b in group.broker_ids:
                if b in seen:
                    raise _invalid(f"resourceGroups[{group.name}].brokers", f"repeats broker of '{seen[b]}'", b)
                seen[b] = group.name
        for name in self.groups_to_balance:
            if name not in names:
                raise _invalid("groupsToBalance", f"must name a resource group among {names}", name)
        target = self.operation.target_group
        if target is not None and target not in names:
            raise _invalid("operation.targetGroup", f"must name a resource group among {names}", target)

    def hard(self, goal: str) -> bool:
        return goal in self.hard_goals

    @property
    def leader_racks(self) -> tuple[str, ...]:
        """The preferred leader racks in force: none when the hard goal is left out of ``hard_goals``
        (as the excluded brokers are ignored without ``excluded-brokers``)."""
        return self.preferred_leader_racks if self.hard(PREFERRED_LEADER_RACKS) else ()

    def leader_racks_of(self, group: GroupOptions) -> tuple[str, ...]:
        """A group's own preferred leader racks in force (none without the hard goal, as above); a
        group without its own list follows :attr:`leader_racks`."""
        return group.preferred_leader_racks if self.hard(PREFERRED_LEADER_RACKS) else ()

    @property
    def prefers_leader_racks(self) -> bool:
        """Whether any list of preferred leader racks is in force (the policy's or a group's)."""
        return bool(self.leader_racks or any(self.leader_racks_of(g) for g in self.resource_groups))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form; part of the proposal id."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in {"catalogue", "max_planning_seconds"}:
                continue
            value = getattr(self, f.name)
            if isinstance(value, OperationOptions):
                value = asdict(value)
                if not value["log_dirs"]:
                    del value["log_dirs"]  # added after proposal ids were issued (remove-disks)
            elif f.name == "resource_groups":
                value = tuple(self._group_dict(g) for g in value)
            elif f.name in {"hard_goals", "distribution_goals"}:
                value = tuple(g for g in value if not self.catalogue.goal(g).id_neutral)
            elif f.name == "preferred_leader_racks":
                value = self.leader_racks
                if not value:
                    continue  # added after proposal ids were issued: without it, an id stays as it was
            out[f.name] = value
        return out

    def _group_dict(self, group: GroupOptions) -> dict[str, Any]:
        """A group's part of the proposal id: its list of preferred leader racks only where one is in
        force (added after proposal ids were issued: without it, an id stays as it was)."""
        out = asdict(group)
        out["preferred_leader_racks"] = self.leader_racks_of(group)
        if not out["preferred_leader_racks"]:
            del out["preferred_leader_racks"]
        return out

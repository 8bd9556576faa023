"""A consumer group as the assignors see it: topics with partition counts, members, subscriptions.

This is the input of every assignor simulation, built either from a what-if file (G.json) or from a
live group read through the Kafka port. Errors name the member, the field and the value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.limits import check_amount, check_int32, check_topic_name

# Kafka's protocol names of the built-in assignors, in the order reports list them.
ASSIGNOR_NAMES = ("range", "roundrobin", "sticky", "cooperative-sticky")
# Partitions a group may have in total: a simulation holds every partition as an object and runs
# every assignor about 50 times (members leaving), about 0.3 ms of CPU per partition (6.8 s at
# 20,000 partitions and 100 members), so this bounds one group at minutes and about 1 GB; larger
# groups are refused before anything is allocated (docs/consumers.md, "Limits").
MAX_GROUP_PARTITIONS = 1_000_000

TopicPartition = tuple[str, int]
# member id -> partitions, in the order the assignor produced them.
Assignment = dict[str, list[TopicPartition]]


@dataclass(frozen=True)
class Member:
    """One group member: its id, the topics it subscribes to and the partitions it owns now."""

    id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    # Static members (group.instance.id) sort before dynamic ones in Range and RoundRobin.
    group_instance_id: str | None = None


@dataclass(frozen=True)
class GroupSpec:
    """Partitions per topic and the members in join order (the order the coordinator lists them)."""

    topics: Mapping[str, int]
    members: tuple[Member, ...]
    # Optional per-partition weights (lag in messages, rate in messages/s) for weighted balance.
    lag: Mapping[TopicPartition, float] = field(default_factory=dict)
    rate: Mapping[TopicPartition, float] = field(default_factory=dict)
    # The assignor the group uses now (Kafka protocol name), when known.
    assignor: str | None = None

    @cached_property
    def _by_id(self) -> dict[str, Member]:
        # The sticky assignors look every member up by id: a scan of the members each time made one
        # run quadratic in the members (20 s of 30 s at 5,000 members over 1,000 partitions).
        by_id: dict[str, Member] = {}
        for m in self.members:
            by_id.setdefault(m.id, m)
        return by_id

    def member(self, member_id: str) -> Member:
        return self._by_id[member_id]

    def current(self) -> Assignment:
        return {m.id: list(m.owned) for m in self.members}

    def has_current(self) -> bool:
        return any(m.owned for m in self.members)

    def with_owned(self, assignment: Mapping[str, Sequence[TopicPartition]]) -> GroupSpec:
        """The same group after a rebalance: each member owns what ``assignment`` gave it."""
        members = tuple(
            Member(m.id, m.topics, tuple(assignment.get(m.id, ())), m.group_instance_id) for m in self.members
        )
        return GroupSpec(self.topics, members, self.lag, self.rate, self.assignor)

    def without(self, member_id: str) -> GroupSpec:
        members = tuple(m for m in self.members if m.id != member_id)
        return GroupSpec(self.topics, members, self.lag, self.rate, self.assignor)

    def joined(self, member: Member) -> GroupSpec:
        return GroupSpec(self.topics, (*self.members, member), self.lag, self.rate, self.assignor)

    def subscribed_only(self) -> GroupSpec:
        """Only the topics some member subscribes to: the ``partitionsPerTopic`` a Kafka leader sees."""
        wanted = {t for m in self.members for t in m.topics}
        topics = {t: n for t, n in self.topics.items() if t in wanted}
        return GroupSpec(topics, self.members, self.lag, self.rate, self.assignor)

    def subscribed_partitions(self) -> list[TopicPartition]:
        """Every partition of a topic that at least one member subscribes to, sorted."""
        wanted = {t for m in self.members for t in m.topics if t in self.topics}
        return [(t, p) for t in sorted(wanted) for p in range(self.topics[t])]


def _int(value: Any, where: str, name: str, *, minimum: int) -> int:
    return check_int32(value, where, name, minimum=minimum)


def _weights(raw: Any, topics: Mapping[str, int], name: str) -> dict[TopicPartition, float]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ModelError(f"group: field '{name}' must be an object {{topic: [value per partition]}}, got {raw!r}")
    out: dict[TopicPartition, float] = {}
    for topic, values in raw.items():
        if topic not in topics:
            raise ModelError(f"group: field '{name}' names unknown topic {topic!r} (topics: {sorted(topics)})")
        if not isinstance(values, list) or len(values) != topics[topic]:
            raise ModelError(
                f"group: field '{name}.{topic}' must list one number per partition ({topics[topic]}), got {values!r}"
            )
        for p, v in enumerate(values):
            out[(topic, p)] = check_amount(v, "group", f"{name}.{topic}[{p}]")
    return out


def parse_group(data: Any) -> GroupSpec:
    """Validate a what-if document (the G.json format of `kafka-balancer consumers simulate`).

    ``{"topics": {"t0": 4}, "members": [{"id": "C0", "topics": ["t0"], "assignment": {"t0": [0, 1]}}]}``;
    ``assignment`` (the current one), ``groupInstanceId``, ``lag`` and ``rate`` ({topic: [value per
    partition]}) and ``assignor`` (the one in use) are optional.
    """
    if not isinstance(data, Mapping):
        raise ModelError(f"group: must be an object, got {type(data).__name__}")
    extra = sorted(set(data) - {"topics", "members", "lag", "rate", "assignor"})
    if extra:
        raise ModelError(f"group: unknown field '{extra[0]}' (allowed: assignor, lag, members, rate, topics)")
    assignor = data.get("assignor")
    if assignor is not None and assignor not in ASSIGNOR_NAMES:
        raise ModelError(f"group: field 'assignor' must be one of {', '.join(ASSIGNOR_NAMES)}, got {assignor!r}")
    topics = _topics(data.get("topics"))
    raw_members = data.get("members")
    if not isinstance(raw_members, list) or not raw_members:
        raise ModelError(f"group: field 'members' must be a non-empty list, got {raw_members!r}")
    members: list[Member] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_members):
        members.append(_member(i, raw, topics, seen))
    return GroupSpec(
        topics,
        tuple(members),
        _weights(data.get("lag"), topics, "lag"),
        _weights(data.get("rate"), topics, "rate"),
        assignor,
    )


def claimed_twice(spec: GroupSpec) -> list[str]:
    """Partitions in the current assignment of two members. Kafka lets that happen (a member still on
    an older generation), and its sticky assignors then give such a partition to neither claimant
    first; in a what-if file it is more likely a typing slip, so callers warn about it."""
    owner: dict[TopicPartition, str] = {}
    found = []
    for member in spec.members:
        for tp in member.owned:
            if tp in owner:
                found.append(
                    f"partition {tp[0]}-{tp[1]} is in the 'assignment' of both {owner[tp]!r} and {member.id!r} "
                    "(the sticky assignors give it to neither first)"
                )
            owner.setdefault(tp, member.id)
    return found


def _topics(raw_topics: Any) -> dict[str, int]:
    """The ``topics`` field: partitions per topic."""
    if not isinstance(raw_topics, Mapping) or not raw_topics:
        raise ModelError(f"group: field 'topics' must be a non-empty object {{name: partitions}}, got {raw_topics!r}")
    topics: dict[str, int] = {}
    for name, count in raw_topics.items():
        check_topic_name(name, "group", "topics")
        topics[name] = _int(count, f"topic {name!r}", "partitions", minimum=1)
    total = sum(topics.values())
    if total > MAX_GROUP_PARTITIONS:
        raise ModelError(
            f"group: field 'topics' has {total:,} partitions in total, above the {MAX_GROUP_PARTITIONS:,} "
            'a simulation can hold (docs/consumers.md, "Limits")'
        )
    return topics


def _member(i: int, raw: Any, topics: Mapping[str, int], seen: set[str]) -> Member:
    """``members[i]``: its id (not among ``seen``, which it joins), subscription, static instance id
    and current assignment."""
    if not isinstance(raw, Mapping):
        raise ModelError(f"members[{i}]: must be an object, got {raw!r}")
    member_id = raw.get("id")
    where = f"members[{i}] ({member_id!r})"
    extra = sorted(set(raw) - {"id", "topics", "assignment", "groupInstanceId"})
    if extra:
        raise ModelError(f"{where}: unknown field '{extra[0]}' (allowed: assignment, groupInstanceId, id, topics)")
    if not isinstance(member_id, str) or not member_id:
        raise ModelError(f"members[{i}]: field 'id' must be a non-empty string, got {member_id!r}")
    if member_id in seen:
        raise ModelError(f"{where}: duplicate member id {member_id!r}")
    seen.add(member_id)
    subscribed = raw.get("topics")
    if not isinstance(subscribed, list) or not subscribed or not all(isinstance(t, str) for t in subscribed):
        raise ModelError(f"{where}: field 'topics' must be a non-empty list of topic names, got {subscribed!r}")
    instance = raw.get("groupInstanceId")
    if instance is not None and not isinstance(instance, str):
        raise ModelError(f"{where}: field 'groupInstanceId' must be a string, got {instance!r}")
    owned = _assignment(where, raw.get("assignment", {}), topics)
    return Member(member_id, tuple(dict.fromkeys(subscribed)), owned, instance)


def _assignment(where: str, assignment: Any, topics: Mapping[str, int]) -> tuple[TopicPartition, ...]:
    """A member's ``assignment`` field: the partitions it owns now."""
    if not isinstance(assignment, Mapping):
        raise ModelError(f"{where}: field 'assignment' must be an object {{topic: [partitions]}}, got {assignment!r}")
    owned: list[TopicPartition] = []
    for topic, parts in assignment.items():
        if topic not in topics:
            raise ModelError(f"{where}: field 'assignment' names unknown topic {topic!r} (topics: {sorted(topics)})")
        if not isinstance(parts, list):
            raise ModelError(f"{where}: field 'assignment.{topic}' must be a list of partitions, got {parts!r}")
        for p in parts:
            _int(p, where, f"assignment.{topic}", minimum=0)
            if p >= topics[topic]:
                raise ModelError(
                    f"{where}: field 'assignment.{topic}' has partition {p}, but {topic!r} has {topics[topic]}"
                )
            owned.append((topic, p))
    return tuple(owned)

"""StickyAssignor and CooperativeStickyAssignor: a port of Kafka's AbstractStickyAssignor (no racks).

Two paths, as in Kafka: when every member subscribes to the same topics the *constrained* builder
keeps each member's owned partitions up to its quota and deals the rest round robin; otherwise the
*general* builder keeps every valid owned partition, assigns the rest to the least loaded eligible
member, then moves partitions until no move improves balance (reverting if the score got worse).
Kafka's iteration over HashMaps is reproduced with :mod:`javaorder` where it changes the result.
All members are taken to be in the same generation (what a stable group looks like).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from kafka_balancer.consumers.group import Assignment, GroupSpec, TopicPartition
from kafka_balancer.consumers.javaorder import (
    JavaHashSet,
    java_string_key,
    java_string_order,
    topic_partition_hash,
)


class AssignorError(RuntimeError):
    """The assignment could not be completed (Kafka throws IllegalStateException in the same spots)."""


def _owned_partitions(group: GroupSpec) -> tuple[bool, dict[str, list[TopicPartition]], set[TopicPartition]]:
    """``allSubscriptionsEqual``: whether subscriptions are identical, each member's valid owned
    partitions, and the partitions claimed by two members of the same generation (dropped)."""
    owned: dict[str, list[TopicPartition]] = {}
    multiple: set[TopicPartition] = set()
    owner: dict[TopicPartition, str] = {}
    first = set(group.members[0].topics) if group.members else set()
    equal = all(set(m.topics) == first for m in group.members)
    for consumer in java_string_order(m.id for m in group.members):
        mine: list[TopicPartition] = []
        owned[consumer] = mine
        for tp in group.member(consumer).owned:
            if tp[0] not in group.topics:
                continue
            other = owner.get(tp)
            if other is None:
                mine.append(tp)
            else:
                # Same generation: neither keeps it (Kafka logs an error and invalidates the claim).
                multiple.add(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
            owner[tp] = consumer
    return equal, owned, multiple


def _topic_partition_key(tp: TopicPartition) -> tuple[bytes, int]:
    return (java_string_key(tp[0]), tp[1])


class _Constrained:
    """``ConstrainedAssignmentBuilder`` without racks."""

    def __init__(self, group: GroupSpec, owned: dict[str, list[TopicPartition]], multiple: set[TopicPartition]):
        self.group = group
        self.current = owned
        self.multiple = multiple
        self.revoked: set[TopicPartition] = set()
        self.transferring: dict[TopicPartition, str] = {}
        subscribed = set(group.members[0].topics) & set(group.topics)
        self.all_partitions = sorted(
            ((t, p) for t in subscribed for p in range(group.topics[t])), key=_topic_partition_key
        )
        total, members = len(self.all_partitions), len(owned)
        self.min_quota = total // members
        self.max_quota = -(-total // members)
        self.expected_over = total % members
        self.current_over = 0
        self.under_min: list[str] = []
        self.exactly_min: list[str] = []
        self.assignment: Assignment = {c: [] for c in owned}

    def build(self) -> Assignment:
        assigned = self._assign_owned()
        unassigned = [tp for tp in self.all_partitions if tp not in assigned]
        self.under_min.sort(key=java_string_key)
        self.exactly_min.sort(key=java_string_key)
        self._assign_round_robin(unassigned)
        self._verify()
        return self.assignment

    def _assign_owned(self) -> set[TopicPartition]:
        assigned: set[TopicPartition] = set()
        for consumer in java_string_order(self.current):
            # Kafka keeps the lowest partition numbers first (sorted by partition, then topic).
            owned = sorted(self.current[consumer], key=lambda tp: (tp[1], java_string_key(tp[0])))
            owned = [tp for tp in owned if tp not in self.multiple]
            mine = self.assignment[consumer]
            if len(owned) < self.min_quota:
                mine.extend(owned)
                assigned.update(owned)
                self.under_min.append(consumer)
            elif len(owned) >= self.max_quota and self.current_over < self.expected_over:
                self.current_over += 1
                if self.current_over == self.expected_over:
                    self.exactly_min.clear()
                mine.extend(owned[: self.max_quota])
                assigned.update(owned[: self.max_quota])
                self.revoked.update(owned[self.max_quota :])
            else:
                mine.extend(owned[: self.min_quota])
                assigned.update(owned[: self.min_quota])
                self.revoked.update(owned[self.min_quota :])
                if self.current_over < self.expected_over:
                    self.exactly_min.append(consumer)
        return assigned

    def _assign_round_robin(self, unassigned: list[TopicPartition]) -> None:
        # A Java LinkedList iterator over ``under_min`` that supports remove(); re-created when exhausted.
        index = 0
        for tp in unassigned:
            if index < len(self.under_min):
                consumer = self.under_min[index]
                index += 1
                from_iterator = True
            elif not self.under_min and not self.exactly_min:
                raise AssignorError(f"no more unfilled consumers to take {tp[0]}-{tp[1]}")
            elif not self.under_min:
                consumer = self.exactly_min.pop(0)
                from_iterator = False
            else:
                index = 1
                consumer = self.under_min[0]
                from_iterator = True
            count = self._assign_new(tp, consumer)
            if count == self.min_quota:
                if from_iterator:
                    index -= 1
                    del self.under_min[index]
                self.exactly_min.append(consumer)
            elif count == self.max_quota:
                self.current_over += 1

    def _assign_new(self, tp: TopicPartition, consumer: str) -> int:
        mine = self.assignment[consumer]
        mine.append(tp)
        if tp in self.revoked or tp in self.multiple:
            self.transferring[tp] = consumer
        return len(mine)

    def _verify(self) -> None:
        if self.under_min and self.current_over != self.expected_over:
            raise AssignorError(f"{self.current_over} members above the minimum quota, expected {self.expected_over}")
        for consumer in self.under_min:
            if len(self.assignment[consumer]) != self.min_quota:
                raise AssignorError(f"consumer {consumer!r} did not reach its minimum quota {self.min_quota}")


class _SortedConsumers:
    """Kafka's ``TreeSet<String>`` ordered by (assigned partition count, member id).

    Kafka always removes a member before changing its assignment and re-adds it after, so the key
    stored at insertion is the key the TreeSet would compare with.
    """

    def __init__(self, assignment: Assignment):
        self._assignment = assignment
        self._entries: list[tuple[int, bytes, str]] = []
        self._keys: dict[str, tuple[int, bytes, str]] = {}

    def add(self, consumer: str) -> None:
        if consumer in self._keys:
            return
        key = (len(self._assignment[consumer]), java_string_key(consumer), consumer)
        self._keys[consumer] = key
        bisect.insort(self._entries, key)

    def remove(self, consumer: str) -> None:
        key = self._keys.pop(consumer, None)
        if key is not None:
            self._entries.pop(bisect.bisect_left(self._entries, key))

    def __iter__(self) -> Iterator[str]:
        # A snapshot: callers that change the set stop iterating right after, as Kafka's do.
        return iter([e[2] for e in self._entries])

    def first(self) -> str:
        return self._entries[0][2]

    def last(self) -> str:
        return self._entries[-1][2]


class _Movements:
    """``PartitionMovements``: remembers moves so a later move reverses an earlier one instead of
    starting a second chain (the sticky property: no partition of a topic ping-pongs between two members)."""

    def __init__(self) -> None:
        self.moves: dict[TopicPartition, tuple[str, str]] = {}
        self.by_topic: dict[str, dict[tuple[str, str], JavaHashSet[TopicPartition]]] = {}

    def _remove_record(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self.moves.pop(tp)
        topic_moves = self.by_topic[tp[0]]
        topic_moves[pair].discard(tp)
        if not len(topic_moves[pair]):
            del topic_moves[pair]
        if not topic_moves:
            del self.by_topic[tp[0]]
        return pair

    def _add_record(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self.moves[tp] = pair
        topic_moves = self.by_topic.setdefault(tp[0], {})
        if pair not in topic_moves:
            topic_moves[pair] = JavaHashSet(topic_partition_hash)
        topic_moves[pair].add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.moves:
            src, _dst = self._remove_record(tp)
            if src != new:
                self._add_record(tp, (src, new))
        else:
            self._add_record(tp, (old, new))

    def actual_partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        topic_moves = self.by_topic.get(tp[0])
        if topic_moves is None:
            return tp
        if tp in self.moves:
            old = self.moves[tp][0]
        reverse = topic_moves.get((new, old))
        if reverse is None:
            return tp
        return reverse.first()


class _General:
    """``GeneralAssignmentBuilder`` without racks (members subscribe to different topics)."""

    def __init__(self, group: GroupSpec, owned: dict[str, list[TopicPartition]]):
        self.group = group
        self.current: Assignment = owned
        self.topic_consumers: dict[str, list[str]] = {t: [] for t in group.topics}
        self.consumer_topics: dict[str, list[str]] = {}
        for consumer in java_string_order(m.id for m in group.members):
            topics = [t for t in group.member(consumer).topics if t in group.topics]
            self.consumer_topics[consumer] = topics
            for t in topics:
                self.topic_consumers[t].append(consumer)
            self.current.setdefault(consumer, [])
        self.partition_consumer: dict[TopicPartition, str] = {tp: c for c, tps in self.current.items() for tp in tps}
        sorted_topics = sorted(self.topic_consumers, key=lambda t: (len(self.topic_consumers[t]), java_string_key(t)))
        self.sorted_partitions = [(t, p) for t in sorted_topics for p in range(group.topics[t])]
        self.sorted_consumers = _SortedConsumers(self.current)
        self.revocation_required = False
        self.movements = _Movements()

    def build(self) -> Assignment:
        assigned = self._assign_owned()
        unassigned = [tp for tp in self.sorted_partitions if tp not in assigned]
        for consumer in self.current:
            self.sorted_consumers.add(consumer)
        self._balance(unassigned)
        return self.current

    def _assign_owned(self) -> set[TopicPartition]:
        assigned: set[TopicPartition] = set()
        for consumer, partitions in self.current.items():
            subscription = self.group.member(consumer).topics
            for tp in list(partitions):
                if tp[0] not in self.topic_consumers:
                    partitions.remove(tp)
                    self.partition_consumer.pop(tp, None)
                elif tp[0] not in subscription:
                    partitions.remove(tp)
                    self.revocation_required = True
                else:
                    assigned.add(tp)
        return assigned

    def _max_assignment_size(self, consumer: str) -> int:
        return sum(self.group.topics[t] for t in self.consumer_topics[consumer])

    def _is_balanced(self) -> bool:
        smallest = len(self.current[self.sorted_consumers.first()])
        largest = len(self.current[self.sorted_consumers.last()])
        if smallest >= largest - 1:
            return True
        owner = {tp: c for c, tps in self.current.items() for tp in tps}
        for consumer in self.sorted_consumers:
            mine = self.current[consumer]
            count = len(mine)
            if count == self._max_assignment_size(consumer):
                continue
            mine_set = set(mine)
            for topic in self.consumer_topics[consumer]:
                for p in range(self.group.topics[topic]):
                    tp = (topic, p)
                    if tp not in mine_set and tp in owner and count + 1 < len(self.current[owner[tp]]):
                        return False
        return True

    @staticmethod
    def _balance_score(assignment: Assignment) -> int:
        sizes = [len(v) for v in assignment.values()]
        return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1 :])

    def _can_topic_move(self, topic: str) -> bool:
        return len(self.topic_consumers[topic]) >= 2

    def _can_consumer_move(self, consumer: str) -> bool:
        partitions = self.current[consumer]
        if len(partitions) < self._max_assignment_size(consumer):
            return True
        return any(self._can_topic_move(tp[0]) for tp in partitions)

    def _balance(self, unassigned: list[TopicPartition]) -> None:
        initializing = not self.current[self.sorted_consumers.last()]
        for tp in unassigned:
            if not self.topic_consumers[tp[0]]:
                continue
            for consumer in self.sorted_consumers:
                if tp[0] in self.consumer_topics[consumer]:
                    self.sorted_consumers.remove(consumer)
                    self.current[consumer].append(tp)
                    self.partition_consumer[tp] = consumer
                    self.sorted_consumers.add(consumer)
                    break
        fixed_topics = {t for t in self.topic_consumers if not self._can_topic_move(t)}
        reassignable_all = [tp for tp in self.sorted_partitions if tp[0] not in fixed_topics]
        reassignable_new = [tp for tp in unassigned if tp[0] not in fixed_topics]
        fixed: Assignment = {}
        for consumer in self.consumer_topics:
            if not self._can_consumer_move(consumer):
                self.sorted_consumers.remove(consumer)
                fixed[consumer] = self.current.pop(consumer)
        before = {c: list(tps) for c, tps in self.current.items()}
        before_owner = dict(self.partition_consumer)
        if not self.revocation_required:
            self._perform_reassignments(reassignable_new)
        performed = self._perform_reassignments(reassignable_all)
        if not initializing and performed and self._balance_score(self.current) >= self._balance_score(before):
            self.current.clear()
            self.current.update({c: list(tps) for c, tps in before.items()})
            self.partition_consumer = before_owner
        for consumer, partitions in fixed.items():
            self.current[consumer] = partitions

    def _perform_reassignments(self, partitions: list[TopicPartition]) -> bool:
        performed = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                consumer = self.partition_consumer[tp]
                size = len(self.current[consumer])
                if any(size > len(self.current[other]) + 1 for other in self.topic_consumers[tp[0]]):
                    self._reassign(tp)
                    performed = modified = True
        return performed

    def _reassign(self, tp: TopicPartition) -> None:
        new = next(c for c in self.sorted_consumers if tp[0] in self.consumer_topics[c])
        old = self.partition_consumer[tp]
        actual = self.movements.actual_partition_to_move(tp, old, new)
        old = self.partition_consumer[actual]
        self.sorted_consumers.remove(old)
        self.sorted_consumers.remove(new)
        self.movements.move(actual, old, new)
        self.current[old].remove(actual)
        self.current[new].append(actual)
        self.partition_consumer[actual] = new
        self.sorted_consumers.add(new)
        self.sorted_consumers.add(old)


def _sticky(group: GroupSpec) -> tuple[Assignment, dict[TopicPartition, str] | None]:
    """The assignment and, on the constrained path, the partitions it hands from one member to another."""
    if not group.members:
        return {}, {}
    group = group.subscribed_only()
    equal, owned, multiple = _owned_partitions(group)
    if equal:
        builder = _Constrained(group, owned, multiple)
        return builder.build(), builder.transferring
    return _General(group, owned).build(), None


def sticky_assign(group: GroupSpec) -> Assignment:
    """``StickyAssignor`` (eager): members' previous assignments come from their user data."""
    return _sticky(group)[0]


def cooperative_first_round(group: GroupSpec) -> Assignment:
    """``CooperativeStickyAssignor.assignPartitions``: the sticky assignment minus every partition that
    changes owner, which its old owner revokes first; a follow-up rebalance hands them over."""
    assignment, transferring = _sticky(group)
    if transferring is None:
        # computePartitionsTransferringOwnership: added to one member *and* revoked from another.
        added: dict[TopicPartition, str] = {}
        revoked: set[TopicPartition] = set()
        for consumer, partitions in assignment.items():
            owned = group.member(consumer).owned
            added.update({tp: consumer for tp in partitions if tp not in owned})
            revoked.update(tp for tp in owned if tp not in partitions)
        transferring = {tp: c for tp, c in added.items() if tp in revoked}
    for tp, consumer in transferring.items():
        assignment[consumer].remove(tp)
    return assignment


def cooperative_sticky_assign(group: GroupSpec) -> tuple[Assignment, Assignment]:
    """Both rounds of a cooperative rebalance: (what members hold after the first, final assignment).

    Members rejoin owning the first round's partitions; rounds repeat until nothing is withheld
    (one follow-up suffices in practice; three is a guard against a non-converging input).
    """
    total = len(group.subscribed_partitions())
    first = cooperative_first_round(group)
    current = first
    for _ in range(3):
        if sum(map(len, current.values())) == total:
            break
        current = cooperative_first_round(group.with_owned(current))
    return first, current

"""RangeAssignor and RoundRobinAssignor, as org.apache.kafka.clients.consumer defines them.

Both ignore what members own now: every rebalance recomputes the assignment from the member list.
Members are ordered like Kafka's ``MemberInfo``: static members (group.instance.id) first, by
instance id, then dynamic members by member id, compared as Java strings.
"""

from __future__ import annotations

from kafka_balancer.consumers.group import Assignment, GroupSpec, Member, TopicPartition
from kafka_balancer.consumers.javaorder import java_string_key


def member_sort_key(member: Member) -> tuple[int, bytes]:
    """``AbstractPartitionAssignor.MemberInfo.compareTo``."""
    if member.group_instance_id is not None:
        return (0, java_string_key(member.group_instance_id))
    return (1, java_string_key(member.id))


def range_assign(group: GroupSpec) -> Assignment:
    """Per topic, the sorted subscribers get consecutive ranges; the first ``n % c`` get one extra.

    The extra partition goes to the same members for every topic, which is why Range compounds
    imbalance when a group reads many topics whose partition count the member count does not divide.
    """
    assignment: Assignment = {m.id: [] for m in group.members}
    for topic in sorted(group.topics, key=java_string_key):
        consumers = sorted((m for m in group.members if topic in m.topics), key=member_sort_key)
        if not consumers:
            continue
        count = group.topics[topic]
        per_consumer, extra = divmod(count, len(consumers))
        start = 0
        for i, member in enumerate(consumers):
            length = per_consumer + (1 if i < extra else 0)
            assignment[member.id].extend((topic, p) for p in range(start, start + length))
            start += length
    return assignment


def roundrobin_assign(group: GroupSpec) -> Assignment:
    """All subscribed partitions, sorted by topic then partition, dealt to the sorted members in turn,
    skipping members not subscribed to the partition's topic (the circular iterator never resets)."""
    assignment: Assignment = {m.id: [] for m in group.members}
    ring = sorted(group.members, key=member_sort_key)
    if not ring:
        return assignment
    position = 0
    topics = sorted({t for m in group.members for t in m.topics if t in group.topics}, key=java_string_key)
    for topic in topics:
        for partition in range(group.topics[topic]):
            while topic not in ring[position].topics:
                position = (position + 1) % len(ring)
            tp: TopicPartition = (topic, partition)
            assignment[ring[position].id].append(tp)
            position = (position + 1) % len(ring)
    return assignment

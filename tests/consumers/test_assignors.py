"""Kafka's built-in assignors, checked against published results and Kafka's own unit tests.

Each Kafka-derived case names the test it is ported from (apache/kafka, clients/src/test/java/
org/apache/kafka/clients/consumer/...). Assignments are compared as sets per member unless the
Kafka test asserts the list order too.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka_balancer.consumers import (
    GroupSpec,
    Member,
    moved,
    parse_group,
    range_assign,
    roundrobin_assign,
    sticky_assign,
)
from kafka_balancer.consumers.sticky import _sticky, cooperative_first_round, cooperative_sticky_assign
from kafka_balancer.model import ModelError


def group(topics: dict[str, int], *members: tuple[str, list[str]] | dict[str, Any]) -> GroupSpec:
    listed = [m if isinstance(m, dict) else {"id": m[0], "topics": m[1]} for m in members]
    return parse_group({"topics": topics, "members": listed})


def as_sets(assignment: dict[str, list[tuple[str, int]]]) -> dict[str, set[tuple[str, int]]]:
    return {m: set(tps) for m, tps in assignment.items()}


# ----- the three published cases of the issue ---------------------------------------------------
def test_range_one_topic_four_partitions_three_consumers() -> None:
    g = group({"T0": 4}, ("C0", ["T0"]), ("C1", ["T0"]), ("C2", ["T0"]))
    assert range_assign(g) == {"C0": [("T0", 0), ("T0", 1)], "C1": [("T0", 2)], "C2": [("T0", 3)]}


def test_range_two_topics_compounds_the_extra_partition() -> None:
    g = group({"T0": 4, "T1": 4}, ("C0", ["T0", "T1"]), ("C1", ["T0", "T1"]), ("C2", ["T0", "T1"]))
    assert as_sets(range_assign(g)) == {
        "C0": {("T0", 0), ("T0", 1), ("T1", 0), ("T1", 1)},
        "C1": {("T0", 2), ("T1", 2)},
        "C2": {("T0", 3), ("T1", 3)},
    }


def test_roundrobin_uneven_with_different_subscriptions() -> None:
    g = group({"T0": 1, "T1": 2, "T2": 3}, ("C0", ["T0"]), ("C1", ["T0", "T1"]), ("C2", ["T0", "T1", "T2"]))
    assert roundrobin_assign(g) == {
        "C0": [("T0", 0)],
        "C1": [("T1", 0)],
        "C2": [("T1", 1), ("T2", 0), ("T2", 1), ("T2", 2)],
    }


def test_sticky_same_case_is_balanced_as_kafka_documents() -> None:
    # StickyAssignor javadoc: the same subscriptions give C0 [t0p0], C1 [t1p0, t1p1], C2 [t2p0..2].
    g = group({"T0": 1, "T1": 2, "T2": 3}, ("C0", ["T0"]), ("C1", ["T0", "T1"]), ("C2", ["T0", "T1", "T2"]))
    assert as_sets(sticky_assign(g)) == {
        "C0": {("T0", 0)},
        "C1": {("T1", 0), ("T1", 1)},
        "C2": {("T2", 0), ("T2", 1), ("T2", 2)},
    }


def test_sticky_javadoc_example_member_leaves() -> None:
    # StickyAssignor javadoc, example 1: C0, C1, C2 all read t0..t3 (2 partitions each). Both
    # RoundRobin and Sticky start from C0 [t0p0, t1p1, t3p0], C1 [t0p1, t2p0, t3p1], C2 [t1p0, t2p1].
    topics = ["t0", "t1", "t2", "t3"]
    g = group(dict.fromkeys(topics, 2), ("C0", topics), ("C1", topics), ("C2", topics))
    start = {
        "C0": [("t0", 0), ("t1", 1), ("t3", 0)],
        "C1": [("t0", 1), ("t2", 0), ("t3", 1)],
        "C2": [("t1", 0), ("t2", 1)],
    }
    assert roundrobin_assign(g) == start
    assert as_sets(sticky_assign(g)) == as_sets(start)
    # C1 leaves. RoundRobin deals everything again (the javadoc's C0 [t0p0, t1p0, t2p0, t3p0]):
    # besides C1's three partitions, t1p0 and t1p1 change owner too.
    left = g.with_owned(start).without("C1")
    after_rr = roundrobin_assign(left)
    assert as_sets(after_rr) == {"C0": {("t0", 0), ("t1", 0), ("t2", 0), ("t3", 0)},
                                 "C2": {("t0", 1), ("t1", 1), ("t2", 1), ("t3", 1)}}  # fmt: skip
    assert moved(start, after_rr) == 5
    # Sticky keeps everything C0 and C2 own and splits C1's three, 4 partitions each. (Kafka 3.5+
    # deals the orphans in topic-partition order to the sorted under-quota members, so C0 gets t0p1;
    # the javadoc, written for the first algorithm, shows t2p0 there: same stickiness, same balance.)
    after_sticky = sticky_assign(left)
    assert as_sets(after_sticky) == {"C0": {("t0", 0), ("t1", 1), ("t3", 0), ("t0", 1)},
                                     "C2": {("t1", 0), ("t2", 1), ("t2", 0), ("t3", 1)}}  # fmt: skip
    assert moved(start, after_sticky) == 3


# ----- RangeAssignorTest ------------------------------------------------------------------------
MIXED = (
    {"topic1": 3, "topic2": 2},
    ("consumer1", ["topic1"]),
    ("consumer2", ["topic1", "topic2"]),
    ("consumer3", ["topic1"]),
)


def test_range_multiple_consumers_mixed_topics() -> None:
    # RangeAssignorTest.testMultipleConsumersMixedTopics
    assert as_sets(range_assign(group(*MIXED))) == {
        "consumer1": {("topic1", 0)},
        "consumer2": {("topic1", 1), ("topic2", 0), ("topic2", 1)},
        "consumer3": {("topic1", 2)},
    }


def test_range_two_consumers_two_topics_six_partitions() -> None:
    # RangeAssignorTest.testTwoConsumersTwoTopicsSixPartitions
    g = group({"topic1": 3, "topic2": 3}, ("consumer1", ["topic1", "topic2"]), ("consumer2", ["topic1", "topic2"]))
    assert as_sets(range_assign(g)) == {
        "consumer1": {("topic1", 0), ("topic1", 1), ("topic2", 0), ("topic2", 1)},
        "consumer2": {("topic1", 2), ("topic2", 2)},
    }


def test_range_static_members_sort_by_instance_id_first() -> None:
    # MemberInfo.compareTo: static members (group.instance.id) before dynamic ones, by instance id.
    g = group(
        {"t": 3},
        {"id": "a-dynamic", "topics": ["t"]},
        {"id": "z-static", "topics": ["t"], "groupInstanceId": "i1"},
        {"id": "b-static", "topics": ["t"], "groupInstanceId": "i2"},
    )
    assert range_assign(g) == {"a-dynamic": [("t", 2)], "z-static": [("t", 0)], "b-static": [("t", 1)]}


def test_one_consumer_gets_only_subscribed_topics() -> None:
    # RangeAssignorTest / RoundRobinAssignorTest.testOnlyAssignsPartitionsFromSubscribedTopics
    g = group({"topic": 3, "other": 3}, ("consumer", ["topic"]))
    for assign in (range_assign, roundrobin_assign, sticky_assign):
        assert as_sets(assign(g)) == {"consumer": {("topic", 0), ("topic", 1), ("topic", 2)}}


def test_two_consumers_one_partition_leave_one_idle() -> None:
    # RangeAssignorTest / RoundRobinAssignorTest.testTwoConsumersOneTopicOnePartition
    g = group({"topic": 1}, ("consumer1", ["topic"]), ("consumer2", ["topic"]))
    for assign in (range_assign, roundrobin_assign, sticky_assign):
        assert as_sets(assign(g)) == {"consumer1": {("topic", 0)}, "consumer2": set()}


# ----- RoundRobinAssignorTest -------------------------------------------------------------------
def test_roundrobin_multiple_consumers_mixed_topics() -> None:
    # RoundRobinAssignorTest.testMultipleConsumersMixedTopics
    assert as_sets(roundrobin_assign(group(*MIXED))) == {
        "consumer1": {("topic1", 0)},
        "consumer2": {("topic1", 1), ("topic2", 0), ("topic2", 1)},
        "consumer3": {("topic1", 2)},
    }


def test_roundrobin_two_consumers_two_topics_six_partitions() -> None:
    # RoundRobinAssignorTest.testTwoConsumersTwoTopicsSixPartitions
    g = group({"topic1": 3, "topic2": 3}, ("consumer1", ["topic1", "topic2"]), ("consumer2", ["topic1", "topic2"]))
    assert roundrobin_assign(g) == {
        "consumer1": [("topic1", 0), ("topic1", 2), ("topic2", 1)],
        "consumer2": [("topic1", 1), ("topic2", 0), ("topic2", 2)],
    }


# ----- StickyAssignorTest / AbstractStickyAssignorTest / CooperativeStickyAssignorTest ----------
def test_sticky_two_consumers_two_topics_six_partitions() -> None:
    # AbstractStickyAssignorTest.testTwoConsumersTwoTopicsSixPartitions (list order asserted there too)
    g = group({"topic1": 3, "topic2": 3}, ("consumer1", ["topic1", "topic2"]), ("consumer2", ["topic1", "topic2"]))
    result = sticky_assign(g)
    assert result["consumer1"] == [("topic1", 0), ("topic1", 2), ("topic2", 1)]
    assert result["consumer2"] == [("topic1", 1), ("topic2", 0), ("topic2", 2)]


def test_sticky_mixed_topic_subscriptions_general_path() -> None:
    # AbstractStickyAssignorTest.testMultipleConsumersMixedTopicSubscriptions
    assert as_sets(sticky_assign(group(*MIXED))) == {
        "consumer1": {("topic1", 0), ("topic1", 2)},
        "consumer2": {("topic2", 0), ("topic2", 1)},
        "consumer3": {("topic1", 1)},
    }


def test_sticky_add_remove_consumer_one_topic() -> None:
    # AbstractStickyAssignorTest.testAddRemoveConsumerOneTopic
    g = group({"topic": 3}, ("consumer1", ["topic"]))
    first = sticky_assign(g)
    assert first == {"consumer1": [("topic", 0), ("topic", 1), ("topic", 2)]}
    two = g.with_owned(first).joined(Member("consumer2", ("topic",)))
    second, transferring = _sticky(two)
    assert transferring == {("topic", 2): "consumer2"}
    assert second["consumer1"] == [("topic", 0), ("topic", 1)]
    assert second["consumer2"] == [("topic", 2)]
    alone = two.with_owned(second).without("consumer1")
    third, transferring = _sticky(alone)
    assert set(third["consumer2"]) == {("topic", 0), ("topic", 1), ("topic", 2)}
    assert transferring == {}


def test_sticky_add_remove_two_consumers_two_topics_exact_order() -> None:
    # AbstractStickyAssignorTest.testAddRemoveTwoConsumersTwoTopics (Kafka 3.5+ version): the exact
    # lists depend on Java HashMap iteration order, which javaorder reproduces.
    both = ["topic1", "topic2"]
    g = group({"topic1": 3, "topic2": 4}, ("consumer1", both), ("consumer2", both))
    first = sticky_assign(g)
    assert first["consumer1"] == [("topic1", 0), ("topic1", 2), ("topic2", 1), ("topic2", 3)]
    assert first["consumer2"] == [("topic1", 1), ("topic2", 0), ("topic2", 2)]
    four = g.with_owned(first).joined(Member("consumer3", tuple(both))).joined(Member("consumer4", tuple(both)))
    second, transferring = _sticky(four)
    assert transferring == {("topic1", 2): "consumer3", ("topic2", 3): "consumer3", ("topic2", 2): "consumer4"}
    assert second["consumer1"] == [("topic1", 0), ("topic2", 1)]
    assert second["consumer2"] == [("topic2", 0), ("topic1", 1)]
    assert second["consumer3"] == [("topic1", 2), ("topic2", 3)]
    assert second["consumer4"] == [("topic2", 2)]
    two = four.with_owned(second).without("consumer1").without("consumer2")
    third, transferring = _sticky(two)
    assert third["consumer3"] == [("topic1", 2), ("topic2", 3), ("topic1", 0), ("topic2", 1)]
    assert third["consumer4"] == [("topic2", 2), ("topic1", 1), ("topic2", 0)]
    assert transferring == {}


def test_sticky_owned_partitions_kept_and_one_transferred() -> None:
    # CooperativeStickyAssignorTest (consumer3 joins two members owning two partitions each):
    # one member keeps maxQuota, the other gives up topic2-0, which cooperative withholds.
    both = ["topic1", "topic2"]
    g = group(
        {"topic1": 2, "topic2": 2},
        {"id": "consumer1", "topics": both, "assignment": {"topic1": [0], "topic2": [0]}},
        {"id": "consumer2", "topics": both, "assignment": {"topic1": [1], "topic2": [1]}},
        {"id": "consumer3", "topics": both},
    )
    assignment, transferring = _sticky(g)
    assert transferring == {("topic2", 0): "consumer3"}
    assert as_sets(assignment) == {
        "consumer1": {("topic1", 0)},
        "consumer2": {("topic1", 1), ("topic2", 1)},
        "consumer3": {("topic2", 0)},
    }
    first = cooperative_first_round(g)
    assert first["consumer3"] == []  # revoked by consumer1 first, handed over in the follow-up
    rounds = cooperative_sticky_assign(g)
    assert as_sets(rounds[1]) == as_sets(assignment)


def test_sticky_all_consumers_under_min_quota() -> None:
    # AbstractStickyAssignorTest.testAllConsumersAreUnderMinQuota
    both = ["topic1", "topic2"]
    g = group(
        {"topic1": 2, "topic2": 3},
        {"id": "consumer1", "topics": both, "assignment": {"topic1": [0]}},
        {"id": "consumer2", "topics": both, "assignment": {"topic1": [1]}},
        {"id": "consumer3", "topics": both},
    )
    assignment, transferring = _sticky(g)
    assert transferring == {}
    assert assignment["consumer1"] == [("topic1", 0), ("topic2", 1)]
    assert assignment["consumer2"] == [("topic1", 1), ("topic2", 2)]
    assert assignment["consumer3"] == [("topic2", 0)]


def test_sticky_partition_claimed_twice_goes_to_nobody_first() -> None:
    # AbstractStickyAssignor: two members of one generation claiming one partition lose the claim.
    g = group(
        {"t": 2},
        {"id": "a", "topics": ["t"], "assignment": {"t": [0, 1]}},
        {"id": "b", "topics": ["t"], "assignment": {"t": [0]}},
    )
    assignment, transferring = _sticky(g)
    assert as_sets(assignment) == {"a": {("t", 1)}, "b": {("t", 0)}}
    assert transferring == {("t", 0): "b"}


def test_sticky_general_path_member_leaving_moves_only_its_partitions() -> None:
    # In the spirit of AbstractStickyAssignorTest.testReassignmentAfterOneConsumerLeaves: unequal
    # subscriptions, consumer i subscribes to topics 1..i; after one leaves, everybody else keeps all.
    topics = {f"topic{i:02d}": i for i in range(1, 8)}
    members = [(f"consumer{i:02d}", [f"topic{j:02d}" for j in range(1, i + 1)]) for i in range(1, 8)]
    g = group(topics, *members)
    first = sticky_assign(g)
    assert sorted(tp for tps in first.values() for tp in tps) == sorted(g.subscribed_partitions())
    after = sticky_assign(g.with_owned(first).without("consumer04"))
    for member, tps in after.items():
        assert set(first[member]) <= set(tps)


def test_bad_group_file_errors_name_the_field() -> None:
    with pytest.raises(ModelError, match=r"members\[0\] \('C0'\): field 'assignment' names unknown topic 'x'"):
        parse_group({"topics": {"t": 1}, "members": [{"id": "C0", "topics": ["t"], "assignment": {"x": [0]}}]})
    with pytest.raises(ModelError, match=r"field 'assignment.t' has partition 4, but 't' has 2"):
        parse_group({"topics": {"t": 2}, "members": [{"id": "C0", "topics": ["t"], "assignment": {"t": [4]}}]})
    with pytest.raises(ModelError, match=r"topic 't': field 'partitions' must be an integer in 1..2147483647, got 0"):
        parse_group({"topics": {"t": 0}, "members": [{"id": "C0", "topics": ["t"]}]})
    with pytest.raises(ModelError, match=r"duplicate member id 'C0'"):
        parse_group({"topics": {"t": 1}, "members": [{"id": "C0", "topics": ["t"]}, {"id": "C0", "topics": ["t"]}]})

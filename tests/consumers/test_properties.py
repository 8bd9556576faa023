"""Properties every simulated assignor must keep, on random groups (hypothesis).

The invariants are the ones Kafka's own tests check after each case (AbstractStickyAssignorTest's
``verifyValidityAndBalance``): each subscribed partition is owned exactly once, only by a subscriber;
the sticky assignors are fully balanced when subscriptions are equal, and when one member leaves they
move only that member's partitions.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_balancer.consumers import ASSIGNOR_NAMES, GroupSpec, Member, assign
from kafka_balancer.consumers.simulate import leave_churn

TOPICS = ("orders", "payments", "t0", "T1", "clicks")
# Mixed case and digits: member order is Java String order (upper case before lower, "m-10" < "m-9").
MEMBER_IDS = ("C0", "C1", "c2", "B", "zeta", "Alpha", "m-10", "m-9", "consumer-1-4f2a")


@st.composite
def groups(draw: st.DrawFn, *, equal: bool) -> GroupSpec:
    names = draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=4, unique=True))
    topics = {t: draw(st.integers(1, 7)) for t in names}
    ids = draw(st.lists(st.sampled_from(MEMBER_IDS), min_size=1, max_size=6, unique=True))
    members = []
    for member_id in ids:
        subscribed = names if equal else draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        # A previous assignment, possibly overlapping another member's or covering unsubscribed
        # topics (a member that changed its subscription): the sticky assignors must cope with both.
        owned = draw(st.lists(st.sampled_from([(t, p) for t in names for p in range(topics[t])]), unique=True))
        members.append(Member(member_id, tuple(subscribed), tuple(owned)))
    return GroupSpec(topics, tuple(members))


def subscribed(group: GroupSpec) -> list[tuple[str, int]]:
    return sorted({(t, p) for m in group.members for t in m.topics for p in range(group.topics[t])})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group=groups(equal=False))
def test_each_subscribed_partition_owned_once_by_a_subscriber(group: GroupSpec) -> None:
    for name in ASSIGNOR_NAMES:
        assignment = assign(name, group)
        owned = sorted(tp for tps in assignment.values() for tp in tps)
        assert owned == subscribed(group), name
        for member in group.members:
            assert {t for t, _p in assignment[member.id]} <= set(member.topics), (name, member.id)


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
@settings(max_examples=100, deadline=None)
@given(group=groups(equal=True))
def test_sticky_balanced_and_a_leaver_moves_only_its_own(name: str, group: GroupSpec) -> None:
    base = assign(name, group)
    sizes = [len(tps) for tps in base.values()]
    assert max(sizes) - min(sizes) <= 1
    for member_id, churn in leave_churn(name, group, base).items():
        assert churn["moved"] == len(base[member_id])
        assert churn["movedBeyondLeaver"] == 0

"""What keeps a round of the per-topic passes productive at millions of replicas: a batch that needs
many drop passes still settles, offers are taken one topic at a time, topics do not all send
their replicas to the same few brokers, and they look for destinations in their own group."""

from __future__ import annotations

import dataclasses

import numpy as np
from checks import one_rack_per_broker
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.planner import GroupOptions, PlannerOptions, plan
from kafka_balancer.planner.base.resource_groups import resolve_groups
from kafka_balancer.planner.base.round_bands import compute_bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.base.together import accept_together
from kafka_balancer.planner.catalogue import CATALOGUE, Q_REPLICAS
from kafka_balancer.planner.distribution.topic_swaps import most_needed
from kafka_balancer.planner.distribution.topic_targets import _tie_break
from kafka_balancer.planner.distribution.topics import _proposals, balance_topic_goal
from kafka_balancer.planner.tuning import TUNING

NUM_Q = CATALOGUE.size


def test_a_long_chain_of_refused_moves_does_not_sink_the_batch() -> None:
    # 40 brokers with one replica each, every one at the top of its replica band except broker 39.
    # Moves i -> i+1 for i < 30: broker 30 would end with two, so 29 -> 30 goes, then broker 29
    # would keep the one from 28, so 28 -> 29 goes, ... one link per pass, 30 passes in all.
    # The move 38 -> 39 is independent of the chain and fits: it must be kept.
    brokers = 40
    model = one_rack_per_broker([("t", b, [b], 1e9) for b in range(brokers)], brokers=brokers)
    options = PlannerOptions(hard_goals=(), distribution_goals=("replica-distribution",))
    st = State(model, options, resolve_groups(model, options))
    bands = compute_bands(st)
    upper = np.full((brokers, NUM_Q), np.inf)
    lower = np.full((brokers, NUM_Q), -np.inf)
    upper[:, Q_REPLICAS] = 1.0
    upper[39, Q_REPLICAS] = 2.0
    lower[:, Q_REPLICAS] = 0.0
    bands = dataclasses.replace(bands, upper=upper, lower=lower)
    chain = 30
    assert 12 < chain < TUNING.drop_passes  # longer than the old limit, within the new one
    src = np.r_[np.arange(chain), 38]
    dst = np.r_[np.arange(1, chain + 1), 39]
    v = np.zeros((src.size, NUM_Q))
    v[:, Q_REPLICAS] = 1.0
    keep = accept_together(st, bands, src=src, dst=dst, v=v)
    assert keep.tolist() == [False] * chain + [True]


def test_offers_are_taken_one_topic_at_a_time() -> None:
    # Topic 0 is far over its band on broker 0 (10 offers), topics 1-3 one over on broker 1. With
    # room for 5 offers, every topic gets its first turn before topic 0 gets a second one.
    counts = np.zeros((4, 2), dtype=np.int32)
    counts[0, 0], counts[1:, 1] = 20, 2
    hi = np.array([10.0, 1.0, 1.0, 1.0])
    topics = np.r_[np.zeros(10, dtype=np.int64), [1, 2, 3]]
    src = np.r_[np.zeros(10, dtype=np.int64), [1, 1, 1]]
    picked = most_needed(counts, hi, topics, src, limit=5)
    assert sorted(topics[picked].tolist()) == [0, 0, 1, 2, 3]
    assert np.all(np.diff(picked) > 0)  # kept in their original order
    assert most_needed(counts, hi, topics, src, limit=20).tolist() == list(range(13))


def test_topics_break_count_ties_on_different_brokers() -> None:
    # 2,000 topics with none of their replicas anywhere: the broker each would fill first must
    # spread over the brokers, not be the same one for every topic; and it must not change
    # between calls (plans are deterministic).
    topics = np.arange(2000)
    jitter = _tie_break(topics, 60)
    assert jitter.shape == (2000, 60)
    assert jitter.min() >= 0.0
    assert jitter.max() < 0.5  # never outweighs one replica of difference
    first = np.argmin(jitter, axis=1)
    per_broker = np.bincount(first, minlength=60)
    assert per_broker.min() >= 10, per_broker
    assert per_broker.max() <= 70, per_broker
    assert np.array_equal(_tie_break(topics[::7], 60), jitter[::7])


def _three_groups_of_small_topics() -> tuple[ClusterModel, tuple[GroupOptions, ...]]:
    """3 resource groups of 15 brokers (5 per rack), 80 topics of 1-14 partitions each, skewed onto
    each group's first brokers."""
    rng = np.random.default_rng(5)
    builder = ClusterBuilder()
    per_group = 15
    for b in range(3 * per_group):
        builder.add_broker(b, rack=f"rack-{b % 3}")
    weight = np.arange(per_group) + 1.0
    groups = []
    for g in range(3):
        base = g * per_group
        for t in range(80):
            for p in range(int(rng.integers(1, 15))):
                replicas = []
                for rack in range(3):
                    members = np.arange(rack, per_group, 3)
                    w = weight[members] / weight[members].sum()
                    replicas.append(base + int(rng.choice(members, p=w)))
                size = float(1e9 * rng.lognormal(0, 1))
                builder.add_partition(
                    f"g{g}-t{t}",
                    p,
                    replicas,
                    size_bytes=size,
                    bytes_in_per_sec=size / 1e4,
                    bytes_out_per_sec=size / 5e3,
                )
        groups.append(GroupOptions(f"g{g}", tuple(range(base, base + per_group)), topic_patterns=(f"g{g}-.*",)))
    return builder.build(), tuple(groups)


def test_a_topic_looks_for_destinations_among_its_own_groups_brokers() -> None:
    # With 5 brokers per rack in each group, the 4 emptiest brokers per rack a topic may send a
    # replica to were also chosen among the other groups' brokers (which hold none of it), where it
    # may not go: the per-topic replica goal ended out of band. Among its own group's brokers only,
    # every goal holds, and nothing crosses a group boundary.
    model, groups = _three_groups_of_small_topics()
    proposal = plan(model, PlannerOptions(resource_groups=groups))
    assert proposal.summary["goalsViolated"] == []
    for target in proposal.plan.partitions:
        group = int(target.topic[1])
        assert all(group * 15 <= b < (group + 1) * 15 for b in target.replicas), target


def _counts_fixed(model: ClusterModel) -> State:
    """A plan's state in which every broker's replica count must stay as it is (a 1.0 threshold):
    only swaps can even out a topic."""
    options = PlannerOptions(
        hard_goals=(),
        distribution_goals=("replica-distribution", "topic-replica-distribution"),
        balance_threshold=1.0,
    )
    return State(model, options, resolve_groups(model, options))


def test_swaps_even_out_two_topics_when_no_broker_may_take_one_more_replica() -> None:
    # 12 brokers of 40 replicas each (one rack each): topic "big" has 24 on each of brokers 0-3 and 3
    # on each of 4-11, topic "fill" the rest. Under a 1.0 threshold every broker's replica count must
    # stay at 40, so no one-way move is allowed: only swaps of a "big" replica for a "fill" one.
    partitions: list[tuple[str, int, list[int], float]] = []
    for b in range(12):
        big = 24 if b < 4 else 3
        partitions += [("big", b * 40 + i, [b], 1e6) for i in range(big)]
        partitions += [("fill", b * 40 + i, [b], 1e6) for i in range(big, 40)]
    model = one_rack_per_broker(partitions, brokers=12)
    st = _counts_fixed(model)
    with st.scoped(guarded=frozenset(st.options.distribution_goals)):
        moved = balance_topic_goal(st, "topic-replica-distribution", size_cap=1.0)
    assert moved > 0, moved
    assert np.bincount(st.rep[:, 0], minlength=12).tolist() == [40] * 12
    assert st.tcount[0].tolist() == [10] * 12
    assert st.tcount[1].tolist() == [30] * 12


def test_a_broker_far_below_a_topic_band_takes_what_it_lacks_in_one_round() -> None:
    # Broker 0 holds none of topic "t", brokers 1-11 hold 11 each (band 9-12 at a 1.1 threshold):
    # one round brings broker 0 up to the band's lower edge, one replica from each of nine brokers,
    # not one replica per round (at 96 brokers of bench.strong_skew the topic's 40 rounds ran out
    # with brokers 40 to 214 replicas short).
    partitions = [("t", b * 11 + i, [b], 1e6) for b in range(1, 12) for i in range(11)]
    model = one_rack_per_broker(partitions, brokers=12)
    options = PlannerOptions(hard_goals=(), distribution_goals=("topic-replica-distribution",))
    st = State(model, options, resolve_groups(model, options))
    lo = compute_bands(st).topic_lo[0]
    assert lo == 9
    with st.scoped(guarded=frozenset(options.distribution_goals)):
        balance_topic_goal(st, "topic-replica-distribution", rounds=1)
    counts = st.tcount[0]
    assert counts[0] == lo, counts
    assert counts[1:].min() >= lo, counts


def test_swap_partners_are_found_past_replicas_whose_topic_cannot_leave() -> None:
    # Two brokers of 124 replicas each, every count fixed by a 1.0 threshold, so only swaps can even
    # out topics "t" (4 replicas on broker 1, band 2-2) and "u" (4 on broker 0). Between them in size
    # sit 120 topics of one replica on each broker (band 1-1): none may leave, and on broker 0 they
    # fill the 48 positions on each side of a "t" replica's size. The swaps must still pair "t" with "u".
    partitions: list[tuple[str, int, list[int], float]] = [("t", p, [1], 1.0) for p in range(4)]
    partitions += [("u", p, [0], 1000.0) for p in range(4)]
    partitions += [(f"fixed-{i}", b, [b], 2.0 + i * 1e-3) for i in range(120) for b in range(2)]
    model = one_rack_per_broker(partitions, brokers=2)
    st = _counts_fixed(model)
    t, u = (list(model.topics).index(name) for name in ("t", "u"))
    with st.scoped(guarded=frozenset(st.options.distribution_goals)):
        balance_topic_goal(st, "topic-replica-distribution", size_cap=1.0)
    assert st.tcount[t].tolist() == [2, 2]
    assert st.tcount[u].tolist() == [2, 2]
    assert np.bincount(st.rep[:, 0], minlength=2).tolist() == [124, 124]


def test_a_broker_leading_far_too_many_of_a_topic_offers_them_all_in_one_round() -> None:
    # Broker 0 leads all 30 partitions of topic "t", whose followers are on brokers 1-5 (6 each):
    # band 4-6. One round offers each of them the 4 leaderships it lacks, 20 in all; it offered one
    # (one per topic and new leader's slot, and one per giving broker), and at 1.3M replicas of
    # bench.strong_skew the topic-leader goal's rounds stalled with 4,478 leaderships out of band.
    partitions = [("t", p, [0, 1 + p % 5], 1e6) for p in range(30)]
    model = one_rack_per_broker(partitions, brokers=6)
    options = PlannerOptions(hard_goals=(), distribution_goals=("topic-leader-distribution",))
    st = State(model, options, resolve_groups(model, options))
    bands = compute_bands(st)
    assert (bands.lead_lo[0], bands.lead_hi[0]) == (4, 6)
    size_rank = np.argsort(np.argsort(model.size_bytes, kind="stable"))
    parts, _, new_slots = _proposals(st, bands, leaders=True, nracks=st.group_racks(), size_rank=size_rank)
    new_leaders = st.rep[parts, new_slots]
    assert np.bincount(new_leaders, minlength=6).tolist() == [0, 4, 4, 4, 4, 4]
    with st.scoped(guarded=frozenset(options.distribution_goals)):
        balance_topic_goal(st, "topic-leader-distribution", rounds=1)
    assert st.tlead[0, 0] <= 6
    assert st.tlead[0, 1:].min() >= 4


def test_swap_offers_look_for_partners_beyond_the_topics_emptiest_broker() -> None:
    # Broker 0 holds 12 of topic "t", brokers 1-5 none (band 1-3): its swap offers go to several of
    # them, not all to the one holding fewest of "t" (whose few partners near in size
    # were all the offers could find: at 96 brokers of bench.strong_skew a topic ended 122 replicas
    # out of band, a few swaps a round).
    partitions = [("t", p, [0], 1.0) for p in range(12)]
    partitions += [(f"u-{b}", 12 + b, [b], 1.0) for b in range(1, 6)]
    model = one_rack_per_broker(partitions, brokers=6)
    options = PlannerOptions(hard_goals=(), distribution_goals=("topic-replica-distribution",))
    st = State(model, options, resolve_groups(model, options))
    size_rank = np.argsort(np.argsort(model.size_bytes, kind="stable"))
    offers = _proposals(
        st, compute_bands(st), leaders=False, nracks=st.group_racks(), size_rank=size_rank, for_swaps=True
    )
    assert len(set(offers[2].tolist())) >= 3

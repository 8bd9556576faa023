"""What keeps a round of the per-topic passes productive at millions of replicas: a batch that needs
many drop passes still settles, offers are taken one topic at a time, and topics do not all
send their replicas to the same few brokers."""

from __future__ import annotations

import dataclasses

import numpy as np
from checks import one_rack_per_broker
from kafka_balancer.planner import PlannerOptions
from kafka_balancer.planner.select import DROP_PASSES, accept_together, compute_bands
from kafka_balancer.planner.state import NUM_Q, Q_REPLICAS, State, resolve_groups
from kafka_balancer.planner.topic_swaps import most_needed
from kafka_balancer.planner.topics import _tie_break


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
    assert chain > 12 and chain < DROP_PASSES  # longer than the old limit, within the new one
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
    assert jitter.min() >= 0.0 and jitter.max() < 0.5  # never outweighs one replica of difference
    first = np.argmin(jitter, axis=1)
    per_broker = np.bincount(first, minlength=60)
    assert per_broker.min() >= 10 and per_broker.max() <= 70, per_broker
    assert np.array_equal(_tie_break(topics[::7], 60), jitter[::7])

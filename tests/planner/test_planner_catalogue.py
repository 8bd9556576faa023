"""The goal catalogue is the one home of what a goal is: the CRD names the same goals, and a goal
added to a catalogue (one record and its loader, docs/goals.md "Adding a goal") plans."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from checks import one_rack_per_broker
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.cluster import FloatArray, IntArray
from kafka_balancer.model.policy.balance_policy import Goals
from kafka_balancer.model.policy.fields import DISTRIBUTION_GOALS, HARD_GOALS
from kafka_balancer.planner import (
    CATALOGUE,
    Catalogue,
    Exchange,
    Goal,
    OperationOptions,
    PlannerOptions,
    PlanningError,
    Quantity,
    Trace,
    plan,
)
from kafka_balancer.planner.groups import merge
from kafka_balancer.planner.pipeline.distribution import FINISHING

from bench.synthetic import skewed_cluster


def test_the_crd_and_the_catalogue_name_the_same_goals_in_the_same_order() -> None:
    assert set(HARD_GOALS) | set(DISTRIBUTION_GOALS) == {g.name for g in CATALOGUE.goals}
    # The defaults (a policy without spec.goals, PlannerOptions()) list them in the same order.
    assert tuple(HARD_GOALS) == CATALOGUE.hard_goals
    assert tuple(DISTRIBUTION_GOALS) == CATALOGUE.distribution_goals
    assert PlannerOptions().hard_goals == CATALOGUE.hard_goals
    assert Goals().hard == list(CATALOGUE.hard_goals)
    assert Goals().distribution == list(CATALOGUE.distribution_goals)


def test_the_catalogue_refuses_a_goal_on_an_unknown_quantity() -> None:
    with pytest.raises(ValueError, match="unknown quantity 'messages-in'"):
        CATALOGUE.with_goals(Goal("messages-in-distribution", "distribution", "messages-in"))


def _messages_in(model: ClusterModel, _rf: IntArray) -> tuple[FloatArray, float]:
    """Messages in per second count where they are produced: on the leader only."""
    return model.messages_in, 0.0


MESSAGES_IN = Quantity("messages-in", count=False, leadership="all", load=_messages_in)
MESSAGES_GOAL = Goal("messages-in-distribution", "distribution", "messages-in", frozenset({Exchange.TRADES}))


def _cluster_with_uneven_messages() -> ClusterModel:
    """A skewed cluster whose topics' message sizes differ (so messages in do not follow bytes in)."""
    model = skewed_cluster(brokers=12, new_brokers=3, partitions=2000, rf=3, seed=7)
    rng = np.random.default_rng(3)
    message_size = rng.lognormal(6.0, 1.5, len(model.topics))[model.partition_topic]
    return dataclasses.replace(model, messages_in=model.bytes_in / message_size)


def test_a_goal_registered_from_the_catalogue_alone_plans() -> None:
    catalogue = CATALOGUE.with_goals(MESSAGES_GOAL, quantities=[MESSAGES_IN])
    model = _cluster_with_uneven_messages()
    add = OperationOptions("add-brokers", brokers=(9, 10, 11))
    goals = (*CATALOGUE.distribution_goals, MESSAGES_GOAL.name)
    options = PlannerOptions(catalogue=catalogue, distribution_goals=goals, operation=add)

    proposal = plan(model, options)

    summary = proposal.summary
    stats = summary["goals"][MESSAGES_GOAL.name]
    assert not stats["holdsBefore"], stats
    assert stats["holdsAfter"], stats
    assert summary["goalsViolated"] == [], summary["goalsViolated"]
    after = summary["groups"]["cluster"]["after"]["messages-in"]
    assert after["maxOverAvg"] <= 1.10 + 1e-9, after
    assert after["minOverAvg"] >= 0.90 - 1e-9, after
    # The plan without the goal leaves messages in out of band: the goal, not chance, holds them.
    without = plan(model, dataclasses.replace(options, distribution_goals=CATALOGUE.distribution_goals))
    judged = merge(model, options, without.plan.partitions).summary["goals"][MESSAGES_GOAL.name]
    assert not judged["holdsAfter"], judged


def test_options_name_the_goals_of_their_catalogue() -> None:
    with pytest.raises(PlanningError, match=r"goals\.distribution"):
        PlannerOptions(distribution_goals=(MESSAGES_GOAL.name,))
    catalogue = CATALOGUE.with_goals(MESSAGES_GOAL, quantities=[MESSAGES_IN])
    assert PlannerOptions(catalogue=catalogue, distribution_goals=(MESSAGES_GOAL.name,)).distribution_goals


def test_a_leader_count_goal_under_another_name_gets_the_leader_count_finishing() -> None:
    # The finishing pass that evens leader counts out to the rounded average applies to a goal over a
    # count only leaders carry, whatever the goal is called. 30 identical partitions on all 3 brokers,
    # led 11/10/9: inside the band, so only that pass (leadership is free) evens them out.
    renamed = Catalogue(
        tuple(
            dataclasses.replace(g, name="leaders-even") if g.name == "leader-count-distribution" else g
            for g in CATALOGUE.goals
        )
    )
    parts = [
        (f"t{p % 10}", p // 10, [b % 3, (b + 1) % 3, (b + 2) % 3], 1e9)
        for p, b in enumerate([0] * 11 + [1] * 10 + [2] * 9)
    ]
    model = one_rack_per_broker(parts, brokers=3)
    options = PlannerOptions(catalogue=renamed, distribution_goals=renamed.distribution_goals)
    trace = Trace()

    proposal = plan(model, options, trace=trace)

    leaders = {(c.topic, c.partition): model.broker_index(c.new_leader) for c in proposal.leader_changes}
    led = [leaders.get((model.topic_name(p), int(model.partition_id[p])), int(model.leader[p])) for p in range(30)]
    assert np.bincount(led, minlength=3).tolist() == [10, 10, 10]
    assert proposal.summary["moves"] == 0
    finishing = {stage.name for stage in FINISHING}
    assert "leader counts to the average" in [s.name for s in trace.steps if s.name in finishing]


def test_an_early_turn_after_a_goal_that_is_not_a_distribution_goal_is_refused() -> None:
    early = Goal("topic-spread-2", "topic", "replicas", early_after="rack-awareness")
    with pytest.raises(ValueError, match="field 'early_after' of 'topic-spread-2' names 'rack-awareness'"):
        CATALOGUE.with_goals(early)

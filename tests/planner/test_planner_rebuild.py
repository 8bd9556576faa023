"""Rebuilding rounds (planner/finishing/rebuild.py): undo a tenth of the moves, plan again, keep what moves less."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.planner import GroupOptions, OperationOptions, PlannerOptions, pipeline, plan
from kafka_balancer.planner.base.resource_groups import resolve_groups
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.finishing import rebuild
from kafka_balancer.planner.groups import merge, plan_group, split
from kafka_balancer.planner.tuning import TUNING

from bench.synthetic import disk_lower_bound, skewed_cluster


def _add_brokers(brokers: int, new: int) -> PlannerOptions:
    return PlannerOptions(operation=OperationOptions("add-brokers", brokers=tuple(range(brokers - new, brokers))))


def _without_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rebuild, "TUNING", dataclasses.replace(TUNING, rebuild_max_rounds=0))


def test_rounds_move_fewer_bytes_and_every_goal_ends_as_close_to_its_band(monkeypatch: pytest.MonkeyPatch) -> None:
    model = skewed_cluster(brokers=12, new_brokers=3, partitions=2000, rf=3, skew=1.0, seed=3)
    options = _add_brokers(12, 3)
    with_rounds = plan(model, options).summary
    with monkeypatch.context() as m:
        _without_rounds(m)
        greedy = plan(model, options).summary
    bound = disk_lower_bound(model)
    # Measured: 1.041x the disk-only bound without the rounds, 1.032x with them.
    assert with_rounds["bytesToMove"] < 0.995 * greedy["bytesToMove"], with_rounds["bytesToMove"] / bound
    assert with_rounds["goalsViolated"] == [] == greedy["goalsViolated"]
    for goal, stats in with_rounds["goals"].items():
        assert stats["violationAfter"] <= greedy["goals"][goal]["violationAfter"] + 1e-9, goal
    # The same plan every time: the undone moves are drawn from a seeded generator.
    assert plan(model, options).summary["proposalId"] == with_rounds["proposalId"]


def test_a_round_whose_replan_breaks_a_goal_is_undone() -> None:
    model = skewed_cluster(brokers=12, new_brokers=3, partitions=1000, rf=3, skew=1.0, seed=5)
    options = _add_brokers(12, 3)
    st = pipeline._run(model, options, frozenset(), None)
    placed, load = st.rep.copy(), st.load.copy()
    moved = int((st.rep != model.replicas).any(axis=1).sum())
    assert moved >= TUNING.rebuild_min_moved
    # Planning nothing again leaves the undone moves undone: fewer bytes, but the new brokers fall
    # out of the disk band, so no round may be kept and the placement must be exactly as before.
    kept = rebuild.rebuild_rounds(st, lambda _: None, rounds=4)
    assert kept == 0
    assert np.array_equal(st.rep, placed)
    assert np.allclose(st.load, load)


def test_fewer_rounds_as_the_cluster_grows_and_none_for_a_handful_of_moves() -> None:
    small = skewed_cluster(brokers=12, new_brokers=3, partitions=2000, rf=3, seed=1)
    options = _add_brokers(12, 3)
    assert rebuild.rounds_for(State(small, options, resolve_groups(small, options))) == TUNING.rebuild_max_rounds
    large = skewed_cluster(brokers=24, new_brokers=3, partitions=TUNING.rebuild_large // 3 + 1, rf=3, seed=1)
    wide = _add_brokers(24, 3)
    assert rebuild.rounds_for(State(large, wide, resolve_groups(large, wide))) == 0
    # Under rebuild_min_moved moved partitions a group gets no round, whatever its size.
    builder = ClusterBuilder()
    for b in range(4):
        builder.add_broker(b, rack=f"r{b % 2}")
    for p in range(40):
        builder.add_partition("t", p, [0, 1] if p % 2 else [1, 0], size_bytes=1e9)
    few = builder.build()
    st = pipeline._run(few, PlannerOptions(), frozenset(), None)
    assert 0 < int((st.rep != few.replicas).any(axis=1).sum()) < TUNING.rebuild_min_moved
    assert rebuild.rebuild_rounds(st, lambda _: pytest.fail("no round expected"), rounds=4) == 0


def _two_skewed_groups() -> tuple[ClusterModel, PlannerOptions]:
    """Two resource groups, each a skewed cluster of 12 brokers (3 new), with very different sizes."""
    builder = ClusterBuilder()
    for gi, scale in enumerate((1.0, 40.0)):
        part = skewed_cluster(brokers=12, new_brokers=3, partitions=600, rf=3, skew=1.0, seed=(11, 14)[gi])
        for b in range(12):
            builder.add_broker(12 * gi + b, rack=f"rack-{b % 3}")
        for p in range(part.num_partitions):
            replicas = [12 * gi + int(r) for r in part.replicas[p] if r >= 0]
            builder.add_partition(
                f"g{gi}-{part.topic_name(p)}",
                int(part.partition_id[p]),
                replicas,
                size_bytes=float(part.size_bytes[p]) * scale,
                bytes_in_per_sec=float(part.bytes_in[p]) * scale,
                bytes_out_per_sec=float(part.bytes_out[p]) * scale,
            )
    groups = (
        GroupOptions("g0", tuple(range(12)), topic_patterns=("g0-.*",)),
        GroupOptions("g1", tuple(range(12, 24)), topic_patterns=("g1-.*",)),
    )
    new = (9, 10, 11, 21, 22, 23)
    return builder.build(), PlannerOptions(resource_groups=groups, operation=OperationOptions("add-brokers", new))


def test_each_group_is_rebuilt_as_when_it_is_planned_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    model, options = _two_skewed_groups()
    whole = plan(model, options)
    merged = merge(model, options, [t for job in split(model, options) for t in plan_group(job).targets])
    assert merged.plan == whole.plan
    assert merged.id == whole.id
    # The rounds ran (and paid) in each group: without them each group moves more.
    with monkeypatch.context() as m:
        _without_rounds(m)
        greedy = {job.name: plan(job.model, job.options).summary for job in split(model, options)}
    for job in split(model, options):
        rebuilt = plan(job.model, job.options).summary
        assert rebuilt["bytesToMove"] < greedy[job.name]["bytesToMove"], job.name
        for goal, stats in rebuilt["goals"].items():
            assert stats["violationAfter"] <= greedy[job.name]["goals"][goal]["violationAfter"] + 1e-9, goal


def test_a_goal_a_replan_leaves_further_from_its_band_gets_one_more_turn() -> None:
    model = skewed_cluster(brokers=12, new_brokers=3, partitions=1000, rf=3, skew=1.0, seed=5)
    st = pipeline._run(model, _add_brokers(12, 3), frozenset(), None)
    standing = rebuild._Standing.of(st)
    goal = "leader-count-distribution"
    assert standing.violation[goal] == 0
    left: dict[str, float] = {}

    def replan(st: State) -> None:
        # A replan whose late passes took 40 leaderships onto broker 0 (its followers elsewhere).
        parts = np.flatnonzero(st.rep[:, 1] == 0)[:40]
        st.swap_leader(parts, np.ones(parts.size, dtype=np.int64))
        left.update(rebuild._Standing.of(st).violation)

    after = rebuild._replan(st, replan, standing)
    broker_goals = [g for g in standing.violation if st.catalogue.balances(g) is not None]
    assert {g for g in broker_goals if left[g] > 0} == {
        "network-out-distribution",
        "cpu-distribution",
        "leader-count-distribution",
        "leader-bytes-in-distribution",
    }
    # Each comes back most of the way, under the guard of every goal: cpu and the leader counts into
    # their bands, leader-bytes-in from 0.262 to 0.002 out, network-out from 0.314 to 0.032; the
    # per-topic goals get no extra turn (the topic-leader goal stays worse, so the keep-or-go-back
    # test would still undo this replan).
    assert all(after.violation[g] <= 0.15 * left[g] for g in broker_goals)
    assert not standing.allows(after)

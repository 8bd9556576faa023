"""Cordoned log directories (KIP-1066): a broker whose every log directory is cordoned gets no new
replica from any plan, while what it holds may move away; a broker with some directories left
uncordoned still takes replicas, and the plan names one of those. The goal is `cordoned-log-dirs`.
Random operations on cordoned brokers are judged with every other hard goal by
test_planner_every_operation.py."""

from __future__ import annotations

import dataclasses

import pytest
from checks import placement_after
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.model.cluster import LogDir
from kafka_balancer.planner import OperationOptions, PlannerOptions, PlanningError, plan

GOAL = "cordoned-log-dirs"


def with_cordons(model: ClusterModel, full: set[int], partial: frozenset[int] | set[int] = frozenset()) -> ClusterModel:
    """The model with two log directories per broker: both cordoned on ``full``, the first on ``partial``."""
    dirs = []
    for b in model.broker_ids.tolist():
        dirs.append((LogDir(f"/data/{b}/0", b in full or b in partial), LogDir(f"/data/{b}/1", b in full)))
    return dataclasses.replace(model, broker_log_dirs=tuple(dirs))


def new_broker_cluster() -> ClusterModel:
    """Brokers 1-3 hold 12 partitions of rf 2, broker 4 (rack of its own) holds nothing."""
    builder = ClusterBuilder()
    for b in (1, 2, 3, 4):
        builder.add_broker(b, rack=f"r{b}")
    for p in range(12):
        builder.add_partition("t", p, [1 + p % 3, 1 + (p + 1) % 3], size_bytes=1000.0)
    return builder.build()


def arrivals(model: ClusterModel, proposal_plan: object) -> set[int]:
    before = {(p.topic, p.partition): set(p.replicas) for p in model.partitions()}
    after = placement_after(model, proposal_plan)  # type: ignore[arg-type]
    return {b for key, replicas in after.items() for b in set(replicas) - before[key]}


def test_a_cordoned_new_broker_gets_nothing_where_it_would_get_its_share() -> None:
    model = new_broker_cluster()
    open_plan = plan(with_cordons(model, full=set()))
    assert 4 in arrivals(model, open_plan.plan)  # the check below is not vacuous
    cordoned = plan(with_cordons(model, full={4}))
    assert 4 not in arrivals(model, cordoned.plan)
    assert cordoned.summary["hardGoals"][GOAL] is True
    # One directory of two cordoned: the replica goes in the other, so the broker takes its share.
    partial = plan(with_cordons(model, full=set(), partial={4}))
    assert 4 in arrivals(model, partial.plan)


def test_what_a_cordoned_broker_holds_may_move_away() -> None:
    builder = ClusterBuilder()
    for b in (1, 2, 3, 4):
        builder.add_broker(b, rack=f"r{b}")
    for p in range(16):  # broker 1 holds every partition
        builder.add_partition("t", p, [1, 2 + p % 3], size_bytes=1000.0)
    model = with_cordons(builder.build(), full={1})
    proposal = plan(model)
    after = placement_after(model, proposal.plan)
    assert sum(1 in r for r in after.values()) < 16  # replicas left broker 1
    assert 1 not in arrivals(model, proposal.plan)
    assert proposal.summary["hardGoals"][GOAL] is True


def test_removing_a_broker_when_only_cordoned_brokers_could_host_names_the_cordon() -> None:
    builder = ClusterBuilder()
    for b in (1, 2, 3):
        builder.add_broker(b, rack="r")
    builder.add_partition("t", 0, [1, 2], size_bytes=1.0)
    model = with_cordons(builder.build(), full={3})
    with pytest.raises(PlanningError, match=r"\[3\] take no new ones .*every log directory cordoned"):
        plan(model, PlannerOptions(operation=OperationOptions("remove-brokers", brokers=(1,))))


def test_a_half_cordoned_broker_takes_its_share_into_its_open_directory() -> None:
    model = new_broker_cluster()
    without_dirs = plan(model)
    half = plan(with_cordons(model, full=set(), partial={4}))
    # The same brokers as without directories; the plan names the open one for what broker 4 receives.
    assert [(t.topic, t.partition, t.replicas) for t in half.plan.partitions] == [
        (t.topic, t.partition, t.replicas) for t in without_dirs.plan.partitions
    ]
    named = [t.named_log_dirs for t in half.plan.partitions if 4 in t.replicas]
    assert named
    assert all(d[4] == "/data/4/1" for d in named)
    assert plan(with_cordons(model, full={4})).id != without_dirs.id


def _full_disk_beside_cordoned_brokers(*, dead: bool) -> ClusterModel:
    """Broker 1 holds 4,000 bytes in a directory that allows 1,600 (80% of 2,000); brokers 2 and 3
    have one directory each, cordoned and empty, so under log-dir-capacity they have no room."""
    builder = ClusterBuilder()
    for b in (1, 2, 3):
        builder.add_broker(b, rack="r", alive=not (dead and b == 1))
    for p in range(4):
        builder.add_partition("t", p, [1], size_bytes=1000.0)
    dirs = ((LogDir("/d/1", total_bytes=2000.0),), *((LogDir(f"/d/{b}", True, 10_000.0),) for b in (2, 3)))
    return dataclasses.replace(builder.build(), broker_log_dirs=dirs)


def test_without_the_cordon_goal_brokers_with_no_room_are_refused_with_a_reason_not_a_crash() -> None:
    """bench.random_operations seed 501181 (issue 52): with log-dir-capacity kept and cordoned-log-dirs
    dropped, cordoned brokers may host but have no room (a cordoned directory takes nothing by name);
    the precheck divided by the median room of the group's hosts, 0, and crashed (ZeroDivisionError)."""
    hard = tuple(g for g in PlannerOptions().hard_goals if g != GOAL)
    short = r"^disk-capacity: .* needs 4000 .* is 1600; add 2 broker\(s\) of 2000 disk"
    with pytest.raises(PlanningError, match=short):
        plan(_full_disk_beside_cordoned_brokers(dead=False), PlannerOptions(hard_goals=hard))
    # Broker 1 down: no host has any room, so no typical broker to add; the total is named instead.
    fix = PlannerOptions(hard_goals=hard, operation=OperationOptions("fix-offline-replicas"))
    none = r"^disk-capacity: .* is 0; add brokers with at least 5000 disk capacity in all"
    with pytest.raises(PlanningError, match=none):
        plan(_full_disk_beside_cordoned_brokers(dead=True), fix)

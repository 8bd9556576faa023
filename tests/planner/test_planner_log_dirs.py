"""JBOD: one plan places each replica in a log directory of its broker (docs/goals.md, "Log directories").

`log-dir-capacity` (hard): no directory above capacityThreshold of its volume. `log-dir-distribution`:
each broker's open directories within balanceThreshold of that broker's own average (by volume size).
The figures are recomputed here from the snapshot and the plan's `log_dirs`, not read from the planner.
Random operations on JBOD brokers with cordoned directories, and remove-disks among them, are
judged with every other hard goal by test_planner_every_operation.py.
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict

import pytest
from checks import dirs_after
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.model.cluster import LogDir
from kafka_balancer.model.plan import ReassignmentPlan, check_log_dirs
from kafka_balancer.planner import OperationOptions, PlannerOptions, PlanningError, Trace, plan
from kafka_balancer.planner.groups import merge, plan_group, split

Where = tuple[int, str]  # (broker id, path)


def _replicas_of(model: ClusterModel, topic: str, partition: int) -> tuple[int, ...]:
    return model.replica_ids(model.partition_index(topic, partition))


def bytes_per_dir(model: ClusterModel, placed: dict[tuple[str, int, int], str | None]) -> dict[Where, float]:
    size = {(p.topic, p.partition): p.size_bytes for p in model.partitions()}
    out: dict[Where, float] = defaultdict(float)
    for b in model.broker_ids.tolist():
        for d in model.log_dirs(model.broker_index(b)):
            out[(b, d.path)] = 0.0
    for (topic, partition, b), path in placed.items():
        if path is not None:
            out[(b, path)] += size[(topic, partition)]
    return out


def out_of_band(model: ClusterModel, placed: dict[tuple[str, int, int], str | None], threshold: float) -> list[Where]:
    """Open directories of brokers with two or more open ones, outside ±threshold of their share of
    what the broker's directories hold (shares by volume size where every open one has a size), the
    band widened by the broker's largest replica (whole replicas fill no finer)."""
    held = bytes_per_dir(model, placed)
    size = {(p.topic, p.partition): p.size_bytes for p in model.partitions()}
    largest: dict[int, float] = defaultdict(float)
    for topic, partition, b in placed:
        largest[b] = max(largest[b], size[(topic, partition)])
    bad = []
    for b in model.broker_ids.tolist():
        dirs = [d for d in model.log_dirs(model.broker_index(b)) if not d.cordoned]
        if len(dirs) < 2:
            continue
        sized = all(d.total_bytes is not None for d in dirs)
        weight = {d.path: (d.total_bytes if sized else 1.0) or 0.0 for d in dirs}
        total = sum(held[(b, d.path)] for d in dirs)
        for d in dirs:
            target = total * weight[d.path] / sum(weight.values())
            low, high = target * (2 - threshold) - largest[b], target * threshold + largest[b]
            if not low - 1e-6 <= held[(b, d.path)] <= high + 1e-6:
                bad.append((b, d.path))
    return bad


def over_limit(model: ClusterModel, held: dict[Where, float], threshold: float) -> list[Where]:
    return [
        (b, d.path)
        for b in model.broker_ids.tolist()
        for d in model.log_dirs(model.broker_index(b))
        if d.total_bytes is not None and held[(b, d.path)] > threshold * d.total_bytes * (1 + 1e-9)
    ]


def skewed_jbod(*, new_brokers: int = 2, seed: int = 1) -> ClusterModel:
    """6 brokers in 3 racks with 3 directories each (the first on a smaller volume); brokers 1-4 hold
    every replica, all in their first directory; the last ``new_brokers`` hold nothing."""
    rng = random.Random(seed)
    b = ClusterBuilder()
    for i in range(1, 7):
        dirs = [LogDir(f"/d{j}", total_bytes=4e11 if j == 0 else 1e12) for j in range(3)]
        b.add_broker(i, rack=f"r{i % 3}", disk_bytes=3e12, log_dirs=dirs)
    old = list(range(1, 7 - new_brokers))
    for t in range(5):
        for p in range(12):
            reps = rng.sample(old, 3)
            b.add_partition(
                f"t{t}", p, reps, size_bytes=rng.uniform(1e8, 1e9), bytes_in_per_sec=1e5, log_dirs=["/d0"] * 3
            )
    return b.build()


def test_one_plan_moves_replicas_between_brokers_and_between_directories() -> None:
    model = skewed_jbod()
    assert out_of_band(model, dirs_after(model, ReassignmentPlan(())), 1.10)  # the check below is not vacuous
    trace = Trace()
    proposal = plan(model, PlannerOptions(), trace=trace)
    assert "log directories" in [s.name for s in trace.steps if s.depth == 0]
    check_log_dirs(proposal.plan, model)  # every named directory is one of its broker's
    placed = dirs_after(model, proposal.plan)
    assert out_of_band(model, placed, 1.10) == []
    assert over_limit(model, bytes_per_dir(model, placed), 0.8) == []
    targets = proposal.plan.partitions
    moved_brokers = [t for t in targets if set(t.replicas) != set(_replicas_of(model, t.topic, t.partition))]
    between_dirs = [
        t for t in targets if set(t.named_log_dirs) - (set(t.replicas) - set(_replicas_of(model, t.topic, t.partition)))
    ]
    assert moved_brokers
    assert between_dirs
    summary = proposal.summary
    assert summary["goals"]["log-dir-distribution"]["holdsAfter"] is True
    assert summary["hardGoals"]["log-dir-capacity"] is True
    assert summary["logDirs"]["after"]["outOfBand"] == 0
    # Every replica that moves between directories of its broker is counted, with its bytes.
    size = {(p.topic, p.partition): p.size_bytes for p in model.partitions()}
    kept_moves = [
        (t.topic, t.partition)
        for t in targets
        for b in t.named_log_dirs
        if b in _replicas_of(model, t.topic, t.partition)
    ]
    assert summary["logDirs"]["movesBetweenDirs"] == len(kept_moves)
    assert summary["logDirs"]["bytesBetweenDirs"] == pytest.approx(sum(size[k] for k in kept_moves))


def test_new_brokers_get_their_replicas_spread_over_their_directories_without_extra_copies() -> None:
    model = skewed_jbod()
    proposal = plan(model, PlannerOptions(operation=OperationOptions("add-brokers", brokers=(5, 6))))
    assert not [w for w in out_of_band(model, dirs_after(model, proposal.plan), 1.10) if w[0] in (5, 6)]
    arrived = sum(1 for t in proposal.plan.partitions for b in t.replicas if b in (5, 6))
    assert arrived > 0
    # Each replica a new broker receives is written into a named directory of it, straight away.
    for t in proposal.plan.partitions:
        for b in set(t.replicas) & {5, 6}:
            assert t.named_log_dirs[b].startswith("/d")


def test_a_directory_above_its_limit_sheds_into_its_brokers_other_directories() -> None:
    b = ClusterBuilder()
    for i in (1, 2, 3):
        b.add_broker(
            i, rack=f"r{i}", log_dirs=[LogDir("/small", total_bytes=1000.0), LogDir("/big", total_bytes=10000.0)]
        )
    for p in range(10):
        b.add_partition("t", p, [1, 2, 3], size_bytes=100.0, log_dirs=["/small"] * 3)
    model = b.build()
    options = PlannerOptions(distribution_goals=("replica-distribution",))  # capacity alone moves them
    proposal = plan(model, options)
    held = bytes_per_dir(model, dirs_after(model, proposal.plan))
    assert over_limit(model, held, 0.8) == []
    assert all(held[(i, "/small")] == 800.0 for i in (1, 2, 3))  # down to its limit, not further


def test_a_directory_that_cannot_get_under_its_limit_is_named() -> None:
    b = ClusterBuilder()
    for i in (1, 2, 3):
        b.add_broker(i, rack=f"r{i}", log_dirs=[LogDir("/a", total_bytes=1000.0), LogDir("/b", total_bytes=1000.0)])
    # Room on every broker (1,600 bytes under its two limits) but no directory may hold the 900 bytes.
    b.add_partition("t", 0, [1, 2, 3], size_bytes=900.0, log_dirs=["/a"] * 3)
    with pytest.raises(PlanningError, match=r"log-dir-capacity: broker 1 /a would hold 900 bytes .*limit 800"):
        plan(b.build())
    # And a broker's total above what its directories may hold is refused before any search.
    b = ClusterBuilder()
    for i in (1, 2, 3):
        b.add_broker(i, rack=f"r{i}", log_dirs=[LogDir("/only", total_bytes=1000.0)])
    for p in range(10):
        b.add_partition("t", p, [1, 2, 3], size_bytes=100.0, log_dirs=["/only"] * 3)
    with pytest.raises(PlanningError, match=r"disk-capacity: group 'cluster' needs 3000 disk but 80% .* is 2400"):
        plan(b.build())


def test_brokers_take_no_more_than_their_directories_may_hold() -> None:
    """The broker-level disk goal sees a broker's directories' limits: small volumes, small share."""
    b = ClusterBuilder()
    for i in range(1, 5):
        size = 2000.0 if i == 4 else 100000.0
        b.add_broker(i, rack=f"r{i}", log_dirs=[LogDir("/a", total_bytes=size), LogDir("/b", total_bytes=size)])
    for p in range(40):
        b.add_partition("t", p, [1 + p % 3, 1 + (p + 1) % 3], size_bytes=100.0, log_dirs=["/a", "/a"])
    model = b.build()
    proposal = plan(model)
    held = bytes_per_dir(model, dirs_after(model, proposal.plan))
    assert held[(4, "/a")] + held[(4, "/b")] <= 0.8 * 4000.0
    assert over_limit(model, held, 0.8) == []


def test_remove_disks_empties_the_directories_into_the_same_broker() -> None:
    model = skewed_jbod(new_brokers=0)
    removed = {(1, "/d0"), (2, "/d0")}
    op = OperationOptions("remove-disks", log_dirs=tuple(sorted(removed)))
    proposal = plan(model, PlannerOptions(operation=op))
    held = bytes_per_dir(model, dirs_after(model, proposal.plan))
    assert all(held[w] == 0.0 for w in removed)
    # Nothing else moves between brokers for it, unless a hard goal was already broken (racks here).
    assert proposal.summary["logDirs"]["removed"] == ["broker 1 /d0", "broker 2 /d0"]
    assert proposal.summary["logDirs"]["movesBetweenDirs"] > 0
    for t in proposal.plan.partitions:
        for b in set(t.named_log_dirs) & {1, 2}:
            assert t.named_log_dirs[b] != "/d0"


def test_remove_disks_refuses_an_unknown_directory_by_name() -> None:
    model = skewed_jbod(new_brokers=0)
    with pytest.raises(
        PlanningError, match=r"operation.logDirs\[0\]' names '/nope', which is not a log directory of broker 1"
    ):
        plan(model, PlannerOptions(operation=OperationOptions("remove-disks", log_dirs=((1, "/nope"),))))
    plain = dataclasses.replace(model, broker_log_dirs=(), replica_dir=None)
    with pytest.raises(PlanningError, match=r"the snapshot has no log directories"):
        plan(plain, PlannerOptions(operation=OperationOptions("remove-disks", log_dirs=((1, "/d0"),))))
    with pytest.raises(PlanningError, match=r"must not be empty for remove-disks"):
        OperationOptions("remove-disks")


def test_planning_per_group_places_directories_as_one_plan_does() -> None:
    model = skewed_jbod()
    options = PlannerOptions()
    whole = plan(model, options)
    targets = [t for job in split(model, options) for t in plan_group(job).targets]
    merged = merge(model, options, targets)
    assert merged.id == whole.id

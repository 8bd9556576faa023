"""Property tests over random clusters: hard goals hold, nothing is lost or duplicated, nothing gets worse."""

from __future__ import annotations

import math

import numpy as np
from checks import broker_loads, placement_after
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from independent import CAPACITY_GOALS, LEADERSHIP_GOALS, Layout, check, distances, replica_array, summary_disagreements
from independent import broker_loads as loads_per_broker
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.model.proposal import Proposal
from kafka_balancer.planner import OperationOptions, PlannerOptions, PlanningError, plan
from known_gaps import known_gaps
from refusals import planned_or_refused, refusal_problem


@st.composite
def clusters(draw: st.DrawFn, fewest: int = 1, most: int = 10) -> tuple[ClusterModel, OperationOptions]:
    brokers = draw(st.integers(3, 9))
    racks = draw(st.integers(1, 3))
    dead = draw(st.sets(st.integers(0, brokers - 1), max_size=1))
    op_type = draw(
        st.sampled_from(["rebalance", "rebalance", "remove-brokers", "demote-brokers", "fix-offline-replicas"])
    )
    alive = [b for b in range(brokers) if b not in dead]
    removed = {draw(st.sampled_from(alive))} if op_type in {"remove-brokers", "demote-brokers"} else set()
    hosts = len(alive) - (len(removed) if op_type == "remove-brokers" else 0)
    builder = ClusterBuilder()
    for b in range(brokers):
        builder.add_broker(b, rack=f"r{b % racks}", alive=b not in dead)
    topics = draw(st.integers(1, 4))
    for t in range(topics):
        for p in range(draw(st.integers(fewest, most))):
            rf = draw(st.integers(1, min(3, hosts)))
            replicas = draw(st.permutations(range(brokers)))[:rf]
            size = draw(st.integers(0, 10**9))
            rate = draw(st.integers(0, 10**6))
            builder.add_partition(
                f"t{t}", p, list(replicas), size_bytes=size, bytes_in_per_sec=rate, bytes_out_per_sec=2 * rate
            )
    op = OperationOptions(type=op_type, brokers=tuple(sorted(removed)))
    return builder.build(), op


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_random_clusters_keep_every_invariant(case: tuple[ClusterModel, OperationOptions]) -> None:
    _check_every_invariant(case)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(fewest=60, most=100))
def test_larger_random_clusters_keep_every_invariant_through_the_rebuilding_rounds(
    case: tuple[ClusterModel, OperationOptions],
) -> None:
    # 60-400 partitions: enough of them move (50) for planner/finishing/rebuild.py's rounds to run on most.
    _check_every_invariant(case)


def _check_every_invariant(case: tuple[ClusterModel, OperationOptions]) -> None:
    model, op = case
    options = PlannerOptions(operation=op)
    proposal = plan(model, options)
    placement = placement_after(model, proposal.plan)
    before = {(p.topic, p.partition): p.replicas for p in model.partitions()}
    dead = {b.id for b in model.brokers() if not b.alive}
    gone = dead | (set(op.brokers) if op.type == "remove-brokers" else set())
    for key, replicas in placement.items():
        assert len(replicas) == len(before[key]), f"{key}: replication factor changed"
        assert len(set(replicas)) == len(replicas), f"{key}: duplicate replica {replicas}"
        if op.type == "demote-brokers":
            assert sorted(replicas) == sorted(before[key]), f"{key}: demotion moved data"
        else:
            assert not set(replicas) & gone, f"{key}: replica left on dead/removed broker {replicas}"
    # Every hard goal, judged from the docs' definitions (tests/planner/independent.py), not the summary.
    verdict, was = check(model, options, placement), check(model, options, before)
    if op.type == "demote-brokers":  # moves no data: racks stay as they were, nothing new breaks
        assert not verdict.hard().broken() & LEADERSHIP_GOALS, verdict.hard()
        assert verdict.hard().places() <= was.hard().places(), verdict.hard()
    else:
        assert not verdict.hard().violations, verdict.hard()
    # A demotion leaves replicas on a dead broker in their rack: known gap 5 (tests/planner/known_gaps.py).
    assert not summary_disagreements(verdict, options, proposal.summary, known_gaps(model, options))
    if op.type == "fix-offline-replicas":
        # Only what was offline or crowded a rack moves (no capacities here, one group).
        crowded = {v.where for v in was.hard().violations if v.goal == "rack-awareness"}
        for target in proposal.plan.partitions:
            old = before[(target.topic, target.partition)]
            assert set(old) & dead or f"partition {target.topic}-{target.partition}" in crowded, (old, target.replicas)
    if op.type == "demote-brokers":
        demoted = op.brokers[0]
        for key, replicas in placement.items():
            if replicas[0] == demoted:
                assert all(b == demoted or b in dead for b in replicas), f"{key}: still led by demoted broker"
    if op.type == "rebalance" and not was.hard().violations:
        # (A hard goal broken before, e.g. two replicas in one rack, must be fixed first, whatever it costs.)
        _nothing_gets_worse(model, options, proposal, dead)
    again = plan(model, options)
    assert again.id == proposal.id
    assert again.plan == proposal.plan
    assert again.leader_changes == proposal.leader_changes


@st.composite
def clusters_with_full_disks(draw: st.DrawFn) -> tuple[ClusterModel, OperationOptions, dict[int, float]]:
    """A random rebalance whose disks are near full: each broker's limit (0.8 x capacity) is 1.0-1.25x
    the average disk use of the live brokers, at least that average plus the largest partition, so
    the heaviest brokers often start above it; one broker may be dead."""
    model, _ = draw(clusters(fewest=20, most=60))
    placement = {(p.topic, p.partition): p.replicas for p in model.partitions()}
    used = broker_loads(model, placement)["disk"]
    avg = sum(used.values()) / sum(b.alive for b in model.brokers())
    # Room for the largest partition above the average, so whole replicas can always be packed.
    largest = max(p.size_bytes for p in model.partitions())
    limits = {b.id: max(avg * draw(st.floats(1.0, 1.25)), avg + largest, 1.0) for b in model.brokers()}
    builder = ClusterBuilder()
    for b in model.brokers():
        # A dead broker's replicas may have to go where no broker of their rack has room yet.
        builder.add_broker(b.id, rack=b.rack, alive=b.alive, disk_bytes=limits[b.id] / 0.8)
    for p in model.partitions():
        builder.add_partition(
            p.topic, p.partition, list(p.replicas), size_bytes=p.size_bytes, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3
        )
    return builder.build(), OperationOptions(), limits


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters_with_full_disks())
def test_near_full_disks_end_under_their_limits_or_fail_with_the_reason(
    case: tuple[ClusterModel, OperationOptions, dict[int, float]],
) -> None:
    model, op, limits = case
    try:
        proposal = plan(model, PlannerOptions(operation=op))
    except PlanningError as error:
        failed = error
    else:
        failed = None
    if failed is not None:
        # Only a hard goal the cluster cannot meet (the disks, or racks too small to spread under
        # the limits), found by the repair, with its claim true of this cluster: never one the plan
        # broke on the way.
        assert failed.reason in {"disk-capacity", "rack-awareness"}, failed
        assert refusal_problem(model, PlannerOptions(operation=op), failed) is None, refusal_problem(
            model, PlannerOptions(operation=op), failed
        )
        return
    placement = placement_after(model, proposal.plan)
    verdict = check(model, PlannerOptions(operation=op), placement)
    assert not verdict.hard().violations, verdict.hard()
    assert not summary_disagreements(verdict, PlannerOptions(operation=op), proposal.summary)
    dead = {b.id for b in model.brokers() if not b.alive}
    assert not any(set(replicas) & dead for replicas in placement.values())
    disk = broker_loads(model, placement)["disk"]
    for broker, used in disk.items():
        assert used <= limits[broker] * (1 + 1e-9), (broker, used, limits[broker])


def _nothing_gets_worse(model: ClusterModel, options: PlannerOptions, proposal: Proposal, dead: set[int]) -> None:
    """Each goal's out-of-band distance, the planner's and the independent one, does not grow, except
    one the summary says the hard goals' stages left worse: only the replicas leaving a ``dead``
    broker can, here (issue 56: a rebalance with a dead broker left the per-topic spread worse)."""
    excused = set(proposal.summary.get("goalsWorsenedByHardGoals", []))
    assert not excused or dead, excused
    for goal, stats in proposal.summary["goals"].items():
        if goal not in excused:
            assert stats["violationAfter"] <= stats["violationBefore"] + 1e-6, (goal, stats)
            assert stats["holdsAfter"] or not stats["holdsBefore"], goal
    before = {(p.topic, p.partition): p.replicas for p in model.partitions()}
    now, then = distances(model, options, placement_after(model, proposal.plan)), distances(model, options, before)
    for goal in set(now) - excused:
        assert now[goal] <= then[goal] + 1e-6 * max(1.0, then[goal]), (goal, then[goal], now[goal])


@st.composite
def clusters_at_their_limits(draw: st.DrawFn) -> tuple[ClusterModel, PlannerOptions]:
    """A skewed random cluster whose limits bind against the goals: 3-9 brokers (one may be dead),
    40-200 partitions of sizes and traffic spread over three orders of magnitude (fine enough for a
    plan to fill a broker to within a few percent of a limit), placed with a skewed preference; each
    capacity goal limits each broker with probability 2/3, at 0.6-1.5x the average load of its
    quantity (inside the band's lower edge on some brokers, which the distribution goals pull up to
    the limit, and below what the busiest start with, which the repair must bring down to it), and
    the replica count at 0.95-1.3x the average."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    brokers, racks = int(rng.integers(3, 10)), int(rng.integers(1, 4))
    op_type = draw(
        st.sampled_from(["rebalance", "rebalance", "remove-brokers", "demote-brokers", "fix-offline-replicas"])
    )
    dead = {int(rng.integers(brokers))} if rng.random() < 0.3 else set()
    alive = [b for b in range(brokers) if b not in dead]
    removed = {int(rng.choice(alive))} if op_type in {"remove-brokers", "demote-brokers"} else set()
    hosts = len(alive) - (len(removed) if op_type == "remove-brokers" else 0)
    weight = rng.pareto(1.0, brokers) + 0.2
    rows = []
    for p in range(int(rng.integers(40, 201))):
        rf = int(rng.integers(1, min(3, hosts) + 1))
        replicas = rng.choice(brokers, size=rf, replace=False, p=weight / weight.sum()).tolist()
        rows.append((f"t{p % int(rng.integers(1, 5))}", p, replicas, 10 ** rng.uniform(3, 6), 10 ** rng.uniform(2, 5)))
    builder = ClusterBuilder()
    for b in range(brokers):
        builder.add_broker(b, rack=f"r{b % racks}", alive=b not in dead)
    for topic, p, replicas, size, rate in rows:
        builder.add_partition(topic, p, replicas, size_bytes=size, bytes_in_per_sec=rate, bytes_out_per_sec=2 * rate)
    model = builder.build()
    op = OperationOptions(type=op_type, brokers=tuple(sorted(removed)))
    options = PlannerOptions(operation=op)
    lay = Layout(model, options)
    loads = loads_per_broker(lay, replica_array(lay, {(p.topic, p.partition): p.replicas for p in model.partitions()}))
    caps: dict[str, list[float | None]] = {}
    for quantity, field in CAPACITY_GOALS.values():
        avg = float(loads[quantity][lay.active].mean())
        limited = rng.random() < 2 / 3
        caps[field] = [
            avg * rng.uniform(0.6, 1.5) / options.capacity_threshold if limited and avg > 0 else None
            for _ in range(brokers)
        ]
    builder = ClusterBuilder()
    for b in range(brokers):
        builder.add_broker(b, rack=f"r{b % racks}", alive=b not in dead, **{f: c[b] for f, c in caps.items()})
    for topic, p, replicas, size, rate in rows:
        builder.add_partition(topic, p, replicas, size_bytes=size, bytes_in_per_sec=rate, bytes_out_per_sec=2 * rate)
    limit = max(1, math.ceil(float(loads["replicas"][lay.active].mean()) * rng.uniform(0.95, 1.3)))
    return builder.build(), PlannerOptions(operation=op, max_replicas_per_broker=limit)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters_at_their_limits())
def test_every_limit_holds_at_its_exact_value_where_the_goals_push_against_it(
    case: tuple[ClusterModel, PlannerOptions],
) -> None:
    """The plan keeps every broker at or under each limit as configured (capacityThreshold x its
    capacity, maxReplicasPerBroker), judged by the independent checker to a relative 1e-9; a limit
    the planner read a little looser than configured ends some broker above it here. A refusal is
    one whose numbers hold on this cluster (refusals.py)."""
    model, options = case
    proposal = planned_or_refused(model, options)
    if proposal is None:
        return
    before = {(p.topic, p.partition): p.replicas for p in model.partitions()}
    verdict = check(model, options, placement_after(model, proposal.plan))
    if options.operation.type == "demote-brokers":  # moves no data: only what leadership carries
        was = check(model, options, before).hard().places()
        assert not [v for v in verdict.hard().violations if v.goal in LEADERSHIP_GOALS and (v.goal, v.where) not in was]
        return
    assert not verdict.hard().violations, verdict.hard()
    assert not summary_disagreements(verdict, options, proposal.summary)

"""Property tests with resource groups, excluded brokers and disk capacities: a plan keeps every hard goal,
or planning refuses with the goal that cannot be met."""

from __future__ import annotations

from checks import placement_after
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from independent import check, summary_disagreements
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.planner import GroupOptions, PlannerOptions, PlanningError, plan
from known_gaps import known_gaps, known_rack_gap
from refusals import refusal_problem


@st.composite
def cases(draw: st.DrawFn) -> tuple[ClusterModel, PlannerOptions]:
    per_group = draw(st.integers(3, 5))
    brokers = 2 * per_group
    racks = draw(st.integers(1, 3))
    disk = draw(st.sampled_from([None, 5e9, 2e10]))
    builder = ClusterBuilder()
    for b in range(brokers):
        builder.add_broker(b, rack=f"r{b % racks}", disk_bytes=disk)
    for g, prefix in enumerate(("a", "b")):
        for t in range(draw(st.integers(1, 2))):
            for p in range(draw(st.integers(1, 8))):
                rf = draw(st.integers(1, 3))
                # Mostly inside the group, sometimes leaking onto the other group's brokers.
                pool = list(range(brokers)) if draw(st.booleans()) else list(range(g * per_group, (g + 1) * per_group))
                replicas = draw(st.permutations(pool))[:rf]
                builder.add_partition(f"{prefix}-{t}", p, list(replicas), size_bytes=draw(st.integers(0, 3 * 10**9)))
    groups = (
        GroupOptions("a", tuple(range(per_group)), topic_patterns=("a-.*",)),
        GroupOptions("b", tuple(range(per_group, brokers)), topic_patterns=("b-.*",)),
    )
    excluded = tuple(draw(st.sets(st.integers(0, brokers - 1), max_size=1)))
    no_lead = tuple(draw(st.sets(st.integers(0, brokers - 1), max_size=1)))
    options = PlannerOptions(
        resource_groups=groups, excluded_brokers_for_replicas=excluded, excluded_brokers_for_leadership=no_lead
    )
    return builder.build(), options


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_groups_exclusions_and_capacities_hold_or_planning_refuses(case: tuple[ClusterModel, PlannerOptions]) -> None:
    model, options = case
    try:
        proposal = plan(model, options)
    except PlanningError as err:
        refused: PlanningError | None = err
    else:
        refused = None
    if refused is not None:
        # e.g. 80% of the disk capacity cannot hold the group's data: the refusal the docs describe,
        # naming the goal, the group or broker, and numbers that hold on this cluster.
        assert refusal_problem(model, options, refused) is None, refusal_problem(model, options, refused)
        return
    before = {(p.topic, p.partition): p.replicas for p in model.partitions()}
    placement = placement_after(model, proposal.plan)
    for key, replicas in placement.items():
        assert len(replicas) == len(before[key])
        assert len(set(replicas)) == len(replicas)
    # Racks, groups, exclusions and disk limits judged from their definitions, not from the summary.
    verdict = check(model, options, placement)
    assert not [v for v in verdict.hard().violations if not known_rack_gap(model, options, v)], verdict.hard()
    assert not summary_disagreements(
        verdict, options, proposal.summary, known_gaps(model, options, verdict.holds("resource-group-confinement"))
    )

"""Preferred leader racks (`goals.preferredLeaderRacks`, hard goal `preferred-leader-racks`): every
partition with a replica in a listed rack is led from the first listed rack holding one, by leadership
changes; the goals leadership carries are balanced among the brokers of each leader tier (a listed rack,
or the unlisted racks together). Judged here from the placement, not from the planner's own measures."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter

import independent
import pytest
from checks import placement_after, plan_or_refusal
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.model.policy.parsing import PolicyError, parse_balance_policy_spec
from kafka_balancer.planner import OperationOptions, PlannerOptions, PlanningError, plan
from kafka_balancer.planner.policy import options_from_policy
from known_gaps import known_gaps
from refusals import refusal_problem

from bench.random_operations import OPERATIONS, random_case
from bench.synthetic import skewed_cluster

GOAL = "preferred-leader-racks"
RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c", 4: "rack-a", 5: "rack-b", 6: "rack-c"}


def three_racks(partitions: int = 48, *, rf: int = 3, traffic: bool = False) -> ClusterModel:
    """Six brokers in three racks (as the real test cluster), replicas placed round robin (rack-aware),
    leaders spread over every rack, equal sizes: replicas and disk already balanced."""
    builder = ClusterBuilder()
    for b, rack in RACKS.items():
        builder.add_broker(b, rack=rack)
    rng = random.Random(7)
    for p in range(partitions):
        replicas = [1 + (p + k) % 6 for k in range(rf)]
        bytes_in = float(rng.randint(1, 5) * 1000) if traffic else 0.0
        builder.add_partition(f"t{p % 3}", p // 3, replicas, size_bytes=1e6, bytes_in_per_sec=bytes_in)
    return builder.build()


def rack_of(model: ClusterModel, broker: int) -> str | None:
    return model.broker_racks[model.broker_index(broker)]


def preferred_rack(model: ClusterModel, replicas: tuple[int, ...], racks: tuple[str, ...]) -> str | None:
    """The first listed rack holding one of ``replicas`` (the goal's definition, docs/goals.md)."""
    held = {rack_of(model, b) for b in replicas}
    return next((r for r in racks if r in held), None)


def misled(model: ClusterModel, placement: dict[tuple[str, int], tuple[int, ...]], racks: tuple[str, ...]) -> int:
    out = 0
    for replicas in placement.values():
        want = preferred_rack(model, replicas, racks)
        out += want is not None and rack_of(model, replicas[0]) != want
    return out


def current(model: ClusterModel) -> dict[tuple[str, int], tuple[int, ...]]:
    return {(p.topic, p.partition): tuple(p.replicas) for p in model.partitions()}


def test_every_partition_is_led_from_rack_a_by_leadership_changes_alone_with_counts_balanced_there() -> None:
    model = three_racks()
    racks = ("rack-a",)
    assert misled(model, current(model), racks) == 32  # two thirds led from rack-b and rack-c
    proposal = plan(model, PlannerOptions(preferred_leader_racks=racks))
    after = placement_after(model, proposal.plan)
    assert misled(model, after, racks) == 0
    # Leadership changes suffice here (every partition has a replica in rack-a): no data moves.
    assert proposal.summary["moves"] == 0
    assert proposal.summary["bytesToMove"] == 0
    assert all(set(after[k]) == set(v) for k, v in current(model).items())
    assert proposal.summary["leaderChanges"] == 32
    leaders = Counter(replicas[0] for replicas in after.values())
    assert leaders == {1: 24, 4: 24}  # balanced among rack-a's brokers
    assert proposal.summary["hardGoals"][GOAL] is True
    assert proposal.summary["goals"]["leader-count-distribution"]["holdsAfter"] is True


def test_skewed_leaders_inside_rack_a_are_balanced_with_replica_moves_where_the_operation_moves_data() -> None:
    # Every partition's rack-a replica is on broker 1: leadership alone cannot even rack-a's leaders out.
    builder = ClusterBuilder()
    for b, rack in RACKS.items():
        builder.add_broker(b, rack=rack)
    for p in range(24):
        builder.add_partition("t", p, [(2, 5)[p % 2], 1, (3, 6)[p // 2 % 2]], size_bytes=1e6)
    model = builder.build()
    proposal = plan(model, PlannerOptions(preferred_leader_racks=("rack-a",)))
    after = placement_after(model, proposal.plan)
    assert misled(model, after, ("rack-a",)) == 0
    leaders = Counter(replicas[0] for replicas in after.values())
    assert abs(leaders[1] - leaders[4]) <= 2, leaders
    assert proposal.summary["moves"] > 0  # broker 4 took rack-a replicas to lead
    # demote-brokers moves no data: the goal still holds (leadership changes), the balance inside is left.
    demote = plan(
        model,
        PlannerOptions(preferred_leader_racks=("rack-a",), operation=OperationOptions("demote-brokers", brokers=(6,))),
    )
    assert demote.summary["moves"] == 0
    assert misled(model, placement_after(model, demote.plan), ("rack-a",)) == 0


def test_the_leader_borne_goals_are_finished_on_the_leaderships_the_preferred_racks_place() -> None:
    # A skewed cluster (12 brokers in 3 racks, one new, 3,000 partitions of 2 or 3 replicas), rack-0
    # preferred. The distribution goals' replica moves take some leader replicas out of rack-0; their
    # leaderships go back there before the leader counts are finished. Finished first and handed
    # back after, they took their network-out with them, and that goal ended out of band.
    model = skewed_cluster(brokers=12, new_brokers=1, partitions=3000, rf=2.46, seed=3, racks=3)
    options = PlannerOptions(
        operation=OperationOptions("add-brokers", brokers=(11,)),
        max_replicas_per_broker=12000,
        preferred_leader_racks=("rack-0",),
    )
    proposal = plan(model, options)
    assert misled(model, placement_after(model, proposal.plan), ("rack-0",)) == 0
    assert proposal.summary["goalsViolated"] == []


def test_the_list_is_ordered_and_partitions_without_a_listed_rack_lead_anywhere() -> None:
    model = three_racks(60, rf=2)  # rf 2 over 3 racks: some partitions have no replica in rack-a
    racks = ("rack-b", "rack-a")
    proposal = plan(model, PlannerOptions(preferred_leader_racks=racks))
    after = placement_after(model, proposal.plan)
    assert misled(model, after, racks) == 0
    kinds = Counter(rack_of(model, r[0]) for r in after.values())
    assert set(kinds) == {"rack-a", "rack-b"}  # rack-c leads only where neither is held: never at rf 2 here
    for replicas in after.values():
        held = {rack_of(model, b) for b in replicas}
        if "rack-b" in held:
            assert rack_of(model, replicas[0]) == "rack-b"


def test_a_broker_that_may_not_lead_passes_the_preference_to_the_next_listed_rack() -> None:
    model = three_racks(rf=3)
    options = PlannerOptions(preferred_leader_racks=("rack-a", "rack-b"), excluded_brokers_for_leadership=(1,))
    after = placement_after(model, plan(model, options).plan)
    for replicas in after.values():
        assert replicas[0] != 1
        want = "rack-a" if 4 in replicas else "rack-b"
        assert rack_of(model, replicas[0]) == want


def test_summary_reports_the_goal_before_and_after_as_the_placement_shows() -> None:
    model = three_racks(traffic=True)
    racks = ("rack-a",)
    proposal = plan(model, PlannerOptions(preferred_leader_racks=racks))
    after = placement_after(model, proposal.plan)
    section = proposal.summary["preferredLeaderRacks"]
    assert section["racks"] == ["rack-a"]
    assert section["misledBefore"] == misled(model, current(model), racks) == 32
    assert section["misledAfter"] == misled(model, after, racks) == 0
    leaders = Counter(r[0] for r in after.values())
    stats = section["after"]["leaders"]["cluster/rack-a"]
    assert stats["brokers"] == [1, 4]
    assert stats["avg"] == pytest.approx((leaders[1] + leaders[4]) / 2)
    assert stats["maxOverAvg"] == pytest.approx(max(leaders[1], leaders[4]) / stats["avg"])
    assert section["after"]["leaders"]["cluster/(unlisted racks)"]["avg"] == 0.0
    bytes_in = {(p.topic, p.partition): p.bytes_in_per_sec for p in model.partitions()}
    led_in: Counter[int] = Counter()
    for key, replicas in after.items():
        led_in[replicas[0]] += bytes_in[key]
    tier = section["after"]["leader-bytes-in"]["cluster/rack-a"]
    assert tier["maxOverAvg"] == pytest.approx(max(led_in[1], led_in[4]) / ((led_in[1] + led_in[4]) / 2))
    # The leader-count goal is judged among rack-a's brokers: it holds, and says so per tier.
    goal = proposal.summary["goals"]["leader-count-distribution"]
    assert goal["holdsAfter"] is True
    assert goal["after"]["cluster/rack-a"] == stats
    assert tier["maxOverAvg"] <= 1.10 + 1e-9


def test_without_preferred_racks_the_options_and_the_proposal_id_are_as_before() -> None:
    assert "preferred_leader_racks" not in PlannerOptions().to_dict()
    model = three_racks()
    assert "preferredLeaderRacks" not in plan(model).summary
    assert plan(model).id == plan(model, PlannerOptions(preferred_leader_racks=())).id


def test_a_rack_no_broker_has_is_refused_naming_the_field_and_the_value() -> None:
    with pytest.raises(
        PlanningError, match=r"goals.preferredLeaderRacks\[1\]' names rack 'rack-x'.*rack-a, rack-b, rack-c"
    ):
        plan(three_racks(), PlannerOptions(preferred_leader_racks=("rack-a", "rack-x")))


def test_the_policy_field_is_typed_and_checked() -> None:
    spec = {"cluster": {"bootstrapServers": "k:9092"}, "goals": {"preferredLeaderRacks": ["rack-a", "rack-b"]}}
    options = options_from_policy(parse_balance_policy_spec(spec))
    assert options.preferred_leader_racks == ("rack-a", "rack-b")
    with pytest.raises(PolicyError, match=r"spec.goals.preferredLeaderRacks: 'rack-a' is listed twice"):
        parse_balance_policy_spec({**spec, "goals": {"preferredLeaderRacks": ["rack-a", "rack-a"]}})
    with pytest.raises(PolicyError, match=r"spec.goals.preferredLeaderRacks\[0\]"):
        parse_balance_policy_spec({**spec, "goals": {"preferredLeaderRacks": [""]}})


CASES = [(seed, kind) for seed in range(6) for kind in OPERATIONS]


@pytest.mark.parametrize(("seed", "kind"), CASES)
def test_every_operation_leads_from_the_preferred_racks(seed: int, kind: str) -> None:
    model, options = random_case(seed, kind)
    rng = random.Random(seed)
    known = sorted({r for r in model.broker_racks if r})
    racks = tuple(rng.sample(known, k=rng.randint(1, min(2, len(known)))))
    options = dataclasses.replace(options, preferred_leader_racks=racks)
    proposal = plan_or_refusal(model, options)
    if isinstance(proposal, PlanningError):
        # A refusal the docs describe for what this cluster lacks, never this goal's.
        assert refusal_problem(model, options, proposal) is None, refusal_problem(model, options, proposal)
        assert proposal.reason != GOAL
        return
    after = placement_after(model, proposal.plan)
    may_lead = {b for b in model.broker_ids.tolist() if model.broker_alive[model.broker_index(b)]}
    may_lead -= set(options.excluded_brokers_for_leadership)
    if options.operation.type == "demote-brokers":
        may_lead -= set(options.operation.brokers)
    if options.operation.type == "remove-brokers":
        may_lead -= set(options.operation.brokers)
    moved = set(current(model)) if not options.topics else {k for k in after if k[0] in options.topics}
    for key in moved:
        replicas = after[key]
        want = preferred_rack(model, tuple(b for b in replicas if b in may_lead), racks)
        if want is not None:
            assert rack_of(model, replicas[0]) == want, (key, replicas, racks)
    assert proposal.summary["hardGoals"][GOAL] is True
    # The independent checker (docs/goals.md) agrees with the summary on every goal, the per-tier bands too.
    verdict = independent.check(model, options, after)
    assert not verdict.places(GOAL)
    tolerated = known_gaps(model, options, verdict.holds("resource-group-confinement"))
    assert independent.summary_disagreements(verdict, options, proposal.summary, tolerated) == []


def test_left_out_of_the_hard_goals_the_racks_are_not_preferred() -> None:
    model = three_racks()
    hard = tuple(g for g in PlannerOptions().hard_goals if g != GOAL)
    proposal = plan(model, PlannerOptions(preferred_leader_racks=("rack-a",), hard_goals=hard))
    assert proposal.id == plan(model, PlannerOptions(hard_goals=hard)).id
    assert "preferredLeaderRacks" not in proposal.summary


def test_while_a_broker_is_down_an_unseen_rack_may_be_its_own_and_is_skipped_not_refused() -> None:
    # Kafka does not tell a down broker's rack: rack-a's brokers down (a zone outage) look like a typo.
    builder = ClusterBuilder()
    for b, rack in RACKS.items():
        down = rack == "rack-a"
        builder.add_broker(b, rack=None if down else rack, alive=not down)
    for p in range(12):
        builder.add_partition("t", p, [1 + (p + k) % 6 for k in range(3)], size_bytes=1e6)
    model = builder.build()
    options = PlannerOptions(
        preferred_leader_racks=("rack-a", "rack-c"), operation=OperationOptions("fix-offline-replicas")
    )
    after = placement_after(model, plan(model, options).plan)
    assert all(rack_of(model, r[0]) == "rack-c" for r in after.values())


def test_the_independent_checker_catches_one_leadership_out_of_its_rack() -> None:
    model = three_racks()
    options = PlannerOptions(preferred_leader_racks=("rack-a",))
    after = placement_after(model, plan(model, options).plan)
    assert not independent.check(model, options, after).violations
    key, replicas = next(iter(after.items()))
    faulty = {**after, key: (*replicas[1:], replicas[0])}  # led from rack-b or rack-c now
    assert independent.check(model, options, faulty).places(GOAL) == {(GOAL, f"partition {key[0]}-{key[1]}")}

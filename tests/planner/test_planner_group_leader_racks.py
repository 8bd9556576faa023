"""Preferred leader racks per ResourceGroup (`spec.preferredLeaderRacks` of a ResourceGroup): a partition of
a group's topics is led from the first rack of its group's list holding one of its replicas; a group without
its own list follows the policy's `goals.preferredLeaderRacks`; the goals leadership carries are balanced
among each group's brokers of each of its tiers. Judged from the placement and by the independent checker."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from pathlib import Path

import independent
import pytest
import yaml
from checks import placement_after
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.model.policy.parsing import (
    PolicyError,
    parse_balance_policy_spec,
    parse_manifests,
    parse_resource_group_spec,
)
from kafka_balancer.planner import GroupOptions, OperationOptions, PlannerOptions, PlanningError, plan
from kafka_balancer.planner.policy import options_from_policy
from known_gaps import known_gaps
from refusals import planned_or_refused

from bench.random_operations import OPERATIONS, random_case

REPO = Path(__file__).resolve().parents[2]
GOAL = "preferred-leader-racks"
RACK_NAMES = ("rack-a", "rack-b", "rack-c")
EAST, WEST = range(1, 7), range(7, 13)  # six brokers each, two per rack


def rack_of_id(broker: int) -> str:
    return RACK_NAMES[(broker - 1) % 3]


def two_groups(partitions: int = 36) -> ClusterModel:
    """Twelve brokers in three racks; topics e0, e1 on brokers 1-6 and w0, w1 on 7-12, placed round
    robin (one replica per rack), leaders spread over every rack, equal sizes and traffic: every goal
    but the racks' holds."""
    builder = ClusterBuilder()
    for b in (*EAST, *WEST):
        builder.add_broker(b, rack=rack_of_id(b))
    for prefix, first in (("e", 1), ("w", 7)):
        for p in range(partitions):
            replicas = [first + (p + k) % 6 for k in range(3)]
            builder.add_partition(f"{prefix}{p // 18}", p % 18, replicas, size_bytes=1e6, bytes_in_per_sec=1e3)
    return builder.build()


def groups(east: tuple[str, ...], west: tuple[str, ...]) -> tuple[GroupOptions, ...]:
    return (
        GroupOptions("east", tuple(EAST), topic_patterns=("e.*",), preferred_leader_racks=east),
        GroupOptions("west", tuple(WEST), topic_patterns=("w.*",), preferred_leader_racks=west),
    )


def led_from(after: dict[tuple[str, int], tuple[int, ...]], prefix: str) -> Counter[int]:
    return Counter(replicas[0] for (topic, _), replicas in after.items() if topic.startswith(prefix))


def test_each_group_is_led_from_its_own_first_rack_with_leader_counts_balanced_within_it() -> None:
    model = two_groups()
    options = PlannerOptions(resource_groups=groups(("rack-a",), ("rack-c", "rack-b")))
    proposal = plan(model, options)
    after = placement_after(model, proposal.plan)
    # Every partition has a replica in every rack: leadership changes alone, no data moves.
    assert proposal.summary["moves"] == 0
    assert led_from(after, "e") == {1: 18, 4: 18}  # east: rack-a's brokers, evenly
    assert led_from(after, "w") == {9: 18, 12: 18}  # west: rack-c's brokers, evenly
    assert proposal.summary["hardGoals"][GOAL] is True
    section = proposal.summary["preferredLeaderRacks"]
    assert section["racks"] == []
    assert section["groupRacks"] == {"east": ["rack-a"], "west": ["rack-c", "rack-b"]}
    assert section["misledAfter"] == 0
    assert section["misledBefore"] == 48  # two thirds of each group's 36
    # The leader tiers are each group's own: the lists' racks, named per group.
    tiers = section["after"]["leaders"]
    assert tiers["east/rack-a"]["brokers"] == [1, 4]
    assert tiers["west/rack-c"]["brokers"] == [9, 12]
    assert tiers["west/(unlisted racks)"]["brokers"] == [7, 10]  # rack-a: in west's list? no, unlisted
    assert tiers["west/rack-b"]["brokers"] == [8, 11]
    assert tiers["east/(unlisted racks)"]["brokers"] == [2, 3, 5, 6]
    assert proposal.summary["goals"]["leader-count-distribution"]["holdsAfter"] is True
    verdict = independent.check(model, options, after)
    assert verdict.violations == ()


def test_a_group_without_its_own_list_follows_the_policys() -> None:
    model = two_groups()
    options = PlannerOptions(preferred_leader_racks=("rack-b",), resource_groups=groups(("rack-a",), ()))
    after = placement_after(model, plan(model, options).plan)
    assert led_from(after, "e") == {1: 18, 4: 18}
    assert led_from(after, "w") == {8: 18, 11: 18}
    assert independent.check(model, options, after).violations == ()


def test_the_second_rack_of_a_groups_list_leads_where_the_first_holds_no_replica() -> None:
    # rf 2 inside west: a partition on rack-a and rack-b brokers only is led from rack-b (west: [c, b]).
    model = two_groups()
    builder = ClusterBuilder()
    for b in model.brokers():
        builder.add_broker(b.id, rack=b.rack)
    for p in range(12):
        builder.add_partition("w9", p, [7 + p % 2 * 3, 8 + (p // 2) % 2 * 3], size_bytes=1e6)
    model = builder.build()
    options = PlannerOptions(resource_groups=groups(("rack-a",), ("rack-c", "rack-b")))
    proposal = plan(model, options)
    after = placement_after(model, proposal.plan)
    # Each partition is led from west's first listed rack holding one of its replicas.
    for replicas in after.values():
        held = [rack_of_id(b) for b in replicas]
        want = next(r for r in ("rack-c", "rack-b") if r in held)
        assert rack_of_id(replicas[0]) == want, replicas
    assert independent.check(model, options, after).places(GOAL) == set()


def test_without_any_list_the_options_and_the_proposal_id_are_as_before() -> None:
    model = two_groups()
    plain = PlannerOptions(resource_groups=groups((), ()))
    assert all("preferred_leader_racks" not in g for g in plain.to_dict()["resource_groups"])
    assert "preferredLeaderRacks" not in plan(model, plain).summary
    # Left out of the hard goals, a group's list is not in force and not in the id either.
    hard = tuple(g for g in PlannerOptions().hard_goals if g != GOAL)
    listed = PlannerOptions(resource_groups=groups(("rack-a",), ("rack-b",)), hard_goals=hard)
    assert plan(model, listed).id == plan(model, dataclasses.replace(plain, hard_goals=hard)).id
    # With a list in force the id is another.
    assert plan(model, PlannerOptions(resource_groups=groups(("rack-a",), ()))).id != plan(model, plain).id


def test_a_rack_no_broker_has_is_refused_naming_the_groups_field_and_the_value() -> None:
    options = PlannerOptions(resource_groups=groups(("rack-a",), ("rack-c", "rack-x")))
    with pytest.raises(
        PlanningError,
        match=r"field 'resourceGroups\[west\].preferredLeaderRacks\[1\]' names rack 'rack-x'.*rack-a, rack-b, rack-c",
    ):
        plan(two_groups(), options)
    with pytest.raises(PlanningError, match=r"resourceGroups\[east\].preferredLeaderRacks' must not list a rack twice"):
        groups(("rack-a", "rack-a"), ())


def test_the_resource_group_field_is_typed_and_reaches_the_planner() -> None:
    group = {"brokers": {"ids": [1, 2, 3]}, "topics": {"names": ["e0"]}, "preferredLeaderRacks": ["rack-b", "rack-a"]}
    spec = parse_balance_policy_spec({"cluster": {"bootstrapServers": "k:9092"}, "resourceGroups": ["east"]})
    options = options_from_policy(spec, [("east", parse_resource_group_spec(group))])
    assert options.resource_groups[0].preferred_leader_racks == ("rack-b", "rack-a")
    with pytest.raises(PolicyError, match=r"spec.preferredLeaderRacks\[1\]: String should have at least 1 character"):
        parse_resource_group_spec({**group, "preferredLeaderRacks": ["rack-a", ""]})
    with pytest.raises(PolicyError, match=r"spec.preferredLeaderRacks: 'rack-a' is listed twice"):
        parse_resource_group_spec({**group, "preferredLeaderRacks": ["rack-a", "rack-a"]})


def group_racks(model: ClusterModel, seed: int) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Random lists for the policy and the random cases' two groups (each maybe empty)."""
    rng = random.Random(seed)
    known = sorted({r for r in model.broker_racks if r})
    return tuple(tuple(rng.sample(known, k=rng.randint(0, min(2, len(known))))) for _ in range(3))  # type: ignore[return-value]


# The random cases with resource groups (about half of them have two).
CASES = [(seed, kind) for seed in range(24) for kind in OPERATIONS if random_case(seed, kind)[1].resource_groups]
# Random cases with a policy-wide list only that were refused ("the plan would still break hard goal
# preferred-leader-racks") while the plan's own replica moves could give a partition the options leave
# be a more preferred rack that no stage then led it from.
POLICY_WIDE = [62, 94, 110, 153, 321]


def led_as_answered(model: ClusterModel, options: PlannerOptions) -> None:
    """Plan (or check the refusal is a documented one, never this goal's) and judge the placement: every
    partition the options let move is led from its group's preferred rack; a topic in no group while every
    broker is in one stays where it is, its leadership too (the summary then says the goal is broken,
    which summary_disagreements checks)."""
    proposal = planned_or_refused(model, options)
    if proposal is None:
        return
    after = placement_after(model, proposal.plan)
    verdict = independent.check(model, options, after)
    misled = [v for v in verdict.violations if v.goal == GOAL and independent.answers_for(options, v)]
    assert not misled, misled
    tolerated = known_gaps(model, options, verdict.holds("resource-group-confinement"))
    assert independent.summary_disagreements(verdict, options, proposal.summary, tolerated) == []


@pytest.mark.parametrize(("seed", "kind"), CASES)
def test_every_operation_leads_each_group_from_its_own_list(seed: int, kind: str) -> None:
    model, options = random_case(seed, kind)
    policy, *lists = group_racks(model, seed)
    options = dataclasses.replace(
        options,
        preferred_leader_racks=policy,
        resource_groups=tuple(
            dataclasses.replace(g, preferred_leader_racks=racks)
            for g, racks in zip(options.resource_groups, lists, strict=True)
        ),
    )
    led_as_answered(model, options)


@pytest.mark.parametrize("seed", POLICY_WIDE)
def test_a_partition_the_plan_gave_a_more_preferred_rack_is_led_from_it(seed: int) -> None:
    model, options = random_case(seed, OPERATIONS[seed % len(OPERATIONS)])
    known = sorted({r for r in model.broker_racks if r})
    rng = random.Random(seed)  # the lists of test_planner_leader_racks.py's random cases
    racks = tuple(rng.sample(known, k=rng.randint(1, min(2, len(known)))))
    led_as_answered(model, dataclasses.replace(options, preferred_leader_racks=racks))


def test_the_independent_checker_judges_a_partition_by_its_groups_list() -> None:
    model = two_groups()
    options = PlannerOptions(resource_groups=groups(("rack-a",), ("rack-c",)))
    after = placement_after(model, plan(model, options).plan)
    key = next(k for k in after if k[0].startswith("w"))
    replicas = after[key]
    assert rack_of_id(replicas[0]) == "rack-c"
    # Led from rack-a: east's first rack, not west's.
    faulty = {**after, key: tuple(sorted(replicas, key=lambda b: rack_of_id(b) != "rack-a"))}
    assert independent.check(model, options, faulty).places(GOAL) == {(GOAL, f"partition {key[0]}-{key[1]}")}


def test_move_topics_into_a_group_leads_them_from_that_groups_racks() -> None:
    model = two_groups()
    options = PlannerOptions(
        resource_groups=groups(("rack-a",), ("rack-c",)),
        operation=OperationOptions("move-topics", topics=("e0",), target_group="west"),
    )
    after = placement_after(model, plan(model, options).plan)
    moved = [r for (t, _), r in after.items() if t == "e0"]
    assert all(set(r) <= set(WEST) and rack_of_id(r[0]) == "rack-c" for r in moved)


def test_the_example_leads_each_teams_topics_from_its_own_zone() -> None:
    """examples/13-preferred-leader-racks-per-group.yaml, planned as the CLI reads it, on its 15 brokers in
    three zones (one replica per zone, leaders spread over every zone)."""
    docs = list(yaml.safe_load_all((REPO / "examples" / "13-preferred-leader-racks-per-group.yaml").read_text()))
    (policy,), resource_groups = parse_manifests(docs)
    zones = ("eu-west-1a", "eu-west-1b", "eu-west-1c")
    builder = ClusterBuilder()
    for b in range(1, 16):
        builder.add_broker(b, rack=zones[(b - 1) % 3])
    for topic, first, count in (("payments-eu", 1, 6), ("clickstream.web", 7, 6), ("logs-app", 13, 3)):
        for p in range(2 * count):
            replicas = [first + (p + k) % count for k in range(3)]
            builder.add_partition(topic, p, replicas, size_bytes=1e6)
    model = builder.build()
    options = options_from_policy(policy.spec, [(g.metadata.name, g.spec) for g in resource_groups], model)
    proposal = plan(model, options)
    after = placement_after(model, proposal.plan)
    zone = {b: zones[(b - 1) % 3] for b in range(1, 16)}
    led = {
        t: Counter(zone[r[0]] for (topic, _), r in after.items() if topic == t)
        for t in ("payments-eu", "clickstream.web", "logs-app")
    }
    assert led == {
        "payments-eu": {"eu-west-1a": 12},
        "clickstream.web": {"eu-west-1c": 12},
        "logs-app": {"eu-west-1b": 6},
    }
    assert proposal.summary["moves"] == 0
    assert proposal.summary["goals"]["leader-count-distribution"]["holdsAfter"] is True
    assert independent.check(model, options, after).violations == ()

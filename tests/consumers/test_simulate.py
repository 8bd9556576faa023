"""Balance figures, churn when a member leaves or joins, and the recommendation."""

from __future__ import annotations

import pytest
from kafka_balancer.consumers import ASSIGNOR_NAMES, parse_group, simulate

BOTH = ["t0", "t1"]
THREE = {"topics": {"t0": 4, "t1": 4}, "members": [{"id": f"C{i}", "topics": BOTH} for i in range(3)]}


def test_range_churn_when_each_member_leaves() -> None:
    churn = simulate(parse_group(THREE))["assignors"]["range"]["churnIfMemberLeaves"]
    # C0 holds 4 (t0 0-1, t1 0-1); when it leaves C1 takes 0-1 and gives 2 to C2 in both topics.
    assert churn["C0"] == {"moved": 6, "movedBeyondLeaver": 2, "revoked": 8}
    assert churn["C1"] == {"moved": 2, "movedBeyondLeaver": 0, "revoked": 8}
    assert churn["C2"] == {"moved": 2, "movedBeyondLeaver": 0, "revoked": 8}


def test_roundrobin_churn_when_each_member_leaves() -> None:
    result = simulate(parse_group(THREE))["assignors"]["roundrobin"]
    assert result["assignment"] == {
        "C0": {"t0": [0, 3], "t1": [2]},
        "C1": {"t0": [1], "t1": [0, 3]},
        "C2": {"t0": [2], "t1": [1]},
    }
    churn = result["churnIfMemberLeaves"]
    assert churn["C0"] == {"moved": 6, "movedBeyondLeaver": 3, "revoked": 8}
    assert churn["C1"]["movedBeyondLeaver"] > 0


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
def test_sticky_moves_only_the_leaving_members_partitions(assignor: str) -> None:
    group = {
        "topics": {"a": 7, "b": 5, "c": 3},
        "members": [{"id": f"m{i}", "topics": ["a", "b", "c"]} for i in range(5)],
    }
    result = simulate(parse_group(group))["assignors"][assignor]
    sizes = result["balance"]["partitionsPerMember"]
    for member, churn in result["churnIfMemberLeaves"].items():
        assert churn["moved"] == sizes[member]
        assert churn["movedBeyondLeaver"] == 0
        # Eager sticky still pauses every partition; cooperative only the ones that move.
        assert churn["revoked"] == (sizes[member] if assignor == "cooperative-sticky" else 15)


def test_sticky_general_path_moves_more_only_when_balance_needs_it() -> None:
    group = {
        "topics": {"t0": 2, "t1": 4, "t2": 6},
        "members": [
            {"id": "A", "topics": ["t0", "t1", "t2"]},
            {"id": "B", "topics": ["t1", "t2"]},
            {"id": "C", "topics": ["t2"]},
            {"id": "D", "topics": ["t0", "t2"]},
        ],
    }
    result = simulate(parse_group(group))["assignors"]["sticky"]
    assert result["balance"]["partitionsPerMember"] == {"A": 3, "B": 3, "C": 3, "D": 3}
    churn = result["churnIfMemberLeaves"]
    # A holds t0-0, t1-1, t1-3: only B also reads t1, so B would end with 5 and C with 3; balance
    # (Sticky's first priority) then costs exactly one more move. C and D leave with no extra move.
    assert churn["A"]["moved"] == 4
    assert churn["A"]["movedBeyondLeaver"] == 1
    assert churn["C"] == {"moved": 3, "movedBeyondLeaver": 0, "revoked": 12}
    assert churn["D"] == {"moved": 3, "movedBeyondLeaver": 0, "revoked": 12}


def test_join_moves_just_enough_for_the_newcomer_under_sticky() -> None:
    result = simulate(parse_group(THREE), new_member="C3")["assignors"]
    # 8 partitions over 4 members: the newcomer takes 2; nothing else changes owner.
    assert result["sticky"]["churnIfMemberJoins"] == {"member": "C3", "topics": BOTH, "moved": 2, "revoked": 8}
    assert result["cooperative-sticky"]["churnIfMemberJoins"]["revoked"] == 2
    assert result["range"]["churnIfMemberJoins"]["moved"] > 2


def test_balance_figures_and_recommendation_with_switch_cost() -> None:
    doc = {**THREE, "assignor": "range"}
    doc["members"] = [
        {**m, "assignment": a}
        for m, a in zip(
            THREE["members"],
            [{"t0": [0, 1], "t1": [0, 1]}, {"t0": [2], "t1": [2]}, {"t0": [3], "t1": [3]}],
            strict=True,
        )
    ]
    result = simulate(parse_group(doc))
    assert result["current"]["balance"]["imbalanceRatio"] == 1.5  # 4 / (8 / 3)
    assert result["assignors"]["range"]["balance"] == {
        "partitionsPerMember": {"C0": 4, "C1": 2, "C2": 2},
        "maxPartitions": 4,
        "minPartitions": 2,
        "imbalanceRatio": 1.5,
    }
    assert result["assignors"]["range"]["movesFromCurrent"] == 0
    rec = result["recommendation"]
    assert rec["assignor"] == "cooperative-sticky"
    assert rec["imbalanceRatio"] == 1.125
    # From an eager assignor, cooperative-sticky needs two rolling bounces; sticky keeps C0's first
    # 3 partitions (t0-0, t1-0, t0-1 by partition number), so only t1-1 changes owner.
    assert rec["switch"] == {"from": "range", "rollingBounces": 2, "partitionsMoved": 1}


def test_lag_weighted_balance() -> None:
    doc = {
        "topics": {"t": 4},
        "members": [
            {"id": "A", "topics": ["t"], "assignment": {"t": [0, 1]}},
            {"id": "B", "topics": ["t"], "assignment": {"t": [2, 3]}},
        ],
        "lag": {"t": [100, 100, 0, 0]},
    }
    current = simulate(parse_group(doc))["current"]["balance"]
    assert current["imbalanceRatio"] == 1.0
    assert current["lagPerMember"] == {"A": 200.0, "B": 0.0}
    assert current["lagImbalanceRatio"] == 2.0


def test_every_assignor_assigns_each_subscribed_partition_once() -> None:
    doc = {
        "topics": {"x": 5, "y": 3, "unused": 9},
        "members": [{"id": "m1", "topics": ["x"]}, {"id": "m2", "topics": ["x", "y"]}, {"id": "m3", "topics": ["y"]}],
    }
    result = simulate(parse_group(doc))
    for name in ASSIGNOR_NAMES:
        owned = [
            (t, p)
            for topics in result["assignors"][name]["assignment"].values()
            for t, ps in topics.items()
            for p in ps
        ]
        assert sorted(owned) == [("x", p) for p in range(5)] + [("y", p) for p in range(3)], name


def test_new_member_id_must_be_new() -> None:
    with pytest.raises(ValueError, match="new member id 'C0' is already a member"):
        simulate(parse_group(THREE), new_member="C0")


def test_large_groups_simulate_an_evenly_spread_sample_of_leavers() -> None:
    doc = {"topics": {"t": 60}, "members": [{"id": f"m{i:02d}", "topics": ["t"]} for i in range(12)]}
    result = simulate(parse_group(doc), max_leavers=4)
    assert result["leaversSimulated"] == {"members": 12, "simulated": 4}
    for name in ASSIGNOR_NAMES:
        # First and last member included, evenly spread between (indices 0, 4, 7, 11).
        assert list(result["assignors"][name]["churnIfMemberLeaves"]) == ["m00", "m04", "m07", "m11"], name
    everyone = simulate(parse_group(doc), max_leavers=0)
    assert everyone["leaversSimulated"] == {"members": 12, "simulated": 12}
    sticky = everyone["assignors"]["sticky"]["churnIfMemberLeaves"]
    # The sampled figures are the same as the full run's for the same members.
    assert {m: sticky[m] for m in ("m00", "m04", "m07", "m11")} == result["assignors"]["sticky"]["churnIfMemberLeaves"]

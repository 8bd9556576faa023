"""A proposal that must leave a goal worse (a dead broker's replicas have to go somewhere) says so in the
policy's status, through the real operator on the real API server, as `kafka-balancer plan` says it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka_balancer.sandbox import EmulatedCluster
from planner.dead_broker import left_worse_by_the_hard_goals

from .conftest import Cluster, Operator, policy_manifest


def test_a_goal_left_worse_by_the_hard_goals_is_named_in_the_proposal_status(
    kube: Cluster, operator: Operator, emulator: Callable[..., EmulatedCluster]
) -> None:
    cluster = emulator(left_worse_by_the_hard_goals())
    kube.apply(policy_manifest("dead", {"cluster": {"bootstrapServers": cluster.bootstrap_servers}}))

    def proposal() -> dict[str, Any]:
        return dict((kube.policy("dead").get("status") or {}).get("proposal") or {})

    shown = kube.wait_for("a proposal", proposal, timeout=60)
    assert shown["goalsWorsenedByHardGoals"] == ["topic-replica-distribution"]
    assert shown["moves"] >= 1  # the dead broker's replica moves

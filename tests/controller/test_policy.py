"""The BalancePolicy/ResourceGroup spec models: defaults, and errors that name the field and the value."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from kafka_balancer.model.policy.fields import DISTRIBUTION_GOALS, HARD_GOALS
from kafka_balancer.model.policy.groups import check_groups, group_brokers
from kafka_balancer.model.policy.parsing import (
    PolicyError,
    parse_balance_policy_spec,
    parse_manifests,
    parse_resource_group_spec,
)

BASE: dict[str, Any] = {"cluster": {"bootstrapServers": "k0:9092,k1:9092"}}


def _spec(**overrides: Any) -> dict[str, Any]:
    return {**BASE, **overrides}


def test_defaults_are_the_documented_ones() -> None:
    spec = parse_balance_policy_spec(BASE)
    assert spec.mode == "Manual"
    assert spec.goals.hard == list(HARD_GOALS)
    assert spec.goals.distribution == list(DISTRIBUTION_GOALS)
    assert spec.goals.balance_threshold == 1.10
    assert spec.goals.capacity_threshold == 0.8
    assert spec.goals.max_replicas_per_broker == 4000
    assert spec.execution.concurrent_moves_per_broker == 5
    assert spec.execution.concurrent_moves_total == 1000
    assert spec.execution.stuck_after_seconds == 1800
    assert spec.execution.election_batch_size == 1000
    assert spec.execution.throttle_bytes_per_sec is None
    assert spec.analysis.statistic == "p95"
    assert spec.operation.type == "rebalance"
    assert spec.cluster.security_protocol == "PLAINTEXT"


# Specs the model refuses, with the field the error names and words of its message. The schema of the
# CRD refuses some of them too (the API server never stores those): tests/controller/test_crds.py.
INVALID_SPECS: list[tuple[dict[str, Any], str, str]] = [
    (_spec(execution={"throttleBytesPerSec": -5}), "spec.execution.throttleBytesPerSec", "-5"),
    (_spec(goals={"hard": ["rack-awareness", "nice"]}), "spec.goals.hard[1]", "'nice'"),
    (_spec(operation={"type": "add-brokers"}), "spec.operation", "brokers"),
    (
        _spec(operation={"type": "change-replication-factor", "topics": ["a"]}),
        "spec.operation",
        "replicationFactor",
    ),
    (_spec(operation={"type": "move-topics", "topics": ["a"]}), "spec.operation", "targetGroup"),
    (_spec(mod="Auto"), "spec.mod", "Extra"),
    ({}, "spec.cluster", "required"),
    (_spec(cluster={"bootstrapServers": "k:1", "securityProtocol": "SASL_SSL"}), "spec.cluster", "saslMechanism"),
    (_spec(analysis={"intervalSeconds": 600, "windowSeconds": 60}), "spec.analysis", "windowSeconds"),
    (_spec(triggers={"schedule": "every day"}), "spec.triggers.schedule", "every day"),
    (_spec(resourceGroups=["a", "a"]), "spec.resourceGroups", "'a' is listed twice"),
    (
        _spec(resourceGroups=["a"], operation={"type": "move-topics", "topics": ["t"], "targetGroup": "b"}),
        "spec",
        "targetGroup 'b'",
    ),
]


@pytest.mark.parametrize(("spec", "field", "words"), INVALID_SPECS)
def test_errors_name_the_field_and_value(spec: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(PolicyError) as err:
        parse_balance_policy_spec(spec)
    assert err.value.field == field
    assert words in str(err.value)


def test_resource_group_needs_exactly_one_selector() -> None:
    with pytest.raises(PolicyError, match="exactly one"):
        parse_resource_group_spec({"brokers": {"ids": [1], "racks": ["a"]}})
    with pytest.raises(PolicyError, match="not a valid RE2 regular expression"):
        parse_resource_group_spec({"brokers": {"ids": [1]}, "topics": {"patterns": ["(unclosed"]}})
    group = parse_resource_group_spec({"brokers": {"racks": ["r1"]}, "topics": {"patterns": ["orders-.*"]}})
    assert group.topics.matches("orders-eu")
    assert not group.topics.matches("xorders-eu")
    assert group_brokers(group, {1: "r1", 2: "r2", 3: "r1"}) == [1, 3]


def test_a_broker_or_topic_in_two_groups_is_refused() -> None:
    a = parse_resource_group_spec({"brokers": {"ids": [1, 2]}, "topics": {"names": ["x"]}})
    b = parse_resource_group_spec({"brokers": {"ids": [2, 3]}})
    with pytest.raises(PolicyError, match="broker 2 is in two groups: 'a' and 'b'"):
        check_groups([("a", a), ("b", b)])
    c = parse_resource_group_spec({"brokers": {"ids": [4]}, "topics": {"patterns": ["x.*"]}})
    check_groups([("a", a), ("c", c)])  # no cluster topics given: patterns are not expanded
    with pytest.raises(PolicyError, match="topic x is in two groups"):
        check_groups([("a", a), ("c", c)], topics=["x", "y"])
    by_rack = parse_resource_group_spec({"brokers": {"racks": ["r1"]}})
    with pytest.raises(PolicyError, match="broker 1 is in two groups"):
        check_groups([("a", a), ("r", by_rack)], racks={1: "r1", 5: "r2"})


def test_manifests_are_the_cli_policy_file() -> None:
    text = """
apiVersion: v1
kind: Secret
metadata: {name: s}
---
apiVersion: kafkabalancer.io/v1alpha1
kind: BalancePolicy
metadata: {name: p, namespace: kafka}
spec: {cluster: {bootstrapServers: "k:9092"}, mode: DryRun}
"""
    policies, groups = parse_manifests(list(yaml.safe_load_all(text)))
    assert [(p.metadata.namespace, p.metadata.name, p.spec.mode) for p in policies] == [("kafka", "p", "DryRun")]
    assert groups == []
    bad = text.replace("mode: DryRun", "mode: DryRun, paused: maybe")
    with pytest.raises(PolicyError, match=r"document\[1\] \(BalancePolicy 'p'\)\.spec\.paused"):
        parse_manifests(list(yaml.safe_load_all(bad)))

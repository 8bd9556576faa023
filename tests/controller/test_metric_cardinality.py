"""/metrics grows with the consumer groups a policy shows, not with all the cluster has (issue 37, item 10).

With ``spec.analysis.consumerGroups.topN: 5`` status lists five groups, and the per-group series are
exported for the same five (the most imbalanced), plus per-policy aggregates over all of them. Before,
every group of the cluster got four or five series: 2,000 groups gave 8,000 series.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from emulator_fixtures import six_broker_model
from kafka_balancer.sandbox import EmulatedCluster, GroupSeed, MemberSeed

from .conftest import Cluster, Operator, policy_manifest

pytestmark = pytest.mark.timeout(180)

GROUPS = 300
TOP_N = 5


def _seed(cluster: EmulatedCluster) -> None:
    """300 groups of two members on topic "orders" (12 partitions); group g gives member 1 6 + g % 6 of them,
    so the imbalance grows with g % 6 and groups 5, 11, 17, ... are the most imbalanced."""
    for g in range(GROUPS):
        mine = 6 + g % 6
        members = (
            MemberSeed(f"m1-{g}", "c1", "/10.0.0.1", ("orders",), {"orders": list(range(mine))}),
            MemberSeed(f"m2-{g}", "c2", "/10.0.0.2", ("orders",), {"orders": list(range(mine, 12))}),
        )
        offsets = {("orders", p): 0 for p in range(12)}
        cluster.seed_group(GroupSeed(f"group-{g:03d}", members=members, assignor="range", offsets=offsets))


def _series(operator: Operator) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    for (name, labels), _value in operator.scrape().items():
        if name.startswith("kafka_balancer_consumer_group"):
            out.setdefault(name, []).append(dict(labels))
    return out


def test_only_the_top_n_consumer_groups_are_exported(
    kube: Cluster, operator: Operator, emulator: Callable[..., EmulatedCluster]
) -> None:
    cluster = emulator(six_broker_model(), time_scale=10.0)
    _seed(cluster)
    analysis = {"consumerGroups": {"enabled": True, "topN": TOP_N}}
    cluster_spec = {"bootstrapServers": cluster.bootstrap_servers}
    kube.apply(policy_manifest("main", {"cluster": cluster_spec, "mode": "DryRun", "analysis": analysis}))
    listed = kube.wait_for(
        "consumer groups in status", lambda: (kube.policy("main").get("status") or {}).get("consumerGroups")
    )
    assert len(listed) == TOP_N
    shown = {row["group"] for row in listed}
    assert all(int(name.removeprefix("group-")) % 6 == 5 for name in shown), shown

    series = kube.wait_for("consumer-group series", lambda: _series(operator))
    total = sum(len(rows) for rows in series.values())
    per_group = {labels["group"] for rows in series.values() for labels in rows if "group" in labels}
    assert per_group == shown, f"{len(per_group)} groups exported, {total} series"
    assert total <= 5 * TOP_N + 10, total
    # What the other 295 groups add up to is still there, per policy.
    assert operator.metric("kafka_balancer_consumer_groups", policy="main") == GROUPS
    assert operator.metric("kafka_balancer_consumer_groups_lag", policy="main") is not None

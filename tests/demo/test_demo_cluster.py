"""The demo cluster is a skewed but healthy cluster that the default policy and the example policy balance."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kafka_balancer.model.policy.parsing import parse_manifests
from kafka_balancer.planner import PlannerOptions, plan
from kafka_balancer.planner.policy import options_from_policy
from kafka_balancer.report import broker_loads
from kafka_balancer.sandbox.demo_cluster import NEW_BROKERS, skewed_demo_model

REPO = Path(__file__).resolve().parents[2]


def test_demo_cluster_is_skewed_with_racks_a_hot_topic_and_empty_new_brokers() -> None:
    model = skewed_demo_model()
    loads = broker_loads(model)
    assert len(set(model.broker_racks)) >= 3
    replicas = dict(zip(loads.broker_ids, loads.metric("replicas"), strict=True))
    assert all(replicas[b] == 0 for b in NEW_BROKERS)
    # The hot topic carries the most traffic of all topics.
    per_topic: dict[str, float] = {}
    for p in range(model.num_partitions):
        per_topic[model.topic_name(p)] = per_topic.get(model.topic_name(p), 0.0) + float(model.bytes_in[p])
    assert max(per_topic, key=per_topic.__getitem__) == "clickstream.web"
    # Traffic within capacity on every broker, even before balancing: the demo is about balance.
    for b, broker in enumerate(model.brokers()):
        assert broker.network_in_bytes_per_sec is not None
        assert broker.network_out_bytes_per_sec is not None
        assert loads.metric("network_in")[b] < 0.8 * broker.network_in_bytes_per_sec
        assert loads.metric("network_out")[b] < 0.8 * broker.network_out_bytes_per_sec


def test_demo_cluster_sizes_scale_without_changing_the_shape() -> None:
    full, quarter = skewed_demo_model(), skewed_demo_model(0.25)
    assert full.num_partitions == quarter.num_partitions
    assert (full.replicas == quarter.replicas).all()
    assert float(quarter.size_bytes.sum()) == pytest.approx(float(full.size_bytes.sum()) / 4)
    with pytest.raises(ValueError, match=r"size_scale must be > 0 \(got 0\)"):
        skewed_demo_model(0)


@pytest.mark.parametrize("policy", ["default", "examples"])
def test_the_planner_balances_it_with_every_hard_goal_holding(policy: str) -> None:
    model = skewed_demo_model()
    if policy == "default":
        options = PlannerOptions()
    else:
        docs = [
            doc
            for name in ("00-resource-groups.yaml", "01-rebalance-manual.yaml")
            for doc in yaml.safe_load_all((REPO / "examples" / name).read_text())
        ]
        policies, groups = parse_manifests(docs)
        options = options_from_policy(policies[0].spec, [(g.metadata.name, g.spec) for g in groups], model)
    proposal = plan(model, options)
    summary = proposal.summary
    assert summary["moves"] > 0
    assert summary["balancednessAfter"] > summary["balancednessBefore"] + 30
    hard = set(options.hard_goals)
    assert hard <= set(summary["goalsHolding"]), summary["goalsViolated"]

"""The per-partition quantities have one home (model/quantities): the planner's loads and the
report's charts read the same formulas, so they show the same figure for every broker."""

from __future__ import annotations

import numpy as np
import pytest
from kafka_balancer.model import ClusterBuilder
from kafka_balancer.model.quantities import ESTIMATED_CPU, QUANTITIES, quantity
from kafka_balancer.planner import PlannerOptions
from kafka_balancer.planner.base.resource_groups import resolve_groups
from kafka_balancer.planner.base.state import State
from kafka_balancer.report import METRICS, broker_loads

from bench.synthetic import skewed_cluster


def test_the_leader_serves_consumers_and_each_follower_and_every_replica_writes() -> None:
    builder = ClusterBuilder()
    for b in range(4):
        builder.add_broker(b, rack=f"r{b}")
    builder.add_partition("t", 0, [0, 1, 2], size_bytes=7, bytes_in_per_sec=10, bytes_out_per_sec=30)
    builder.add_partition("t", 1, [3], size_bytes=5, bytes_in_per_sec=4, bytes_out_per_sec=1)
    loads = broker_loads(builder.build())
    assert loads.metric("network_out") == (30 + 2 * 10, 0, 0, 1)
    assert loads.metric("network_in") == (10, 10, 10, 4)
    assert loads.metric("disk") == (7, 7, 7, 5)
    assert loads.metric("leaders") == (1, 0, 0, 1)


def test_unmeasured_cpu_is_estimated_from_the_traffic_by_role() -> None:
    builder = ClusterBuilder()
    for b in range(2):
        builder.add_broker(b)
    builder.add_partition("t", 0, [0, 1], bytes_in_per_sec=40 * 2**20, bytes_out_per_sec=120 * 2**20)
    cpu = quantity("cpu").per_broker(builder.build())
    assert cpu.tolist() == [2.0, 0.5]
    assert ESTIMATED_CPU.follower_in == ESTIMATED_CPU.leader_in / 2


def test_the_report_shows_the_loads_the_planner_weighs() -> None:
    model = skewed_cluster(brokers=9, new_brokers=2, partitions=600, rf=3, seed=5)
    options = PlannerOptions()
    state = State(model, options, resolve_groups(model, options))
    names = [q.name for q in QUANTITIES]
    report = broker_loads(model)
    for key, _title, _unit in METRICS:
        column = names.index(key.replace("_", "-"))
        assert np.allclose(report.metric(key), state.load[:, column], rtol=1e-12), key


def test_an_unknown_quantity_is_named() -> None:
    with pytest.raises(KeyError, match="unknown name 'messages'"):
        quantity("messages")

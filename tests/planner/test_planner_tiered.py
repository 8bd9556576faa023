"""Tiered storage (KIP-405, KIP-1023) in the planner: a move costs the bytes its new replica copies
(ClusterModel.copy_bytes), the disk goals weigh what is on the brokers' disks (the local logs), and
among moves of the same effect the cheaper ones go first."""

from __future__ import annotations

import dataclasses

import numpy as np
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.planner import PlannerOptions, plan

MB = 1e6


def _cluster(*, last_tiered: bool) -> ClusterModel:
    """Two topics on brokers 1 and 2 of four, every partition 10 MB on disk; one topic's partitions also
    hold 90 MB in remote storage, of which the brokers copy 1 MB where they fetch from the last tiered offset."""
    b = ClusterBuilder()
    for i in range(1, 5):
        b.add_broker(i, rack=f"r{i}", fetch_last_tiered=last_tiered)
    for topic in ("plain", "tiered"):
        for p in range(12):
            tiered = {"remote_bytes": 90 * MB, "untiered_bytes": 1 * MB} if topic == "tiered" else {}
            b.add_partition(topic, p, [1 + p % 2, 2 - p % 2], size_bytes=10 * MB, **tiered)
    return b.build()


def _no_topic_goals() -> PlannerOptions:
    options = PlannerOptions()
    return dataclasses.replace(
        options, distribution_goals=tuple(g for g in options.distribution_goals if "topic" not in g)
    )


def _moved(model: ClusterModel, proposal_plan: object) -> dict[str, int]:
    out: dict[str, int] = {}
    for target in proposal_plan.partitions:  # type: ignore[attr-defined]
        before = model.replica_ids(model.partition_index(target.topic, target.partition))
        out[target.topic] = out.get(target.topic, 0) + len(set(target.replicas) - set(before))
    return out


def test_the_cheap_moves_go_first_where_the_goals_allow() -> None:
    model = _cluster(last_tiered=True)
    proposal = plan(model, _no_topic_goals())
    moved = _moved(model, proposal.plan)
    # Brokers 3 and 4 need about a quarter of the 48 replicas; every one moved is a tiered one (1 MB each).
    assert moved == {"tiered": proposal.summary["moves"]}
    assert proposal.summary["moves"] >= 20
    assert proposal.summary["bytesToMove"] == proposal.summary["moves"] * 1 * MB
    assert not proposal.summary["goalsViolated"]


def test_bytes_to_move_are_what_the_new_replicas_copy() -> None:
    for last_tiered, tiered_copy in ((True, 1 * MB), (False, 10 * MB)):
        model = _cluster(last_tiered=last_tiered)
        proposal = plan(model, PlannerOptions())  # the topic goals spread both topics: both move
        moved = _moved(model, proposal.plan)
        assert moved["plain"] > 0
        assert moved["tiered"] > 0
        assert proposal.summary["bytesToMove"] == moved["plain"] * 10 * MB + moved["tiered"] * tiered_copy


def test_the_disk_goals_weigh_the_local_logs_not_remote_storage() -> None:
    proposal = plan(_cluster(last_tiered=True), _no_topic_goals())
    disk = proposal.summary["groups"]["cluster"]["after"]["disk"]
    # 24 partitions x 2 replicas x 10 MB on disk over 4 brokers: remote storage is on no broker's disk.
    assert disk["avg"] == 24 * 2 * 10 * MB / 4
    assert disk["maxOverAvg"] <= 1.1
    model = _cluster(last_tiered=True)
    assert np.array_equal(model.size_bytes, np.full(24, 10 * MB))

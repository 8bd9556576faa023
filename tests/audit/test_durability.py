"""The durability audit flags exactly the misconfigured topics and the partitions at risk now."""

from __future__ import annotations

import pytest
from kafka_balancer.durability import (
    AT_MIN_ISR,
    MIN_ISR_BELOW_2,
    MIN_ISR_NOT_BELOW_RF,
    NO_ELIGIBLE_LEADER,
    OFFLINE,
    RF_BELOW_3,
    UNCLEAN_ELECTION,
    UNDER_REPLICATED,
    AuditOptions,
    audit,
)
from kafka_balancer.model import ClusterBuilder, ClusterModel, ModelError


def test_cluster() -> ClusterModel:
    """Six topics: two well configured, four each with one kind of mistake; broker 4 is down."""
    b = ClusterBuilder(cluster_name="audit-test")
    for broker in (1, 2, 3):
        b.add_broker(broker, rack=f"r{broker}")
    b.add_broker(4, rack="r4", alive=False)
    b.set_topic("good", min_insync_replicas=2, unclean_leader_election=False)
    b.set_topic("good-rf4", min_insync_replicas=2)
    b.set_topic("rf2", min_insync_replicas=1)
    b.set_topic("default-min-isr")
    b.set_topic("min-isr-equals-rf", min_insync_replicas=3)
    b.set_topic("unclean", min_insync_replicas=2, unclean_leader_election=True)
    b.add_partition("good", 0, [1, 2, 3])
    b.add_partition("good", 1, [2, 3, 1], isr=[2, 3])  # lost one replica: at min ISR, under-replicated
    b.add_partition("good-rf4", 0, [1, 2, 3, 4], isr=[1, 2, 3])  # broker 4 down but ISR 3 > 2
    b.add_partition("good-rf4", 1, [4, 1, 2, 3], leader=4)  # leader on the dead broker: offline
    b.add_partition("rf2", 0, [1, 2])
    b.add_partition("default-min-isr", 0, [1, 2, 3])
    b.add_partition("min-isr-equals-rf", 0, [1, 2, 3])
    b.add_partition("unclean", 0, [3, 1, 2])
    return b.build()


test_cluster.__test__ = False  # type: ignore[attr-defined]  # a builder, not a test


def test_flags_exactly_the_misconfigured_topics() -> None:
    report = audit(test_cluster())
    flags = {t.name: set(t.flags) for t in report.topics}
    assert flags == {
        "good": set(),
        "good-rf4": set(),
        "rf2": {RF_BELOW_3, MIN_ISR_BELOW_2},
        "default-min-isr": {MIN_ISR_BELOW_2},
        "min-isr-equals-rf": {MIN_ISR_NOT_BELOW_RF},
        "unclean": {UNCLEAN_ELECTION},
    }
    assert [t.name for t in report.flagged] == ["default-min-isr", "min-isr-equals-rf", "rf2", "unclean"]


def test_partitions_at_risk_now() -> None:
    report = audit(test_cluster())
    risks = {(p.topic, p.partition): set(p.risks) for p in report.at_risk}
    assert risks == {
        ("good", 1): {UNDER_REPLICATED, AT_MIN_ISR},
        ("good-rf4", 0): {UNDER_REPLICATED},
        ("good-rf4", 1): {OFFLINE, UNDER_REPLICATED},
        # min ISR = RF: fully in sync, yet one more failure stops acks=all writes.
        ("min-isr-equals-rf", 0): {AT_MIN_ISR},
        # RF 2 with min ISR 1 is not at min ISR while both replicas are in sync: 2 > 1.
    }
    assert report.risk_counts == {OFFLINE: 1, UNDER_REPLICATED: 3, AT_MIN_ISR: 2, NO_ELIGIBLE_LEADER: 0}
    assert {p.elr_state for p in report.at_risk} == {"not-reported"}  # a model without ELR
    offline = next(p for p in report.at_risk if p.partition == 1 and p.topic == "good-rf4")
    assert offline.leader is None
    assert offline.isr == (1, 2, 3)  # the dead broker is not counted as in sync


def test_topic_configs_read_from_the_cluster_win_over_the_model() -> None:
    configs = {"rf2": {"min.insync.replicas": "2"}, "unclean": {"unclean.leader.election.enable": "false"}}
    flags = {t.name: set(t.flags) for t in audit(test_cluster(), configs).topics}
    assert flags["rf2"] == {RF_BELOW_3, MIN_ISR_NOT_BELOW_RF}
    assert flags["unclean"] == set()


def test_broker_default_applies_to_topics_without_a_setting() -> None:
    report = audit(test_cluster(), None, AuditOptions(default_min_insync_replicas=2))
    assert "default-min-isr" not in {t.name for t in report.flagged}


def test_bad_config_value_names_topic_config_and_value() -> None:
    with pytest.raises(ModelError, match=r"topic 'rf2': config 'min.insync.replicas' must be an integer, got 'two'"):
        audit(test_cluster(), {"rf2": {"min.insync.replicas": "two"}})
    with pytest.raises(ModelError, match=r"config 'unclean.leader.election.enable' must be true or false, got 'y'"):
        audit(test_cluster(), {"rf2": {"unclean.leader.election.enable": "y"}})


def test_report_json_summary() -> None:
    doc = audit(test_cluster()).to_dict()
    assert doc["summary"]["topics"] == 6
    assert doc["summary"]["flaggedTopics"] == 4
    assert doc["summary"]["partitionsAtRisk"] == 4
    assert doc["summary"]["topicFlags"][UNCLEAN_ELECTION] == 1


def test_partitions_are_listed_by_isr_and_eligible_leader_replica_state() -> None:
    """KIP-966: at or below min ISR with no eligible leader replica is at risk; the list goes worst ISR
    state first, and within one, partitions without an eligible leader before those with one."""
    b = ClusterBuilder()
    for broker in (1, 2, 3, 4):
        b.add_broker(broker, alive=broker < 3)
    b.set_topic("e", min_insync_replicas=2)
    b.set_topic("f", min_insync_replicas=3)
    b.add_partition("e", 0, [1, 2, 3], isr=[1, 2], elr=[])  # at min ISR: Kafka keeps ELR empty there
    b.add_partition("e", 1, [1, 2, 4], isr=[1], elr=[4])  # below min ISR, broker 4 eligible
    b.add_partition("f", 0, [1, 2, 3], isr=[1], elr=[])  # below min ISR, none eligible
    b.add_partition("f", 1, [3, 4, 1], leader=None, leader_given=True, isr=[3], elr=[4])  # offline, 4 eligible
    report = audit(b.build())
    listed = [(f"{p.topic}-{p.partition}", p.isr_state, p.elr_state, p.elr) for p in report.at_risk]
    assert listed == [
        ("f-1", "offline", "eligible", (4,)),
        ("f-0", "below-min-isr", "none", ()),
        ("e-1", "below-min-isr", "eligible", (4,)),
        ("e-0", "at-min-isr", "none", ()),
    ]
    no_elr = {f"{p.topic}-{p.partition}" for p in report.at_risk if NO_ELIGIBLE_LEADER in p.risks}
    assert no_elr == {"f-0", "e-0"}
    assert report.risk_counts[NO_ELIGIBLE_LEADER] == 2
    assert report.to_dict()["partitionsAtRisk"][0]["elrState"] == "eligible"

"""End to end on real Kafka 4.3.1 brokers: the real operator (kopf, against the emulated Kubernetes API)
balances a real cluster holding real records (issue 32). A Manual BalancePolicy gets a proposal in its
status, the approval names its id, the execution moves real data and ends Completed, and the scraped
kafka_balancer_moved_bytes_total equals the bytes of the approved plan."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kafka_targets import no_throttle_left
from real_kafka import RealKafka

from .conftest import Cluster, Operator

pytestmark = pytest.mark.timeout(300)

# Both topics sit on two brokers of the six: the plan spreads them over all of them.
TOPICS = {"payments": ([1, 2], 8), "clicks": ([4, 5], 6)}
RECORD = 10_000
RECORDS = 300  # 3 MB per partition


def test_manual_policy_on_real_kafka_moves_the_approved_plan(
    kube: Cluster, operator: Operator, real_kafka: RealKafka
) -> None:
    written = {}
    for name, (home, partitions) in TOPICS.items():
        real_kafka.create_topic(name, [home if p % 2 else home[::-1] for p in range(partitions)])
        written[name] = real_kafka.produce(
            name, partitions=range(partitions), records_per_partition=RECORDS, record_bytes=RECORD
        )
    policy = {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BalancePolicy",
        "metadata": {"name": "main"},
        "spec": {
            "mode": "Manual",
            "cluster": {"bootstrapServers": real_kafka.bootstrap_servers},
            "execution": {"throttleBytesPerSec": 20_000_000},
        },
    }
    kube.apply(policy)

    def status() -> dict[str, Any]:
        return dict(kube.policy("main").get("status") or {})

    ready = kube.wait_for("a proposal", lambda: (s := status()).get("state") == "ProposalReady" and s, timeout=120)
    proposal = ready["proposal"]
    assert proposal["moves"] > 0
    assert proposal["balancednessAfter"] > proposal["balancednessBefore"]
    plan = json.loads(kube.config_map(proposal["configMap"])["plan.json"])

    kube.patch_policy("main", {"approvedProposal": proposal["id"]})

    def completed() -> dict[str, Any] | None:
        s = status()
        return s if (s.get("lastRun") or {}).get("result") == "Completed" and s.get("state") == "Completed" else None

    done = kube.wait_for("the execution to complete", completed, timeout=180)
    assert done["lastRun"]["proposalId"] == proposal["id"]
    assert done["progress"]["bytesMoved"] == done["progress"]["bytesTotal"] == proposal["bytesToMove"] > 0
    assert operator.metric("kafka_balancer_moved_bytes_total", policy="main") == proposal["bytesToMove"]
    after = real_kafka.partitions()
    for entry in plan["partitions"]:
        view = after[(entry["topic"], entry["partition"])]
        assert list(view.replicas) == entry["replicas"]
        assert view.leader == view.replicas[0]
    no_throttle_left(real_kafka.throttle_leftovers)  # the last removals reach every broker a moment later
    for name, partitions in written.items():
        assert real_kafka.read_back(name, sorted(partitions)) == partitions

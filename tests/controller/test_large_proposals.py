"""Proposals larger than one ConfigMap can hold (issue 37, item 9), and reading them back verified.

A real API server refuses a ConfigMap whose data exceeds 1 MiB and etcd any object over 1.5 MiB;
the emulated API server (kafka_balancer.sandbox.kube) refuses them the same way. A proposal that
changes 4,000 partitions took about 1.3 MiB as indented JSON in one ConfigMap: the operator retried
forever and the policy never showed a proposal nor a Stalled condition.
"""

from __future__ import annotations

import base64
import gzip
import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka_balancer.controller.kubeapi import KubeApi, owner_reference
from kafka_balancer.controller.proposal_store import (
    ConfigMapNotOurs,
    Owner,
    ProposalLost,
    ProposalStore,
    ProposalTooLarge,
)
from kafka_balancer.model import ClusterBuilder, ClusterModel, PartitionTarget, ReassignmentPlan
from kafka_balancer.model.policy.parsing import PolicyError, parse_balance_policy_spec
from kafka_balancer.model.proposal import LeaderChange, Proposal, content_id
from kafka_balancer.sandbox import EmulatedCluster
from kafka_balancer.sandbox.kube import DATA_LIMIT_BYTES, data_size

from .conftest import Cluster, Operator, policy_manifest, run_operator
from .test_e2e import skewed_model

pytestmark = pytest.mark.timeout(240)

TOPIC = "events"
PARTITIONS = 12_000


def leader_skewed_model() -> ClusterModel:
    """Six brokers on three racks, replicas even, but every replica list sorted: brokers 1-4 lead everything.

    Balancing leaders changes the replica order of about 4,000 partitions and copies no data."""
    builder = ClusterBuilder(cluster_name="leaders")
    for broker in range(1, 7):
        builder.add_broker(broker, rack="abc"[(broker - 1) % 3])
    builder.set_topic(TOPIC)
    for p in range(PARTITIONS):
        builder.add_partition(TOPIC, p, sorted(1 + (p + k) % 6 for k in range(3)), size_bytes=1e6)
    return builder.build()


def _policy(bootstrap: str, **spec: Any) -> dict[str, Any]:
    limits = {"concurrentMovesPerBroker": 5000, "concurrentMovesTotal": 5000}
    cluster = {"bootstrapServers": bootstrap}
    return policy_manifest(
        "big",
        {"cluster": cluster, "mode": "Manual", "goals": {"maxReplicasPerBroker": 10_000}, "execution": limits, **spec},
    )


def _status(kube: Cluster) -> dict[str, Any]:
    return dict(kube.policy("big").get("status") or {})


def _proposal_maps(kube: Cluster) -> list[dict[str, Any]]:
    return [
        cm
        for cm in kube.server.objects("configmaps", group="", version="v1")
        if cm["metadata"]["name"].startswith("big-proposal")
    ]


def _stalled(kube: Cluster, name: str = "big") -> dict[str, Any] | None:
    cond = kube.condition(name, "Stalled")
    return cond if cond and cond["status"] == "True" else None


def _no_stall(kube: Cluster) -> None:
    stalled = _stalled(kube)
    if stalled and stalled["reason"] != "ClusterUnreachable":  # 12,000 partitions on a busy machine: retried
        pytest.fail(f"the policy stalled: {stalled}")


def test_a_proposal_over_one_mebibyte_is_stored_read_back_and_executed(
    kube: Cluster, emulator: Callable[..., EmulatedCluster]
) -> None:
    cluster = emulator(leader_skewed_model(), time_scale=50.0)
    with run_operator():
        _propose_and_execute(kube, cluster)


def _propose_and_execute(kube: Cluster, cluster: EmulatedCluster) -> None:
    kube.apply(_policy(cluster.bootstrap_servers))

    def proposed() -> dict[str, Any] | None:
        _no_stall(kube)
        return _status(kube).get("proposal")

    proposal = kube.wait_for("a proposal in status", proposed, timeout=90)
    assert proposal["partitions"] >= 3_700, proposal
    # Stored as the API server allows: every ConfigMap's data under 1 MiB, the proposal in it compressed.
    maps = _proposal_maps(kube)
    assert maps, "no ConfigMap holds the proposal"
    assert all(data_size(cm) <= DATA_LIMIT_BYTES for cm in maps)
    stored = kube.config_map(proposal["configMap"])
    assert stored["proposal-id"] == proposal["id"]
    summary = json.loads(stored["summary.json"])
    assert summary["proposalId"] == proposal["id"]

    kube.patch_policy("big", {"approvedProposal": proposal["id"]})

    def completed() -> dict[str, Any] | None:
        _no_stall(kube)
        s = _status(kube)
        return s if (s.get("lastRun") or {}).get("result") == "Completed" else None

    final = kube.wait_for("the execution to complete", completed, timeout=150)
    assert final["lastRun"]["proposalId"] == proposal["id"]
    assert final["progress"]["partitionsDone"] == proposal["partitions"]
    with cluster.state.lock:
        leaders = [p.leader for p in cluster.state.rows]
    counts = [leaders.count(b) for b in range(1, 7)]
    assert max(counts) - min(counts) <= PARTITIONS // 100, counts  # leadership spread over the six brokers


def test_a_proposal_over_the_limit_stalls_with_the_reason(
    kube: Cluster, emulator: Callable[..., EmulatedCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = emulator(leader_skewed_model(), time_scale=50.0)
    monkeypatch.setenv("KAFKA_BALANCER_PROPOSAL_MAX_BYTES", str(256 * 1024))
    with run_operator():
        kube.apply(_policy(cluster.bootstrap_servers))
        stalled = kube.wait_for("Stalled", lambda: _stalled(kube), timeout=90)
    assert stalled["reason"] == "ProposalTooLarge"
    assert "KAFKA_BALANCER_PROPOSAL_MAX_BYTES" in stalled["message"]
    assert "0.2 MiB" in stalled["message"]
    assert _status(kube)["state"] == "Stalled"
    assert not _status(kube).get("proposal")
    assert not _proposal_maps(kube), "nothing is stored when the proposal is refused"


def _tamper(kube: Cluster, name: str) -> None:
    """Change one replica list in the stored proposal, keeping its id (what a bad edit or a bit flip does)."""
    raw = kube.core.read_namespaced_config_map(name, "kafka")
    document = json.loads(gzip.decompress(base64.b64decode(raw.binary_data["proposal.json.gz"])))
    first = document["plan"]["partitions"][0]
    first["replicas"] = list(reversed(first["replicas"]))
    packed = base64.b64encode(gzip.compress(json.dumps(document).encode())).decode()
    kube.core.patch_namespaced_config_map(name, "kafka", {"binaryData": {"proposal.json.gz": packed}})


def test_a_stored_proposal_that_is_not_the_reviewed_one_is_never_executed(
    kube: Cluster, operator: Operator, emulator: Callable[..., EmulatedCluster]
) -> None:
    cluster = emulator(skewed_model(), time_scale=20.0)
    policy = _policy(cluster.bootstrap_servers)
    policy["spec"]["execution"] = {"throttleBytesPerSec": 200_000_000}
    kube.apply(policy)
    reviewed = kube.wait_for("a proposal", lambda: _status(kube).get("proposal"))
    plan = json.loads(kube.config_map(reviewed["configMap"])["plan.json"])
    _tamper(kube, reviewed["configMap"])
    kube.patch_policy("big", {"approvedProposal": reviewed["id"]})

    lost = kube.wait_for(
        "a ProposalLost event", lambda: [e for e in kube.events("big") if e.get("reason") == "ProposalLost"]
    )
    assert lost[0]["type"] == "Warning"
    assert "its content hashes to" in lost[0]["message"]
    # Planned again from the same cluster and spec: the same id, stored whole again, and only that runs.
    replanned = _status(kube)["proposal"]
    assert replanned["trigger"] == "ProposalLost"
    assert replanned["id"] == reviewed["id"]
    kube.wait_for("completion", lambda: (_status(kube).get("lastRun") or {}).get("result") == "Completed")
    with cluster.state.lock:
        placed = {(p.topic, p.index): list(p.replicas) for p in cluster.state.rows}
    assert all(placed[(e["topic"], e["partition"])] == e["replicas"] for e in plan["partitions"])


def test_consumer_group_top_n_is_bounded() -> None:
    spec = {"cluster": {"bootstrapServers": "k:9092"}, "analysis": {"consumerGroups": {"topN": 100}}}
    assert parse_balance_policy_spec(spec).analysis.consumer_groups.top_n == 100
    spec["analysis"]["consumerGroups"]["topN"] = 101
    with pytest.raises(PolicyError, match=r"spec\.analysis\.consumerGroups\.topN"):
        parse_balance_policy_spec(spec)


# ----- the store on its own, against the emulated API server ------------------------------------------------
@pytest.fixture
def store(kube: Cluster) -> Iterator[ProposalStore]:
    api = KubeApi.from_environment()  # the kube fixture points KUBECONFIG at kmock
    try:
        yield ProposalStore(api)
    finally:
        api.close()


def _owner(uid: str = "uid-1") -> Owner:
    return Owner(owner_reference({"kind": "BalancePolicy", "metadata": {"name": "big", "uid": uid}}))


def _random_proposal(partitions: int, seed: int) -> Proposal:
    """A verifiable proposal whose JSON compresses badly: random topic names and replica lists."""
    rng = random.Random(seed)
    targets = [
        PartitionTarget(f"t-{rng.getrandbits(64):016x}", rng.randrange(1000), tuple(rng.sample(range(1, 500), 3)))
        for _ in range(partitions)
    ]
    plan = ReassignmentPlan.of(targets)
    leaders = tuple(sorted(LeaderChange(t.topic, t.partition, None, t.replicas[0]) for t in targets[::2]))
    basis = f"{rng.getrandbits(256):064x}"
    pid = content_id(basis, plan, leaders)
    return Proposal(pid, plan, leaders, {"proposalId": pid}, basis)


def test_a_large_proposal_is_split_over_configmaps_and_read_back_only_whole(
    kube: Cluster, store: ProposalStore
) -> None:
    big = _random_proposal(60_000, seed=1)
    name = store.save("kafka", _owner(), big)
    maps = {cm["metadata"]["name"]: cm for cm in _proposal_maps(kube)}
    assert set(maps) == {"big-proposal", "big-proposal-2", "big-proposal-3"}
    assert maps["big-proposal"]["data"]["parts"] == "3"
    assert "plan.json" not in maps["big-proposal"]["data"]  # too large for the copy meant for people
    assert all(data_size(cm) <= DATA_LIMIT_BYTES for cm in maps.values())
    assert all(cm["metadata"]["ownerReferences"][0]["uid"] == "uid-1" for cm in maps.values())
    assert store.load("kafka", name, big.id) == big

    # The next, smaller proposal takes fewer parts; part 3 of the old one is left and ignored.
    small = _random_proposal(100, seed=2)
    store.save("kafka", _owner(), small)
    assert store.load("kafka", name, small.id) == small
    assert "plan.json" in kube.config_map("big-proposal")
    with pytest.raises(ProposalLost, match=f"holds proposal {small.id}, not {big.id}"):
        store.load("kafka", name, big.id)

    # A part of another proposal (a write interrupted between the parts) is never mixed in.
    store.save("kafka", _owner(), big)
    kube.core.patch_namespaced_config_map("big-proposal-2", "kafka", {"data": {"proposal-id": small.id}})
    with pytest.raises(ProposalLost, match="part 2 of proposal"):
        store.load("kafka", name, big.id)


def test_a_configmap_the_policy_does_not_own_is_never_written(kube: Cluster, store: ProposalStore) -> None:
    kube.core.create_namespaced_config_map(
        "kafka", {"metadata": {"name": "big-proposal-2"}, "data": {"theirs": "keep me"}}
    )
    with pytest.raises(ConfigMapNotOurs, match="kafka/big-proposal-2 exists and is not owned by BalancePolicy"):
        store.save("kafka", _owner(), _random_proposal(35_000, seed=4))
    assert kube.config_map("big-proposal-2") == {"theirs": "keep me"}
    assert [cm["metadata"]["name"] for cm in _proposal_maps(kube)] == ["big-proposal-2"], "nothing written"


def test_an_oversized_or_inflating_proposal_is_refused(kube: Cluster, store: ProposalStore) -> None:
    proposal = _random_proposal(2_000, seed=3)
    with pytest.raises(ProposalTooLarge, match=r"at most 0\.1 MiB"):
        ProposalStore(store.kube, max_bytes=100_000).save("kafka", _owner(), proposal)
    store.save("kafka", _owner(), proposal)
    # Reading back decompresses no more than the limit: a stored piece that inflates further is refused.
    with pytest.raises(ProposalLost, match=r"expands beyond 0\.1 MiB"):
        ProposalStore(store.kube, max_bytes=100_000).load("kafka", "big-proposal", proposal.id)

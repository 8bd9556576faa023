"""The operator process is SIGKILLed mid-execution; a new process resumes from status and finishes.

Unlike test_e2e's restart test (a graceful kopf shutdown in the test process), nothing of the first
operator's cleanup runs here: it is a separate process started the way the image starts it (the
Dockerfile's ENTRYPOINT without tini, plus its CMD) and killed with SIGKILL while reassignments are
in flight in Kafka and their throttles are set. Everything a restarted operator knows is what the
first one wrote to the BalancePolicy status (the executor checkpoint) and what Kafka reports.

Kubernetes is the sandbox's kmock API server and, in a second run, the real kube-apiserver with the
chart's RBAC (tests/kube_apiserver.py), the CRDs installed in both; Kafka is the emulator in this
process, so the test counts the AlterPartitionReassignments entries its controller serves and reads
its state directly.

Time: the emulator runs at 2x real time, so a 10 MB move at 4 MB/s takes ~1.3 s. On a real cluster
a move copies gigabytes and lasts far longer than an operator restart, so the moves in flight at the
kill are still in flight when the new operator starts. The emulator keeps them in flight the same
way: the moves running at the kill are held (``stick_reassignment``) while no operator runs, and
released once the new operator has listed the cluster's reassignments.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.sandbox import EmulatedCluster
from kafka_balancer.sandbox.kube import KubeClient
from submissions import Submissions

from .conftest import both_api_servers
from .kube import ApiServer
from .operator_process import OperatorProcess
from .tenants import wait

pytestmark = pytest.mark.timeout(150)

REPO = Path(__file__).resolve().parents[2]
API = "kafkabalancer.io/v1alpha1"
NS = "kafka"
POLICY = "main"
GROUPS = {"payments": ([1, 2, 3, 4], "payments"), "analytics": ([5, 6, 7, 8], "analytics-clicks")}
LIST_PARTITION_REASSIGNMENTS = 46
# Kafka's throttle configs: rates on brokers, the throttled replica lists on topics.
BROKER_THROTTLES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
TOPIC_THROTTLES = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def skewed_model() -> ClusterModel:
    """Two groups of four brokers; each group's topic lives entirely on two of them (max/avg 2.0)."""
    builder = ClusterBuilder(cluster_name="skewed")
    for broker in range(1, 9):
        builder.add_broker(broker, rack="rack-a" if broker % 2 else "rack-b")
    for brokers, topic in GROUPS.values():
        builder.set_topic(topic)
        home = brokers[:2]
        for p in range(8):
            builder.add_partition(topic, p, home if p % 2 else home[::-1], size_bytes=10e6)
    return builder.build()


# ----- Kubernetes -----------------------------------------------------------------------------------
def _install(client: KubeClient, kafka: EmulatedCluster) -> None:
    """``kubectl apply`` of two ResourceGroups and a Manual, throttled BalancePolicy (the CRDs are in)."""
    for name, (brokers, topic) in GROUPS.items():
        client.create(
            {
                "apiVersion": API,
                "kind": "ResourceGroup",
                "metadata": {"name": name, "namespace": NS},
                "spec": {"brokers": {"ids": brokers}, "topics": {"names": [topic]}},
            },
            "resourcegroups",
        )
    client.create(
        {
            "apiVersion": API,
            "kind": "BalancePolicy",
            "metadata": {"name": POLICY, "namespace": NS},
            "spec": {
                "cluster": {"bootstrapServers": kafka.bootstrap_servers},
                "resourceGroups": list(GROUPS),
                "mode": "Manual",
                # One move per broker at a time: the execution runs in rounds, so the kill can
                # fall between finished moves and moves still copying.
                "execution": {"throttleBytesPerSec": 4_000_000, "concurrentMovesPerBroker": 1},
            },
        },
        "balancepolicies",
    )


# ----- the test -------------------------------------------------------------------------------------


def _throttles(kafka: EmulatedCluster) -> dict[str, dict[str, str]]:
    """Every throttle config set in the cluster: {"broker 3": {...}, "topic payments": {...}}."""
    with kafka.state.lock:
        found = {
            f"broker {b.id}": {k: v for k, v in b.configs.items() if k in BROKER_THROTTLES}
            for b in kafka.state.brokers.values()
        }
        found |= {
            f"topic {t.name}": {k: v for k, v in t.configs.items() if k in TOPIC_THROTTLES}
            for t in kafka.state.topics.values()
        }
    return {where: configs for where, configs in found.items() if configs}


@both_api_servers
@pytest.mark.usefixtures("no_unlisted_calls")  # neither operator made a request outside its RBAC
def test_operator_killed_mid_execution_is_resumed_by_a_new_process(
    api_server: ApiServer,
    emulator: Callable[..., EmulatedCluster],
    submissions: Submissions,
    start_operator: Callable[[Path], OperatorProcess],
    tmp_path: Path,
) -> None:
    kafka = emulator(skewed_model(), time_scale=2.0)
    with kafka.state.lock:
        initial = {(p.topic, p.index): list(p.replicas) for p in kafka.state.rows}
    client = api_server.client("admin")
    kubeconfig = api_server.write_kubeconfig(tmp_path / "kubeconfig", NS, user="operator")
    _install(client, kafka)

    def status() -> dict[str, Any]:
        return dict(client.get(API, "balancepolicies", NS, POLICY).get("status") or {})

    def checkpoint() -> dict[str, Any]:
        text = status().get("executionCheckpoint")
        return dict(json.loads(text)) if text else {}

    first = start_operator(kubeconfig)
    proposal = wait(
        "a proposal in status", lambda: status().get("state") == "ProposalReady" and status()["proposal"], [first]
    )
    assert not submissions.moves, "Manual mode: nothing runs before approval"
    client.merge_patch(API, "balancepolicies", NS, POLICY, {"spec": {"approvedProposal": proposal["id"]}})

    def midway() -> dict[str, Any] | None:
        s = status()
        progress, record = s.get("progress") or {}, checkpoint()
        running = s.get("state") == "Executing" and 0 < progress.get("partitionsDone", 0) < progress["partitionsTotal"]
        return s if running and record.get("inFlight") else None

    before = wait("some moves done and some in flight", midway, [first])
    assert not before.get("lastRun"), "the first run of this proposal has not ended"

    # SIGKILL at a moment when Kafka has moves in flight. The emulator's lock is held from the check
    # to the operator's death, so no move can finish in between.
    deadline = time.monotonic() + 30
    in_flight: list[tuple[str, int]] = []
    while not in_flight:
        assert time.monotonic() < deadline, "no reassignment in flight in Kafka for 30 s"
        with kafka.state.lock:
            in_flight = sorted(kafka.state.reassigning)
            if in_flight:
                os.kill(first.pid, signal.SIGKILL)
                assert first.proc.wait(timeout=10) == -signal.SIGKILL
                for topic, partition in in_flight:
                    kafka.stick_reassignment(topic, partition)  # see the module docstring
        if not in_flight:
            time.sleep(0.02)
    killed_wall = dt.datetime.now(dt.UTC)
    killed_at = kafka.request_count(LIST_PARTITION_REASSIGNMENTS)
    done_at_kill = dict(submissions.moves)
    print(
        f"killed pid {first.pid}: {len(done_at_kill)}/{proposal['partitions']} moves submitted, in flight {in_flight}"
    )

    # The crash left everything in place: the moves in Kafka, their throttles, the checkpoint naming them.
    record = checkpoint()
    assert status()["state"] == "Executing"
    assert record["state"] == "MovingReplicas"
    assert record["context"]["proposalId"] == proposal["id"]
    # Write-ahead: the checkpoint names a move before it is submitted.
    assert set(in_flight) <= {(t, p) for t, p, *_ in record["inFlight"]}
    with kafka.state.lock:
        assert sorted(kafka.state.reassigning) == in_flight, "the moves stay in flight in Kafka"
    throttled = _throttles(kafka)
    assert any(k.startswith("broker") for k in throttled), throttled
    assert any(k.startswith("topic") for k in throttled), throttled

    second = start_operator(kubeconfig)
    # Once the new operator has listed Kafka's reassignments, the held moves copy on.
    wait(
        "the new operator to list the reassignments",
        lambda: kafka.request_count(LIST_PARTITION_REASSIGNMENTS) > killed_at,
        [second],
    )
    for topic, partition in in_flight:
        kafka.stick_reassignment(topic, partition, stuck=False)

    def completed() -> dict[str, Any] | None:
        s = status()
        return s if s.get("state") == "Completed" and (s.get("lastRun") or {}).get("result") == "Completed" else None

    final = wait("the resumed execution to complete", completed, [second], timeout=90)
    assert final["lastRun"]["proposalId"] == proposal["id"]
    assert final["progress"]["percent"] == 100.0
    # Bytes are counted once too: what moved before the kill comes from the checkpoint.
    assert final["progress"]["bytesMoved"] == final["progress"]["bytesTotal"] == proposal["bytesToMove"]
    assert final["lastRun"]["bytesMoved"] == proposal["bytesToMove"]
    assert final["lastRun"]["partitionsMoved"] == proposal["partitions"]
    # One run, interrupted: it started before the kill, not when the second operator took it over.
    assert dt.datetime.fromisoformat(final["lastRun"]["startedAt"].replace("Z", "+00:00")) <= killed_wall
    assert final["progress"]["partitionsDone"] == final["progress"]["partitionsTotal"] == proposal["partitions"]
    events = client.items("v1", "events", NS)
    resumed = [e for e in events if e.get("reason") == "ExecutionResumed"]
    assert resumed, sorted({e.get("reason") for e in events})
    assert proposal["id"] in resumed[0]["message"]

    # The cluster is exactly the reviewed plan (from the proposal's ConfigMap), leaders preferred.
    stored = client.get("v1", "configmaps", NS, proposal["configMap"])["data"]
    assert stored["proposal-id"] == proposal["id"]
    plan = {(e["topic"], e["partition"]): e["replicas"] for e in json.loads(stored["plan.json"])["partitions"]}
    assert len(plan) == proposal["partitions"]
    expected = {key: plan.get(key, replicas) for key, replicas in initial.items()}
    with kafka.state.lock:
        assert not kafka.state.reassigning
        actual = {(p.topic, p.index): list(p.replicas) for p in kafka.state.rows}
        leaders = {(p.topic, p.index): p.leader for p in kafka.state.rows}
    assert actual == expected
    assert leaders == {key: replicas[0] for key, replicas in expected.items()}
    assert not _throttles(kafka), "no throttle is left behind"

    # Resumed, not restarted: each partition of the plan was submitted once, across both processes.
    assert submissions.moves == Counter(dict.fromkeys(plan, 1)), submissions.moves
    assert not submissions.cancels
    assert set(in_flight) <= set(done_at_kill), "the held moves were submitted by the first operator"
    assert set(done_at_kill) < set(plan), "the second operator submitted the rest"

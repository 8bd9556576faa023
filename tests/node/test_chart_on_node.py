"""README.md's "Installing on a real cluster", command by command, on a real Kubernetes node
(tests/node/cluster.py) with real Kafka brokers on the node's network.

The commands are read from the README (tests/node/readme.py) and run as typed: `ctr` against the
node's containerd, `helm` with the Helm library and the flags Helm's parsers read from the line, every
`kubectl` with the real kubectl. Two things are filled in, as a user fills them in: the policy file
(examples/01-rebalance-manual.yaml with this cluster's bootstrap servers, see ``_policy``) and the
proposal's id, read from `kubectl get balancepolicies`. One thing is added: between the approval and
the end of the execution the operator's pod is deleted, and the Deployment's next pod must resume the
execution. After the README's removal commands, no throttle and no object of the operator's is left.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from bounds import until
from image.podman import IMAGE, IMAGE_ARCHIVE
from kafka_balancer.sandbox.real import RealCluster, RealClusterOptions
from kubectl import REPO, table
from real_kafka import RealKafka

from node.cluster import KubeNode, kube_node
from node.components import CONTAINERD_SOCKET
from node.namespaces import NODE_ADDRESS
from node.readme import blocks, helm_command

EXAMPLE = "examples/01-rebalance-manual.yaml"
APPROVAL = "<the PROPOSAL column>"
# bytes/s per broker: about 18 MB to move at 40 kB/s on each of two or three brokers takes minutes, so
# the pod is deleted in the middle of the execution
THROTTLE = 40_000
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]  # 17 min at load average 50


@pytest.fixture
def node(tmp_path: Path) -> Iterator[KubeNode]:
    with kube_node(tmp_path, images=[]) as started:
        yield started


@pytest.fixture
def kafka(node: KubeNode, tmp_path: Path) -> Iterator[RealKafka]:
    """Three real brokers in three racks on the node's address."""
    options = RealClusterOptions(brokers=3, racks=3, log_dirs=1, host=NODE_ADDRESS, data_dir=tmp_path / "kafka")
    cluster = RealCluster(options)
    node.call(cluster.start)
    real = node.call(lambda: RealKafka(cluster))
    try:
        yield real
    finally:
        node.call(real.close)
        node.call(cluster.stop)


def _policy(bootstrap: str, path: Path) -> str:
    """The README's example, as the user edits it for this cluster: its bootstrap servers, no resource
    groups (the whole cluster is one), no maintenance window (now is fine), samples every 2 s over
    10 s windows as `make demo` takes them (the chart's pod samples into its sample store and
    analyses on Spark inside it: minutes of samples suffice, not the default hours), a throttle that
    lets the test delete the pod in the middle of the execution."""
    policy = yaml.safe_load((REPO / EXAMPLE).read_text())
    spec = policy["spec"]
    spec["cluster"]["bootstrapServers"] = bootstrap
    del spec["resourceGroups"], spec["execution"]["maintenanceWindows"]
    spec["analysis"] = {"intervalSeconds": 2, "windowSeconds": 10}
    spec["execution"]["throttleBytesPerSec"] = THROTTLE
    path.write_text(yaml.safe_dump(policy))
    return str(path)


class User:
    """Types the README's commands on the node, and reads what they show."""

    def __init__(self, node: KubeNode, policy_file: str) -> None:
        self.node = node
        self.policy_file = policy_file
        self.proposal = ""
        self.shown: dict[str, str] = {}  # the last `kubectl get balancepolicies` row of policy main

    def type(self, words: list[str]) -> None:
        if words[:2] == ["make", "image"]:
            assert IMAGE_ARCHIVE.exists(), "`make image` (make test builds it) wrote the image's archive"
        elif words[0] == "ctr":  # on the node, whose containerd listens on its own socket
            self.node.namespaces.run(["/usr/bin/ctr", f"--address={CONTAINERD_SOCKET}", *words[1:]], cwd=REPO)
        elif words[0] == "helm":
            self._helm(words)
        else:
            assert words[0] == "kubectl", words
            self._kubectl(words[1:])

    def _helm(self, words: list[str]) -> None:
        command = helm_command(words)
        with self.node.helm(command.namespace) as helm:
            if command.action == "install":
                assert command.chart is not None
                wait = "watcher" if command.wait else None
                helm.install(
                    REPO / command.chart,
                    command.release,
                    command.values,
                    namespace=command.namespace,
                    create_namespace=command.create_namespace,
                    wait=wait,
                    timeout=900,
                )
            else:
                assert command.action == "uninstall", words
                helm.uninstall(command.release, wait="watcher", timeout=300)

    def _kubectl(self, args: list[str]) -> None:
        args = [self.policy_file if a == EXAMPLE else a.replace(APPROVAL, self.proposal) for a in args]
        out = self.node.kubectl(*args).stdout
        if args[-2:] == ["get", "balancepolicies"]:
            self.shown = next(row for row in table(out) if row["NAME"] == "main")
            self.proposal = self.shown["PROPOSAL"]


def _operator_pods(node: KubeNode) -> list[dict[str, Any]]:
    listed = node.kubectl(
        "-n", "kafka-balancer", "get", "pods", "-l", "app.kubernetes.io/name=kafka-balancer", "-o", "json"
    )
    return list(json.loads(listed.stdout)["items"])


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions", [])
    return "deletionTimestamp" not in pod["metadata"] and any(
        c["type"] == "Ready" and c["status"] == "True" for c in conditions
    )


def _status(node: KubeNode) -> dict[str, Any]:
    return dict(json.loads(node.kubectl("-n", "kafka", "get", "bp", "main", "-o", "json").stdout).get("status") or {})


def _left_of_the_release(node: KubeNode) -> list[str]:
    left = node.kubectl("get", "all,cm,sa,role,rolebinding,pvc", "-n", "kafka-balancer", "-o", "name").stdout.split()
    return [o for o in left if o not in {"configmap/kube-root-ca.crt", "serviceaccount/default"}]


def _delete_the_pod_during_the_execution(node: KubeNode) -> tuple[dict[str, Any], dict[str, Any]]:
    """Once the execution has moved some bytes and checkpointed them in status, `kubectl delete pod`;
    the Deployment's next pod, once Ready. (The execution lasts minutes at THROTTLE, and the operator
    writes progress to status every 30 s: a status in the middle of it is seen.)"""
    node.kubectl("-n", "kafka", "wait", "--for=condition=Executing", "bp/main", "--timeout=600s")

    def under_way() -> dict[str, Any] | None:
        status = _status(node)
        progress = status.get("progress") or {}
        assert progress.get("bytesMoved", 0) < progress.get("bytesTotal", 1), (
            f"done before the pod was deleted: {progress}"
        )
        return status if progress.get("bytesMoved", 0) > 0 and status.get("executionCheckpoint") else None

    until("the execution's first checkpoint with bytes moved", under_way, 600, context=node.logs)
    (first,) = [p for p in _operator_pods(node) if _ready(p)]
    node.kubectl("-n", "kafka-balancer", "delete", "pod", first["metadata"]["name"], "--wait=false")
    uid = first["metadata"]["uid"]
    second = until(
        "the Deployment's next pod to be Ready",
        lambda: next((p for p in _operator_pods(node) if p["metadata"]["uid"] != uid and _ready(p)), None),
        600,
        context=node.logs,
    )
    return first, second


def test_the_readmes_install_on_a_real_node_executes_a_proposal_across_a_pod_restart(
    node: KubeNode, kafka: RealKafka, tmp_path: Path
) -> None:
    written = {}
    for name, home, partitions in (("payments", [1, 2], 8), ("clicks", [2, 1], 6)):  # broker 3 holds nothing
        assignment = [home if p % 2 else home[::-1] for p in range(partitions)]
        node.call(lambda n=name, a=assignment: kafka.create_topic(n, a))  # type: ignore[misc]
        written[name] = node.call(
            lambda n=name, k=partitions: kafka.produce(  # type: ignore[misc]
                n, partitions=range(k), records_per_partition=200, record_bytes=10_000
            )
        )
    install, removal, *_ = blocks()
    user = User(node, _policy(node.call(lambda: kafka.bootstrap_servers), tmp_path / "policy.yaml"))
    approval = next(i for i, words in enumerate(install) if "patch" in words)
    for words in install[: approval + 1]:
        user.type(words)

    # The pod helm waited for: the image imported above, probes, the chart's ServiceAccount's token.
    (pod,) = _operator_pods(node)
    container = pod["spec"]["containers"][0]
    assert container["image"] == IMAGE
    assert {"livenessProbe", "readinessProbe"} <= set(container)
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
    assert pod["spec"]["serviceAccountName"] == "kafka-balancer"
    assert any("serviceAccountToken" in str(v.get("projected")) for v in pod["spec"]["volumes"])
    assert user.shown["MODE"] == "Manual"
    assert user.shown["STATE"] == "ProposalReady"
    proposal = _status(node)["proposal"]
    assert user.proposal == proposal["id"]
    assert proposal["bytesToMove"] > 0

    first, second = _delete_the_pod_during_the_execution(node)
    for words in install[approval + 1 :]:
        user.type(words)
    done = _status(node)
    assert done["lastRun"]["proposalId"] == proposal["id"]
    assert done["progress"]["bytesMoved"] == proposal["bytesToMove"]
    resumed = node.kubectl("-n", "kafka", "get", "events", "--field-selector=reason=ExecutionResumed", "-o", "json")
    assert json.loads(resumed.stdout)["items"], "the next pod resumed the execution from its checkpoint"
    assert second["metadata"]["name"] != first["metadata"]["name"]
    plan = json.loads(
        node.kubectl("-n", "kafka", "get", "cm", proposal["configMap"], "-o", "jsonpath={.data.plan\\.json}").stdout
    )
    after = node.call(kafka.partitions)
    for entry in plan["partitions"]:
        assert list(after[(entry["topic"], entry["partition"])].replicas) == entry["replicas"]
    for name, partitions in written.items():
        assert node.call(lambda n=name, p=partitions: kafka.read_back(n, sorted(p))) == partitions  # type: ignore[misc]

    for words in removal:
        user.type(words)
    assert node.call(kafka.throttle_leftovers) == {}
    # helm waited for what it deleted; the pod goes after, with its ReplicaSet (garbage collection)
    until("the release's objects to be gone", lambda: not _left_of_the_release(node), 300, context=node.logs)
    left = node.kubectl("get", "cm,secrets", "-n", "kafka", "-o", "name").stdout.split()
    assert [o for o in left if o != "configmap/kube-root-ca.crt"] == [], "the proposal went with its policy"
    everywhere = node.kubectl("get", "clusterrole,clusterrolebinding,crd", "-o", "name").stdout.split()
    assert [o for o in everywhere if "kafka-balancer" in o or "kafkabalancer" in o] == []

"""The image `make image` builds, run as a user runs it (tests/image/podman.py): as the chart's pod
user on a read-only root filesystem with the chart's volumes, the command line (`--help`, a `plan`),
and the operator itself (the image's entry point, `kopf run`) with the machine's network against a
real Kafka cluster and a real kube-apiserver: from a BalancePolicy to a proposal made on the samples
its Spark analysis read (Spark and its Java inside the container), to an approved, completed execution.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from bounds import until
from kafka_balancer.cli import main as cli_main
from kafka_balancer.model.snapshot import dumps_snapshot
from kafka_balancer.sandbox.demo_cluster import skewed_demo_model
from kafka_balancer.sandbox.kube import KubeClient
from kafka_balancer.sandbox.ports import free_port
from kafka_targets import no_throttle_left
from kube_apiserver import API_VERSION, POLICY_NAMESPACE, kube_apiserver
from processes import tail
from prometheus_client.parser import text_string_to_metric_families
from real_kafka import RealKafka

from .podman import Pod

POLICY = {
    "apiVersion": API_VERSION,
    "kind": "BalancePolicy",
    "metadata": {"name": "main", "namespace": POLICY_NAMESPACE},
    "spec": {
        "mode": "Manual",
        "cluster": {"bootstrapServers": "kafka-0.kafka:9092"},
        "goals": {"balanceThreshold": 1.1},
    },
}


def test_the_command_line_runs_as_the_pods_user_on_a_read_only_root(tmp_path: Path) -> None:
    with Pod(tmp_path) as pod:
        helped = pod.run(["kafka-balancer", "--help"])
        assert helped.returncode == 0, helped.stderr
        for command in ("snapshot", "plan", "execute", "analyze", "sandbox"):
            assert command in helped.stdout
        who = pod.run(["id", "-u"])
        assert who.stdout.strip() == str(pod.spec["securityContext"]["runAsUser"]) == "10001"
        # Nothing but the pod's volumes is writable, and they are.
        refused = pod.run(["touch", "/opt/kafka-balancer/written"])
        assert refused.returncode != 0
        assert "Read-only file system" in refused.stderr
        for target in pod.volumes:
            wrote = pod.run(["touch", f"{target}/written"])
            assert wrote.returncode == 0, (target, wrote.stderr)
        java = pod.run(["java", "-version"])
        assert java.returncode == 0
        assert 'version "17' in java.stderr


def test_plan_of_a_snapshot_in_the_image_is_the_plan_made_here(tmp_path: Path) -> None:
    """The image's package is this repository's: the same snapshot and policy give the same plan."""
    snapshot, policy = tmp_path / "snapshot.json", tmp_path / "policy.yaml"
    snapshot.write_text(dumps_snapshot(skewed_demo_model(0.25)))
    policy.write_text(yaml.safe_dump(POLICY))
    here = tmp_path / "here.json"
    assert cli_main(["plan", "--snapshot", str(snapshot), "--policy", str(policy), "--output", str(here)]) == 0
    with Pod(tmp_path) as pod:
        command = ["kafka-balancer", "plan", "--snapshot", str(snapshot), "--policy", str(policy)]
        planned = pod.run([*command, "--output", "/tmp/plan.json"], mounts=[snapshot, policy])
        assert planned.returncode == 0, planned.stderr
        in_image = json.loads((pod.volumes["/tmp"] / "plan.json").read_text())
    assert in_image == json.loads(here.read_text())
    assert in_image["partitions"], "the skewed snapshot needs moves"


def _context(log: Path, status: Callable[[], Any] = lambda: None) -> Callable[[], str]:
    """A timed-out wait's context: the policy's status and the operator's log without the Kafka clients' lines."""

    def context() -> str:
        lines = [line for line in tail(log, 400).splitlines() if not line.startswith("[") or "] kafka." not in line]
        return f"status: {status()}\nthe operator's log (without the Kafka clients' lines):\n" + "\n".join(lines[-60:])

    return context


def _metrics(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.labels.get("policy") == "main"
    }


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(2400)  # 16 min at load average 50
def test_the_images_operator_executes_an_approved_proposal_on_real_kafka(real_kafka: RealKafka, tmp_path: Path) -> None:
    for name, home, partitions in (("payments", [1, 2], 8), ("clicks", [4, 5], 6)):
        real_kafka.create_topic(name, [home if p % 2 else home[::-1] for p in range(partitions)])
        real_kafka.produce(name, partitions=range(partitions), records_per_partition=200, record_bytes=10_000)
    health, metrics = free_port(), free_port()
    values = {
        "operator": {
            "healthPort": health,
            # Status at every second and a quick executor poll, so that the test takes seconds, not minutes.
            "extraEnv": [
                {"name": "KAFKA_BALANCER_RECONCILE_SECONDS", "value": "1"},
                {"name": "KAFKA_BALANCER_EXECUTION_POLL_SECONDS", "value": "0.2"},
                {"name": "KAFKA_BALANCER_METRICS_ADDRESS", "value": "127.0.0.1"},
            ],
        },
        "metrics": {"port": metrics},
    }
    with kube_apiserver(tmp_path / "kube-apiserver") as server, Pod(tmp_path, values) as pod:
        # The chart's ServiceAccount's identity (the chart's RBAC is installed), as a kubeconfig.
        kubeconfig = server.write_kubeconfig(tmp_path / "operator.kubeconfig", user="operator")
        arguments = [a.replace("//0.0.0.0:", "//127.0.0.1:") for a in pod.container["args"]]  # loopback only
        log = tmp_path / "operator.log"
        operator = pod.start(
            log, env={"KUBECONFIG": str(kubeconfig)}, mounts=[kubeconfig, server.ca], arguments=arguments
        )
        until("the liveness endpoint", lambda: _answers(health), 180, context=_context(log))

        store = pod.env("KAFKA_BALANCER_SAMPLE_STORE")
        policy = json.loads(json.dumps(POLICY))
        policy["spec"] |= {
            "cluster": {"bootstrapServers": real_kafka.bootstrap_servers},
            "goals": {"balanceThreshold": 1.1, "minCompleteness": 0.5},
            # Samples every 2 s over 10 s windows, as `make demo` takes them: minutes of traffic suffice.
            "analysis": {"samples": store, "intervalSeconds": 2, "windowSeconds": 10, "engine": {"type": "local"}},
            "execution": {"throttleBytesPerSec": 20_000_000},
        }
        admin: KubeClient = server.client("admin")
        admin.create(policy, "balancepolicies")

        def status() -> dict[str, Any]:
            return dict(admin.get(API_VERSION, "balancepolicies", POLICY_NAMESPACE, "main").get("status") or {})

        def proposal_ready() -> dict[str, Any] | None:
            s = status()
            return s if s.get("state") == "ProposalReady" else None

        # Samples, then Spark in the container: about a minute on a quiet machine, 9 at load average 50.
        ready = until("a proposal", proposal_ready, 1200, context=_context(log, status))
        proposal = ready["proposal"]
        assert proposal["moves"] > 0
        assert list(pod.volumes[store].rglob("*.parquet")), "the sampler wrote to the chart's sample-store volume"
        scraped = _metrics(metrics)
        assert scraped.get("kafka_balancer_analysis_duration_seconds_count", 0) >= 1, "Spark analysed the samples"

        admin.merge_patch(
            API_VERSION, "balancepolicies", POLICY_NAMESPACE, "main", {"spec": {"approvedProposal": proposal["id"]}}
        )

        def completed() -> dict[str, Any] | None:
            s = status()
            return (
                s if (s.get("lastRun") or {}).get("result") == "Completed" and s.get("state") == "Completed" else None
            )

        done = until("the execution to complete", completed, 600, context=_context(log, status))
        assert done["lastRun"]["proposalId"] == proposal["id"]
        assert done["progress"]["bytesMoved"] == proposal["bytesToMove"] > 0
        plan = json.loads(admin.get("v1", "configmaps", POLICY_NAMESPACE, proposal["configMap"])["data"]["plan.json"])
        after = real_kafka.partitions()
        for entry in plan["partitions"]:
            assert list(after[(entry["topic"], entry["partition"])].replicas) == entry["replicas"]
        no_throttle_left(real_kafka.throttle_leftovers)
        assert operator.poll() is None, tail(log)


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False

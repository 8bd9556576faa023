"""The operator started exactly as the image and the chart start it, against the Kafka emulator and a
Kubernetes API: kmock, and the real kube-apiserver enforcing the chart's rendered RBAC.

The command is the Dockerfile's ENTRYPOINT (without tini) plus the container args the chart renders,
with the chart's plain environment. The test then checks what a cluster would enforce: the probes'
endpoint answers, SIGTERM stops the operator cleanly (Recreate relies on it), and every Kubernetes
API call the operator really made is allowed by the chart's RBAC in the namespace it was made in
(on the real server: none was refused).
The Kafka cluster requires SASL: the policy names its credentials Secret, which the chart lets the
operator read only because the install lists it in ``rbac.secrets``.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from controller.kube import EMULATED, KUBE_APISERVER, ApiServer, kube_server  # kmock, recording every call
from kafka_balancer.sandbox import EmulatedCluster
from kafka_balancer.sandbox.demo_cluster import skewed_demo_model
from kafka_balancer.sandbox.ports import free_port
from kube_apiserver import kube_apiserver

from .chart import MONITORING_API, manifests, one, render
from .rbac import ApiCall, allowed, grants_for
from .test_dockerfile import exec_form

RELEASE_NS = "kafka-balancer"
POLICY_NS = "kafka"
ACCOUNT = "kb-kafka-balancer"
SECRET = "kafka-balancer-credentials"
PASSWORD = "c0rrect-h0rse"


# The chart's RBAC as the test installs it: a Role in the one watched namespace, and the one Secret the
# policy names, in the policy's namespace (as the README installs it).
RBAC_VALUES: dict[str, Any] = {
    "watch": {"allNamespaces": False, "namespaces": [POLICY_NS]},
    "rbac": {"secrets": [{"namespace": POLICY_NS, "names": [SECRET]}]},
}


@pytest.fixture(params=[EMULATED, KUBE_APISERVER])
def kube(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ApiServer]:
    if request.param == KUBE_APISERVER:
        with kube_apiserver(tmp_path / "kube-apiserver", RBAC_VALUES) as real:
            yield real
    else:
        with kube_server() as emulated:
            yield emulated


def _command_and_env(deployment: dict[str, Any], kubeconfig: Path, scratch: Path) -> tuple[list[str], dict[str, str]]:
    """The container's command line and environment, made local: loopback only, scratch dirs in tmp."""
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    entrypoint = exec_form("ENTRYPOINT")
    command = entrypoint[entrypoint.index("--") + 1 :]  # tini is PID 1 in the image, not needed here
    command[0] = str(Path(sys.executable).with_name(command[0]))
    # Tests bind only 127.0.0.1: the chart's 0.0.0.0 liveness address is the one thing changed.
    args = [a.replace("//0.0.0.0:", "//127.0.0.1:") for a in container["args"]]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    # Without a sample store the operator plans from what Kafka reports, at once: sampling and the
    # Spark analysis make no Kubernetes API calls, and a SparkSession would add ~15 s on 2 cores.
    assert env.pop("KAFKA_BALANCER_SAMPLE_STORE") == "/var/lib/kafka-balancer/samples"
    env.update(
        KAFKA_BALANCER_METRICS_ADDRESS="127.0.0.1",  # the port stays the chart's metrics.port
        SPARK_LOCAL_DIRS=str(scratch / "spark"),
        HOME=str(scratch),
        KUBECONFIG=str(kubeconfig),
        PATH=os.environ.get("PATH", "/usr/bin:/bin"),
    )
    return [*command, *args], env


def _wait(what: str, probe: Callable[[], Any], proc: subprocess.Popen[str], log: Path, timeout: float = 90) -> Any:
    """Poll until ``probe`` answers; generous timeout: the machine's two cores are shared by parallel runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the operator exited with {proc.returncode} waiting for {what}:\n{log.read_text()[-3000:]}")
        if result := probe():
            return result
        time.sleep(0.3)
    pytest.fail(f"timed out after {timeout}s waiting for {what}; operator log:\n{log.read_text()[-3000:]}")


def _get(port: int, path: str) -> tuple[int, str] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return int(response.status), response.read().decode()
    except OSError:
        return None


@pytest.mark.slow
def test_operator_runs_as_the_chart_starts_it_within_its_rbac(
    kube: ApiServer, emulator: Callable[..., EmulatedCluster], tmp_path: Path
) -> None:
    health_port, metrics_port = free_port(), free_port()
    values = {
        **RBAC_VALUES,
        "operator": {"healthPort": health_port},
        "metrics": {"port": metrics_port, "serviceMonitor": {"enabled": True}},
        "prometheusRule": {"enabled": True},
    }
    objects = manifests(render(values, namespace=RELEASE_NS, api_versions=(MONITORING_API,)))
    deployment = one(objects, "Deployment")
    grants = grants_for(objects, ACCOUNT, RELEASE_NS)
    probe = deployment["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["path"]

    # Brokers that refuse every request until the client logs in with SCRAM: the proposal below can
    # only be made from the credentials the operator read from the Secret.
    login = {"username": "balancer", "password": PASSWORD}
    kafka = emulator(skewed_demo_model(), sasl_users={login["username"]: login["password"]})
    secret = {**login, "bootstrapServers": kafka.bootstrap_servers}  # where these credentials may be sent
    kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig", user="operator")
    api = kubernetes.config.new_client_from_config(str(kube.write_kubeconfig(tmp_path / "admin", user="admin")))
    kubernetes.client.CoreV1Api(api).create_namespaced_secret(
        POLICY_NS,
        # `data` (base64), as the API server stores it: the emulated API does not fold in stringData.
        {"metadata": {"name": SECRET}, "data": {k: base64.b64encode(v.encode()).decode() for k, v in secret.items()}},
    )
    cluster = {
        "bootstrapServers": kafka.bootstrap_servers,
        "securityProtocol": "SASL_PLAINTEXT",
        "saslMechanism": "SCRAM-SHA-512",
        "allowPlaintextCredentials": True,  # loopback; a real cluster uses SASL_SSL (examples/09-sasl-ssl.yaml)
        "credentialsSecret": {"name": SECRET},
    }
    policy = {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BalancePolicy",
        "metadata": {"name": "main", "namespace": POLICY_NS},
        "spec": {"cluster": cluster, "mode": "DryRun"},
    }
    kubernetes.client.CustomObjectsApi(api).create_namespaced_custom_object(
        "kafkabalancer.io", "v1alpha1", POLICY_NS, "balancepolicies", policy
    )

    command, env = _command_and_env(deployment, kubeconfig, tmp_path)
    log = tmp_path / "operator.log"
    with log.open("w") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            assert _wait("/healthz", lambda: _get(health_port, probe), proc, log)[0] == 200

            def proposal() -> dict[str, Any] | None:
                found = kube.objects("balancepolicies")
                status = (found[0].get("status") or {}) if found else {}
                if any(c.get("type") == "Stalled" and c.get("status") == "True" for c in status.get("conditions", [])):
                    pytest.fail(f"the policy stalled instead of proposing: {json.dumps(status)[:2000]}")
                return status.get("proposal")

            proposed = _wait("a proposal in the policy's status", proposal, proc, log)
            configmaps = kube.objects("configmaps", group="", version="v1")
            assert proposed["configMap"] in {c["metadata"]["name"] for c in configmaps}
            # What the ServiceMonitor scrapes: the Service's target port, at the endpoint's path.
            endpoint = one(objects, "ServiceMonitor")["spec"]["endpoints"][0]
            status, scraped = _wait("/metrics", lambda: _get(metrics_port, endpoint["path"]), proc, log)
            assert status == 200
            assert 'kafka_balancer_state{namespace="kafka",policy="main",state="ProposalReady"} 1.0' in scraped
        finally:
            proc.send_signal(signal.SIGTERM)  # what the kubelet sends; Recreate waits for the exit
            try:
                code = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise
    assert code == 0, log.read_text()[-3000:]

    made = kube.calls("operator")  # API discovery names no resource: open to every authenticated client
    refused = sorted({(c.resource, c.verb, c.namespace, c.name) for c in made if c.code == 403}, key=str)
    assert not refused, f"the API server refused the operator (resource, verb, namespace, name): {refused}"
    by_name = {"secrets", "leases"}  # granted by name (the Lease: get and patch)
    calls = {(c.group, c.resource, c.verb, c.namespace, c.name if c.resource in by_name else None) for c in made}
    assert ("kafkabalancer.io", "balancepolicies/status", "patch", POLICY_NS, None) in calls
    assert ("", "configmaps", "create", POLICY_NS, None) in calls
    assert ("", "secrets", "get", POLICY_NS, SECRET) in calls
    # One operator acts at a time: it read its Lease (named like the release) in its own namespace first.
    lease = env["KAFKA_BALANCER_LEASE_NAME"]
    assert ("coordination.k8s.io", "leases", "get", RELEASE_NS, lease) in calls
    denied = [
        call for call in sorted(calls, key=json.dumps) if not allowed(grants, ApiCall(*call[:3], name=call[4]), call[3])
    ]
    assert not denied, f"the chart's RBAC denies calls the operator made (group, resource, verb, namespace): {denied}"
    # Its watched namespace, and its own namespace for its Lease only.
    outside = {call for call in calls if call[3] not in {POLICY_NS, None}}
    assert {call[1:4] for call in outside} <= {("leases", verb, RELEASE_NS) for verb in ("get", "create", "patch")}, (
        f"the operator reached outside its watched namespace: {sorted(outside, key=str)}"
    )
    # rbac.secrets grants that Secret and nothing else: not another name, not elsewhere, never a list.
    assert not allowed(grants, ApiCall("", "secrets", "get", name="other"), POLICY_NS)
    assert not allowed(grants, ApiCall("", "secrets", "get", name=SECRET), RELEASE_NS)
    assert not allowed(grants, ApiCall("", "secrets", "list"), POLICY_NS)

    # The alerts read metrics this operator really exports.
    rules = one(objects, "PrometheusRule")["spec"]["groups"][0]["rules"]
    used = {m for r in rules for m in re.findall(r"\bkafka_balancer_[a-z_]+\b", r["expr"])}
    exported = set(re.findall(r"^# TYPE (kafka_balancer_[a-z_]+) ", scraped, flags=re.M))
    assert used <= exported, sorted(used - exported)

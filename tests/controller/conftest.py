"""Fixtures for the operator tests: a Kubernetes API and the real kopf operator against it.

The API is the sandbox's emulator (kmock, fast) unless a test is parametrised over both servers with
:data:`both_api_servers`: then it also runs against the real kube-apiserver and etcd
(tests/kube_apiserver.py), with the CRDs installed and the chart's RBAC enforced. Either way the test's
own requests are made as "admin" and the operator's as "operator".
"""

from __future__ import annotations

import contextlib
import os
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from kafka_balancer.controller.rbac import allows
from kafka_balancer.sandbox.ports import free_port
from kube_apiserver import LEASE_NAME, RELEASE_NAMESPACE, kube_apiserver
from prometheus_client.parser import text_string_to_metric_families

from .kube import EMULATED, KUBE_APISERVER, ApiServer, kube_server
from .operator_process import start_operator  # noqa: F401  (the operator as its own process)

# Read when kafka_balancer.controller.operator is imported (kopf timers are declared at import time).
os.environ.setdefault("KAFKA_BALANCER_RECONCILE_SECONDS", "1")
os.environ.setdefault("KAFKA_BALANCER_EXECUTION_POLL_SECONDS", "0.2")
os.environ["KAFKA_BALANCER_METRICS_PORT"] = "0"
# The operator's default: an emulated cluster in the test's own process answers within it however busy the
# machine (with 3 s, a reconcile on a loaded machine reported a live cluster as ClusterUnreachable).
os.environ["KAFKA_BALANCER_KAFKA_TIMEOUT_SECONDS"] = "30"
os.environ["KAFKA_BALANCER_METRICS_ADDRESS"] = "127.0.0.1"
# The operator's Lease is the one the chart names, in its release namespace (granted there only).
os.environ.setdefault("KAFKA_BALANCER_LEASE_NAMESPACE", RELEASE_NAMESPACE)
os.environ.setdefault("KAFKA_BALANCER_LEASE_NAME", LEASE_NAME)

GROUP, VERSION = "kafkabalancer.io", "v1alpha1"
# A test that runs against the emulator and the real API server: @both_api_servers.
both_api_servers = pytest.mark.parametrize("api_server", [EMULATED, KUBE_APISERVER], indirect=True)


def policy_manifest(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A BalancePolicy as ``kubectl apply`` takes it (Cluster.apply puts it in namespace kafka)."""
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "BalancePolicy", "metadata": {"name": name}, "spec": spec}


class Cluster:
    """The test's view of the Kubernetes API: create/patch/read objects through the real client."""

    def __init__(self, server: ApiServer, kubeconfig: Path) -> None:
        self.server = server
        self.api = kubernetes.config.new_client_from_config(str(kubeconfig))
        self.custom = kubernetes.client.CustomObjectsApi(self.api)
        self.core = kubernetes.client.CoreV1Api(self.api)

    def apply(self, doc: dict[str, Any]) -> dict[str, Any]:
        ns = doc["metadata"].setdefault("namespace", "kafka")
        if doc["kind"] == "Secret":
            self.core.create_namespaced_secret(ns, doc)
            return doc
        plural = {"BalancePolicy": "balancepolicies", "ResourceGroup": "resourcegroups"}[doc["kind"]]
        self.custom.create_namespaced_custom_object(GROUP, VERSION, ns, plural, doc)
        # kmock answers create with 200 and the client returns None: read it back.
        return self.get(plural, doc["metadata"]["name"], ns)

    def get(self, plural: str, name: str, namespace: str = "kafka") -> dict[str, Any]:
        obj: dict[str, Any] = self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        return obj

    def policy(self, name: str, namespace: str = "kafka") -> dict[str, Any]:
        return self.get("balancepolicies", name, namespace)

    def patch_policy(self, name: str, spec: dict[str, Any], namespace: str = "kafka") -> None:
        self.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, "balancepolicies", name, {"spec": spec})

    def wait_for(self, what: str, probe: Callable[[], Any], timeout: float = 30.0, interval: float = 0.2) -> Any:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            last = probe()
            if last:
                return last
            time.sleep(interval)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; last probe: {last!r}")

    def condition(self, name: str, type_: str) -> dict[str, Any] | None:
        for cond in (self.policy(name).get("status") or {}).get("conditions", []):
            if cond["type"] == type_:
                return dict(cond)
        return None

    def events(self, name: str) -> list[dict[str, Any]]:
        events = self.server.objects("events", group="", version="v1")
        return [e for e in events if (e.get("involvedObject") or {}).get("name") == name]

    def config_map(self, name: str, namespace: str = "kafka") -> dict[str, str]:
        return dict(self.core.read_namespaced_config_map(name, namespace).data or {})


@pytest.fixture
def api_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ApiServer]:
    """The emulator, or the real kube-apiserver when the test is parametrised with :data:`both_api_servers`."""
    if getattr(request, "param", EMULATED) == KUBE_APISERVER:
        with kube_apiserver(tmp_path / "kube-apiserver") as real:
            yield real
    else:
        with kube_server() as emulated:
            yield emulated


@pytest.fixture
def kube(api_server: ApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """The test's client, as admin; KUBECONFIG is the operator's (read by an operator the test starts)."""
    monkeypatch.setenv("KUBECONFIG", str(api_server.write_kubeconfig(tmp_path / "kubeconfig", user="operator")))
    cluster = Cluster(api_server, api_server.write_kubeconfig(tmp_path / "admin.kubeconfig", user="admin"))
    try:
        yield cluster
    finally:
        cluster.api.close()


@dataclass
class Operator:
    runner: Any
    metrics_url: str

    def scrape(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """/metrics over HTTP, parsed the way Prometheus parses it: (name, sorted labels) -> value."""
        with urllib.request.urlopen(self.metrics_url, timeout=5) as response:  # noqa: S310 - loopback URL
            text = response.read().decode()
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    def metric(self, name: str, **labels: str) -> float | None:
        for (sample, sample_labels), value in self.scrape().items():
            if sample == name and labels.items() <= dict(sample_labels).items():
                return value
        return None


@contextlib.contextmanager
def run_operator() -> Iterator[Operator]:
    """Start the real operator (kopf run, standalone, all namespaces) against KUBECONFIG; stop it on exit."""
    from kopf.testing import KopfRunner

    port = free_port()  # the operator reads it at startup; 0 would hide the port from the test
    os.environ["KAFKA_BALANCER_METRICS_PORT"] = str(port)
    args = ["run", "--standalone", "--all-namespaces", "-m", "kafka_balancer.controller.operator"]
    with KopfRunner(args, timeout=60) as runner:
        yield Operator(runner, f"http://127.0.0.1:{port}/metrics")
    assert runner.exception is None, runner.output


@pytest.fixture
def operator(kube: Cluster) -> Iterator[Operator]:
    with run_operator() as running:
        yield running


@pytest.fixture
def no_unlisted_calls(api_server: ApiServer) -> Iterator[None]:
    """After the test: every request the operator sent is in kafka_balancer.controller.rbac.API_CALLS, and
    the real API server refused none of them (the chart's RBAC grants all it needs)."""
    yield
    calls = api_server.calls("operator")
    unlisted = {
        (c.group, c.resource, c.verb, c.namespace is not None)
        for c in calls
        if not allows(c.group, c.resource, c.verb, namespaced=c.namespace is not None)
    }
    assert not unlisted, f"API calls missing from controller/rbac.py: {sorted(unlisted)}"
    refused = sorted({(c.group, c.resource, c.verb, c.namespace, c.name) for c in calls if c.code == 403}, key=str)
    assert not refused, f"the chart's RBAC refused the operator (group, resource, verb, namespace, name): {refused}"

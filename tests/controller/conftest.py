"""Fixtures for the operator tests: a kmock Kubernetes API and the real kopf operator against it."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest

from .kube import KubeServer, kube_server

# Read when kafka_balancer.controller.operator is imported (kopf timers are declared at import time).
os.environ.setdefault("KAFKA_BALANCER_RECONCILE_SECONDS", "1")
os.environ.setdefault("KAFKA_BALANCER_EXECUTION_POLL_SECONDS", "0.2")
os.environ["KAFKA_BALANCER_METRICS_PORT"] = "0"
os.environ["KAFKA_BALANCER_METRICS_ADDRESS"] = "127.0.0.1"

GROUP, VERSION = "kafkabalancer.io", "v1alpha1"


class Cluster:
    """The test's view of the Kubernetes API: create/patch/read objects through the real client."""

    def __init__(self, server: KubeServer, kubeconfig: Path) -> None:
        self.server = server
        self.api = kubernetes.config.new_client_from_config(str(kubeconfig))
        self.custom = kubernetes.client.CustomObjectsApi(self.api)
        self.core = kubernetes.client.CoreV1Api(self.api)

    def apply(self, doc: dict[str, Any]) -> dict[str, Any]:
        ns = doc["metadata"].setdefault("namespace", "kafka")
        if doc["kind"] in {"Secret", "ConfigMap"}:
            create = self.core.create_namespaced_secret if doc["kind"] == "Secret" else self.core.create_namespaced_config_map
            create(ns, doc)
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
        self.custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, "balancepolicies", name, {"spec": spec}
        )

    def wait_for(
        self, what: str, probe: Callable[[], Any], timeout: float = 30.0, interval: float = 0.2
    ) -> Any:
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
        return [
            e for e in self.server.objects("events", group="", version="v1")
            if (e.get("involvedObject") or {}).get("name") == name
        ]


@pytest.fixture
def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    with kube_server() as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        cluster = Cluster(server, kubeconfig)
        try:
            yield cluster
        finally:
            cluster.api.close()


@pytest.fixture
def operator(kube: Cluster) -> Iterator[Any]:
    """The real operator (kopf run, standalone, all namespaces) against the kmock API."""
    from kopf.testing import KopfRunner

    args = ["run", "--standalone", "--all-namespaces", "-m", "kafka_balancer.controller.operator"]
    with KopfRunner(args, timeout=60) as runner:
        yield runner
    assert runner.exception is None, runner.output

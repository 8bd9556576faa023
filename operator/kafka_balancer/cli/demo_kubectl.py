"""The demo's "kubectl" lines: run by the real kubectl when `make kube-binaries` has built it
(build/kube/bin/kubectl, from kube/go.mod), else sent as the same requests by the sandbox's HTTP
client (kafka_balancer.sandbox.kube.KubeClient). Either way the demo prints the same lines.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from kafka_balancer.cli.demo_kafka import DemoError
from kafka_balancer.model.policy.fields import API_VERSION, GROUP
from kafka_balancer.sandbox.kube import KubeClient, KubeError

KUBECTL = Path(__file__).resolve().parents[3] / "build" / "kube" / "bin" / "kubectl"  # a clone's, `make`'s
PLURALS = {"BalancePolicy": "balancepolicies", "ResourceGroup": "resourcegroups"}


class Kubectl:
    """`kubectl apply` and `kubectl patch --type merge` against the demo's API server."""

    def __init__(self, client: KubeClient, kubeconfig: Path, binary: Path = KUBECTL) -> None:
        self.client = client
        self.kubeconfig = kubeconfig
        self.binary = binary if binary.is_file() else None

    def describe(self) -> str:
        if self.binary is None:
            return "kubectl: the demo's HTTP client (`make kube-binaries` builds the real kubectl)"
        return f"kubectl: {self.binary}"

    def _run(self, *args: str, stdin: str | None = None) -> list[str]:
        assert self.binary is not None
        command = [str(self.binary), f"--kubeconfig={self.kubeconfig}", *args]
        result = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            raise DemoError(f"kubectl {' '.join(args)}: {(result.stderr or result.stdout).strip()}")
        return result.stdout.splitlines()

    def apply_directory(self, directory: Path) -> list[str]:
        """``kubectl apply -f DIR/`` of the CustomResourceDefinitions there: the names created."""
        files = sorted(directory.glob("*.yaml"))
        if not files:
            raise DemoError(f"no CRDs in {directory} (--crds): run the demo from a clone of the repository")
        if self.binary is not None:
            return [line.split()[0].split("/", 1)[1] for line in self._run("apply", "-f", f"{directory}/")]
        names = []
        for path in files:
            for doc in yaml.safe_load_all(path.read_text()):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    self._create(doc, "customresourcedefinitions")
                    names.append(str(doc["metadata"]["name"]))
        return names

    def apply(self, docs: list[dict[str, Any]]) -> list[str]:
        """``kubectl apply -f -`` of ``docs``: kubectl's lines (``balancepolicy.kafkabalancer.io/main created``)."""
        if self.binary is not None:
            return self._run("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
        for doc in docs:
            self._create(doc, PLURALS[doc["kind"]])
        return [f"{d['kind'].lower()}.{GROUP}/{d['metadata']['name']} created" for d in docs]

    def patch(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        """``kubectl -n NAMESPACE patch bp NAME --type merge -p PATCH``."""
        if self.binary is not None:
            self._run("-n", namespace, "patch", "bp", name, "--type", "merge", "-p", json.dumps(patch))
            return
        try:
            self.client.merge_patch(API_VERSION, "balancepolicies", namespace, name, patch)
        except KubeError as err:
            raise DemoError(f"patching BalancePolicy {name}: {err}") from None

    def _create(self, doc: dict[str, Any], plural: str) -> None:
        try:
            self.client.create(doc, plural)
        except KubeError as err:
            raise DemoError(f"applying {doc['kind']} {doc['metadata']['name']}: {err}") from None

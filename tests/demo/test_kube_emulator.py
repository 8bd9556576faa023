"""The demo's Kubernetes API emulator (sandbox/kube.py), driven over HTTP as kubectl would drive a cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kafka_balancer.sandbox.kube import KubeApiServer, KubeClient, KubeError, kube_api_server
from kubectl import kubectl, table

REPO = Path(__file__).resolve().parents[2]
API = "kafkabalancer.io/v1alpha1"


@pytest.fixture
def kube() -> Iterator[KubeApiServer]:
    with kube_api_server() as server:
        yield server


def _policy() -> dict[str, object]:
    return {
        "apiVersion": API,
        "kind": "BalancePolicy",
        "metadata": {"name": "main", "namespace": "kafka"},
        "spec": {"cluster": {"bootstrapServers": "127.0.0.1:9"}, "mode": "Manual"},
    }


def test_custom_resources_are_served_once_their_crds_are_created(kube: KubeApiServer) -> None:
    client = KubeClient(kube.url)
    with pytest.raises(KubeError, match="HTTP 404"):
        client.create(_policy(), "balancepolicies")
    for path in sorted((REPO / "crds").glob("*.yaml")):
        client.create(yaml.safe_load(path.read_text()), "customresourcedefinitions")
    assert {"balancepolicies", "balancepolicies/status", "resourcegroups", "resourcegroups/status"} <= set(
        client.resources(API)
    )

    created = client.create(_policy(), "balancepolicies")
    meta = created["metadata"]
    assert meta["generation"] == 1
    assert meta["uid"]
    assert meta["resourceVersion"]

    # A spec change bumps generation; a status patch does not, and cannot change spec.
    client.merge_patch(API, "balancepolicies", "kafka", "main", {"spec": {"approvedProposal": "0123456789abcdef"}})
    status = {"spec": {"mode": "Auto"}, "status": {"state": "Pending"}}
    client.merge_patch(API, "balancepolicies", "kafka", "main", status, subresource="status")
    got = client.get(API, "balancepolicies", "kafka", "main")
    assert got["metadata"]["generation"] == 2
    assert got["spec"] == {**_policy()["spec"], "approvedProposal": "0123456789abcdef"}  # type: ignore[dict-item]
    assert got["status"] == {"state": "Pending"}
    assert int(got["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])

    with pytest.raises(KubeError, match="HTTP 409"):
        client.create(_policy(), "balancepolicies")


def test_kubeconfig_points_at_the_emulator(kube: KubeApiServer, tmp_path: Path) -> None:
    config = yaml.safe_load(kube.write_kubeconfig(tmp_path / "kubeconfig", "kafka").read_text())
    assert config["clusters"][0]["cluster"]["server"] == kube.url
    assert kube.url.startswith("http://127.0.0.1:")
    assert config["contexts"][0]["context"]["namespace"] == "kafka"


def test_the_real_kubectl_applies_lists_and_patches_as_the_demo_types_it(kube: KubeApiServer, tmp_path: Path) -> None:
    """kubectl validates on the server (the emulator's OpenAPI offers fieldValidation), reads typed lists,
    and warns of no short name shared with a subresource."""
    config = kube.write_kubeconfig(tmp_path / "kubeconfig", "kafka")
    applied = kubectl(config, "apply", "-f", "crds/")
    assert applied.stdout.splitlines() == [
        "customresourcedefinition.apiextensions.k8s.io/balancepolicies.kafkabalancer.io created",
        "customresourcedefinition.apiextensions.k8s.io/resourcegroups.kafkabalancer.io created",
    ]
    examples = ["-f", "examples/00-resource-groups.yaml", "-f", "examples/01-rebalance-manual.yaml"]
    assert "balancepolicy.kafkabalancer.io/main created" in kubectl(config, "apply", *examples).stdout
    listed = kubectl(config, "get", "bp", "-o", "json")
    assert listed.stderr == "", "no warning (a short name of a subresource)"
    assert [i["metadata"]["name"] for i in yaml.safe_load(listed.stdout)["items"]] == ["main"]
    rows = table(kubectl(config, "get", "rg").stdout)
    assert sorted(r["NAME"] for r in rows) == ["analytics", "payments"]
    patch = '{"spec":{"approvedProposal":"0123456789abcdef"}}'
    assert kubectl(config, "patch", "bp", "main", "--type", "merge", "-p", patch).stdout.strip() == (
        "balancepolicy.kafkabalancer.io/main patched"
    )
    assert kubectl(config, "apply", *examples).returncode == 0
    got = kubectl(config, "get", "bp", "main", "-o", "jsonpath={.spec.approvedProposal}").stdout
    assert got == "0123456789abcdef", "client-side apply leaves the person's approval alone"

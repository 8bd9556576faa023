"""What users type, typed with the real kubectl (tests/kubectl.py, built from kube/go.mod) against the
real kube-apiserver with the CRDs of crds/: `apply` of every example, client-side and server-side;
`explain` of every field; and, with the real operator running, `get` with the printer columns, `wait`
on the proposal, and a GitOps tool (server-side apply, owning the spec) beside a person approving
with `kubectl patch`, without a conflict and without losing a field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka_balancer.controller.crdgen import all_crds
from kafka_balancer.sandbox import EmulatedCluster
from kube_apiserver import KubeApiserver, kube_apiserver
from kubectl import kubectl, table

from .conftest import Cluster, Operator
from .kube import KUBE_APISERVER
from .test_e2e import _policy, skewed_model

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
NAMESPACE = "kafka"
real_api_server = pytest.mark.parametrize("api_server", [KUBE_APISERVER], indirect=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[KubeApiserver, Path]]:
    """One real API server for the module and an admin kubeconfig for kubectl."""
    workdir = tmp_path_factory.mktemp("kubectl")
    with kube_apiserver(workdir / "kube-apiserver") as real:
        yield real, real.write_kubeconfig(workdir / "admin.kubeconfig", NAMESPACE, user="admin")


def _contains(expected: Any, live: Any) -> bool:
    """``expected`` (a manifest's value) is in ``live`` (the stored value, with the schema's defaults)."""
    if isinstance(expected, dict):
        return isinstance(live, dict) and all(k in live and _contains(v, live[k]) for k, v in expected.items())
    if isinstance(expected, float | int) and not isinstance(expected, bool):
        return isinstance(live, float | int) and float(expected) == float(live)
    return bool(expected == live)


@pytest.mark.parametrize("mode", ["client-side", "server-side"])
def test_apply_of_every_example(mode: str, server: tuple[KubeApiserver, Path]) -> None:
    _, config = server
    flags = ["--server-side"] if mode == "server-side" else []
    verb = "serverside-applied" if flags else "(created|configured|unchanged)"
    for path in EXAMPLES:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        applied = kubectl(config, "apply", *flags, "-f", str(path)).stdout
        for doc in docs:
            kind = doc["kind"].lower() + ("" if doc["apiVersion"] == "v1" else "." + doc["apiVersion"].split("/")[0])
            assert re.search(rf"^{re.escape(kind)}/{doc['metadata']['name']} {verb}$", applied, re.M), applied
        live = json.loads(kubectl(config, "get", "-f", str(path), "-o", "json").stdout)
        stored = live.get("items", [live])
        for doc, obj in zip(docs, stored, strict=True):
            field = "spec" if "spec" in doc else "stringData" if "stringData" in doc else "data"
            if field == "stringData":  # stored as base64 data
                continue
            assert _contains(doc[field], obj[field]), (path.name, doc[field], obj[field])
    for path in reversed(EXAMPLES):
        kubectl(config, "delete", "--wait", "-f", str(path), "--ignore-not-found")


def _object_fields(schema: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(kubectl explain path, its properties) for every object in the schema, arrays' items included."""
    node = schema.get("items", schema) if schema.get("type") == "array" else schema
    properties = node.get("properties")
    if properties:
        yield path, properties
        for name, child in properties.items():
            yield from _object_fields(child, f"{path}.{name}")


@pytest.mark.parametrize("plural", ["balancepolicies", "resourcegroups"])
def test_explain_shows_every_fields_description(plural: str, server: tuple[KubeApiserver, Path]) -> None:
    _, config = server
    crd = next(c for c in all_crds().values() if c["spec"]["names"]["plural"] == plural)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    explained = 0
    for path, properties in _object_fields(schema["properties"]["spec"], f"{plural}.spec"):
        text = " ".join(kubectl(config, "explain", path).stdout.split())
        for name, child in properties.items():
            assert re.search(rf"\b{re.escape(name)}\b", text), f"kubectl explain {path}: no field {name}"
            description = " ".join(child.get("description", "").split())
            assert description, f"{path}.{name} has no description"
            assert description in text, f"kubectl explain {path}: {name}'s description missing:\n{text}"
            explained += 1
    for path, properties in _object_fields(schema["properties"]["status"], f"{plural}.status"):
        text = " ".join(kubectl(config, "explain", path).stdout.split())
        for name, child in properties.items():
            assert " ".join(child.get("description", "").split()) in text, f"{path}.{name}"
            explained += 1
    assert explained > 10


def test_conditions_are_a_list_map_keyed_by_type(server: tuple[KubeApiserver, Path]) -> None:
    """As metav1.Condition prescribes: two conditions of one type are refused by the server."""
    _, config = server
    policy = _policy("conditions", "127.0.0.1:9", resourceGroups=[])
    policy["metadata"]["namespace"] = NAMESPACE
    kubectl(config, "apply", "--server-side", "-f", "-", stdin=json.dumps(policy))
    condition = {"type": "Ready", "status": "True", "reason": "Test", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    patch = {"status": {"conditions": [condition, {**condition, "status": "False"}]}}
    refused = kubectl(
        config,
        "patch",
        "bp",
        "conditions",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(patch),
        check=False,
    )
    assert refused.returncode != 0
    assert "Duplicate value" in refused.stderr
    assert 'type: "Ready"' in refused.stderr or '{"type":"Ready"}' in refused.stderr
    kubectl(config, "delete", "bp", "conditions")


# ----- with the operator ------------------------------------------------------------------------------
@pytest.fixture
def admin_config(api_server: KubeApiserver, tmp_path: Path) -> Path:
    return api_server.write_kubeconfig(tmp_path / "person.kubeconfig", NAMESPACE, user="admin")


@real_api_server
def test_gitops_owns_the_spec_and_a_person_approves_without_conflict(
    kube: Cluster,
    operator: Operator,
    admin_config: Path,
    emulator: Callable[..., EmulatedCluster],
    tmp_path: Path,
) -> None:
    cluster = emulator(skewed_model(), time_scale=20.0)
    policy = _policy("main", cluster.bootstrap_servers, mode="Manual", resourceGroups=[])
    policy["metadata"]["namespace"] = NAMESPACE
    manifest = tmp_path / "policy.yaml"  # what the GitOps tool applies from its repository
    manifest.write_text(yaml.safe_dump(policy))
    gitops = ["apply", "--server-side", "--field-manager=gitops", "-f", str(manifest)]
    assert "balancepolicy.kafkabalancer.io/main serverside-applied" in kubectl(admin_config, *gitops).stdout

    kubectl(admin_config, "wait", "--for=condition=Ready", "bp/main", "--timeout=120s")
    kubectl(admin_config, "wait", "--for=jsonpath={.status.state}=ProposalReady", "bp/main", "--timeout=120s")
    status = kube.policy("main")["status"]
    proposal = status["proposal"]["id"]
    assert kubectl(admin_config, "get", "bp", "main", "-o", "jsonpath={.status.proposal.id}").stdout == proposal

    # The printer columns, as a person reads them.
    (row,) = table(kubectl(admin_config, "get", "balancepolicies", "-o", "wide").stdout)
    assert list(row) == ["NAME", "MODE", "STATE", "IMBALANCE", "PROPOSAL", "PROGRESS", "READY", "AGE"]
    assert row["PROGRESS"] == "", "no execution yet"
    assert row["NAME"] == "main"
    assert row["MODE"] == "Manual"
    assert row["STATE"] == "ProposalReady"
    assert row["PROPOSAL"] == proposal
    assert row["READY"] == "True"
    assert float(row["IMBALANCE"]) == pytest.approx(status["imbalance"], abs=1e-3)

    # A person approves it; the GitOps tool applies its (unchanged, then changed) manifest again.
    patch = json.dumps({"spec": {"approvedProposal": proposal}})
    assert "patched" in kubectl(admin_config, "patch", "bp", "main", "--type=merge", "-p", patch).stdout
    again = kubectl(admin_config, *gitops)
    assert again.returncode == 0
    assert "conflict" not in again.stderr.lower()
    kubectl(admin_config, "wait", "--for=jsonpath={.status.lastRun.result}=Completed", "bp/main", "--timeout=120s")
    policy["spec"]["execution"]["throttleBytesPerSec"] = 100_000_000
    manifest.write_text(yaml.safe_dump(policy))
    kubectl(admin_config, *gitops)

    live = json.loads(kubectl(admin_config, "get", "bp", "main", "-o", "json", "--show-managed-fields").stdout)
    assert live["spec"]["approvedProposal"] == proposal, "the approval is not lost to the GitOps tool's apply"
    assert live["spec"]["execution"]["throttleBytesPerSec"] == 100_000_000
    owners = {m["manager"]: json.dumps(m.get("fieldsV1", {})) for m in live["metadata"]["managedFields"]}
    assert '"f:approvedProposal"' in owners["kubectl-patch"]
    assert '"f:approvedProposal"' not in owners["gitops"]
    assert '"f:throttleBytesPerSec"' in owners["gitops"]
    assert kube.policy("main")["status"]["lastRun"]["proposalId"] == proposal

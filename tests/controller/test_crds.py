"""The CRDs in crds/ are generated from the models, structural, and accept every example under examples/.

The schema checks run twice: with jsonschema over the CRD's openAPIV3Schema, and against the real
kube-apiserver with the CRDs of crds/ installed (tests/kube_apiserver.py), which also applies the
schema's defaults, the status subresource and the printer columns.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from kafka_balancer.cli import main as cli_main
from kafka_balancer.controller.crddocs import render_docs
from kafka_balancer.controller.crdgen import all_crds, render
from kafka_balancer.model.policy.fields import OPERATIONS
from kafka_balancer.model.policy.parsing import (
    PolicyError,
    parse_balance_policy_spec,
    parse_manifests,
    parse_resource_group_spec,
)
from kafka_balancer.sandbox.kube import KubeError
from kube_apiserver import POLICY_NAMESPACE, KubeApiserver, kube_apiserver

from .test_policy import INVALID_SPECS

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "crds"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
API = "kafkabalancer.io/v1alpha1"
PLURALS = {"BalancePolicy": "balancepolicies", "ResourceGroup": "resourcegroups", "Secret": "secrets"}
JSONSCHEMA, KUBE_APISERVER = "jsonschema", "kube-apiserver"
# A document's verdict: None when accepted, else why it was refused.
Validator = Callable[[dict[str, Any]], str | None]


def _schema(kind: str) -> dict[str, Any]:
    for crd in all_crds().values():
        if crd["spec"]["names"]["kind"] == kind:
            schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            return schema
    raise KeyError(kind)


def _documents() -> list[dict[str, Any]]:
    return [doc for path in EXAMPLES for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_committed_crds_are_up_to_date() -> None:
    for name, crd in all_crds().items():
        committed = (CRDS / name).read_text()
        assert committed == render(crd), f"crds/{name} is out of date: run `kafka-balancer crds`"


def test_cli_writes_the_same_crds_and_docs(tmp_path: Path) -> None:
    assert cli_main(["crds", str(tmp_path), "--docs", str(tmp_path / "crds.md")]) == 0
    for name in all_crds():
        assert (tmp_path / name).read_text() == (CRDS / name).read_text()
    assert (tmp_path / "crds.md").read_text() == render_docs()


def test_committed_crd_docs_are_up_to_date() -> None:
    committed = (ROOT / "docs" / "crds.md").read_text()
    assert committed == render_docs(), "docs/crds.md is out of date: run `kafka-balancer crds --docs docs/crds.md`"


def test_crd_docs_name_every_spec_field_with_its_default() -> None:
    doc = render_docs()
    spec = _schema("BalancePolicy")["properties"]["spec"]["properties"]
    for group in ("goals", "execution", "analysis", "triggers", "cluster", "operation"):
        for name in spec[group]["properties"]:
            assert f"`spec.{group}.{name}`" in doc
    assert "| `spec.goals.balanceThreshold` | number | `1.1` |" in doc
    assert "`spec.brokers.ids`" in doc  # ResourceGroup


def _walk(node: dict[str, Any], path: str) -> None:
    """Kubernetes' structural-schema rules that matter here."""
    for banned in ("$ref", "anyOf", "oneOf", "allOf", "title", "const"):
        assert banned not in node, f"{path}: '{banned}' is not structural"
    if "additionalProperties" in node:  # a typed map: a schema, never beside properties
        assert isinstance(node["additionalProperties"], dict), f"{path}: additionalProperties must be a schema"
        assert "properties" not in node, f"{path}: properties and additionalProperties are exclusive"
        _walk(node["additionalProperties"], f"{path}{{}}")
    assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields"), f"{path}: no type"
    if "default" in node:
        assert node["default"] is not None, f"{path}: null default"
    for name, child in node.get("properties", {}).items():
        _walk(child, f"{path}.{name}")
    if "items" in node:
        _walk(node["items"], f"{path}[]")


@pytest.mark.parametrize("kind", ["BalancePolicy", "ResourceGroup"])
def test_schemas_are_structural_with_status_subresource(kind: str) -> None:
    _walk(_schema(kind), kind)
    crd = next(c for c in all_crds().values() if c["spec"]["names"]["kind"] == kind)
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    assert crd["spec"]["names"]["shortNames"] == [{"BalancePolicy": "bp", "ResourceGroup": "rg"}[kind]]


def test_balance_policy_printer_columns_and_documented_defaults() -> None:
    crd = next(c for c in all_crds().values() if c["spec"]["names"]["kind"] == "BalancePolicy")
    columns = [c["name"] for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]]
    assert columns == ["Mode", "State", "Imbalance", "Proposal", "Progress", "Ready", "Age"]
    spec = _schema("BalancePolicy")["properties"]["spec"]["properties"]
    assert spec["mode"]["default"] == "Manual"
    assert spec["goals"]["default"] == {}  # so the API server fills in the nested defaults
    goals = spec["goals"]["properties"]
    assert goals["balanceThreshold"]["default"] == 1.1
    assert goals["maxReplicasPerBroker"]["default"] == 4000
    assert goals["distribution"]["default"][0] == "replica-distribution"
    assert spec["execution"]["properties"]["throttleBytesPerSec"]["minimum"] == 1
    assert spec["execution"]["properties"]["concurrentMovesPerBroker"]["default"] == 5
    assert all(field["description"] for field in goals.values())


def test_every_operation_has_an_example() -> None:
    policies, groups = parse_manifests(_documents())
    assert {p.spec.operation.type for p in policies} == set(OPERATIONS)
    assert len(groups) >= 2
    assert {p.spec.mode for p in policies} == {"DryRun", "Manual", "Auto"}


# ----- the schema, checked offline and by the real API server -----------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiserver]:
    """One real API server for the module: its tests create with dryRun, or objects of their own names."""
    with kube_apiserver(tmp_path_factory.mktemp("kube-apiserver")) as real:
        yield real


def _strict(node: dict[str, Any]) -> dict[str, Any]:
    """The schema as the API server applies it under kubectl's strict field validation: a field that the
    schema does not name is refused (the server would otherwise prune it)."""
    node = copy.copy(node)
    if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        node["additionalProperties"] = False
        node["properties"] = {name: _strict(child) for name, child in node["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            node[key] = _strict(node[key])
    return node


def _by_jsonschema(doc: dict[str, Any]) -> str | None:
    # Draft 4 has OpenAPI 3.0's boolean exclusiveMinimum.
    errors = jsonschema.Draft4Validator(_strict(_schema(doc["kind"]))).iter_errors(doc)
    return "; ".join(sorted(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)) or None


def _by_server(server: KubeApiserver) -> Validator:
    def check(doc: dict[str, Any]) -> str | None:
        try:
            server.client("admin").create(doc, PLURALS[doc["kind"]], dry_run=True)
        except KubeError as err:
            if err.code not in {400, 422}:  # a bad request or an invalid object, nothing else
                raise
            return str(err)
        return None

    return check


@pytest.fixture(params=[JSONSCHEMA, KUBE_APISERVER])
def validate(request: pytest.FixtureRequest) -> Validator:
    return _by_jsonschema if request.param == JSONSCHEMA else _by_server(request.getfixturevalue("server"))


def _policy_doc(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "BalancePolicy",
        "metadata": {"name": "x", "namespace": POLICY_NAMESPACE},
        "spec": spec,
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_validate_against_the_crd_schema(path: Path, validate: Validator) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("apiVersion") == API]
    assert docs, f"{path.name} holds no kafka-balancer object"
    for doc in docs:
        assert validate(doc) is None


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"execution": {"throttleBytesPerSec": -1}}, "throttleBytesPerSec"),
        ({"mode": "Sometimes"}, "mode"),
        ({"goals": {"hard": ["rack-awareness", "be-nice"]}}, "hard"),
        ({"cluster": {"bootstrapServers": "no port"}}, "bootstrapServers"),
        ({"goals": {"capacityThreshold": 1.5}}, "capacityThreshold"),
    ],
)
def test_schema_refuses_bad_values(patch: dict[str, Any], field: str, validate: Validator) -> None:
    spec: dict[str, Any] = {"cluster": {"bootstrapServers": "k:9092"}}
    for key, value in patch.items():
        spec[key] = {**spec.get(key, {}), **value} if isinstance(value, dict) else value
    refused = validate(_policy_doc(spec))
    assert refused is not None
    assert field in refused


@pytest.mark.parametrize(
    ("racks", "words"), [(["rack-a", ""], "[1]: String should have at least 1 character"), (["a"] * 65, ": ")]
)
def test_a_groups_bad_preferred_leader_rack_is_refused_naming_the_field(
    racks: list[str], words: str, validate: Validator
) -> None:
    """An empty rack name or a list too long: the schema (offline and on the server) and the model refuse it,
    naming the field. (A name no broker has is the planner's to refuse, naming the group's field too:
    tests/planner/test_planner_group_leader_racks.py.)"""
    spec = {"brokers": {"ids": [1]}, "preferredLeaderRacks": racks}
    doc = {"apiVersion": API, "kind": "ResourceGroup", "metadata": {"name": "g", "namespace": POLICY_NAMESPACE}}
    refused = validate({**doc, "spec": spec})
    assert refused is not None
    assert "preferredLeaderRacks" in refused
    with pytest.raises(PolicyError, match=rf"spec\.preferredLeaderRacks{re.escape(words)}"):
        parse_resource_group_spec(spec)


@pytest.mark.parametrize(("spec", "field", "words"), INVALID_SPECS)
def test_specs_the_model_refuses_meet_the_schemas_verdict_on_the_server(
    server: KubeApiserver, spec: dict[str, Any], field: str, words: str
) -> None:
    """The server refuses what the schema refuses, naming the field; the rest (rules across fields) it
    stores, and the operator reports them as Stalled (test_operator_validation.py)."""
    by_schema, by_server = _by_jsonschema(_policy_doc(spec)), _by_server(server)(_policy_doc(spec))
    assert (by_schema is None) == (by_server is None), f"schema: {by_schema}; server: {by_server}"
    if by_server is not None:
        assert field.removeprefix("spec.").split("[")[0] in by_server


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_server_accepts_each_example_and_fills_in_the_models_defaults(path: Path, server: KubeApiserver) -> None:
    """``kubectl apply --dry-run=server`` of every document; the spec the server would store, defaults
    filled in by the schema, is the spec the model reads from the file."""
    parse = {"BalancePolicy": parse_balance_policy_spec, "ResourceGroup": parse_resource_group_spec}
    for doc in (d for d in yaml.safe_load_all(path.read_text()) if d):
        stored = server.client("admin").create(doc, PLURALS[doc["kind"]], dry_run=True)
        if doc["kind"] in parse:
            assert stored["spec"] != doc["spec"] or doc["kind"] == "ResourceGroup", "no default filled in"
            assert parse[doc["kind"]](stored["spec"]) == parse[doc["kind"]](doc["spec"])


def test_status_subresource_generation_and_printer_columns_on_the_server(server: KubeApiserver) -> None:
    client = server.client("admin")
    doc = _policy_doc({"cluster": {"bootstrapServers": "k:9092"}})
    doc["metadata"]["name"] = "columns"
    created = client.create(doc, "balancepolicies")
    assert created["metadata"]["generation"] == 1
    assert created["spec"]["mode"] == "Manual"  # the schema's default

    # A spec change bumps generation; a /status patch cannot change spec, a patch of the object not status.
    client.merge_patch(API, "balancepolicies", POLICY_NAMESPACE, "columns", {"spec": {"approvedProposal": "0" * 16}})
    status = {
        "state": "Executing",
        "imbalance": 1.5,
        "proposal": {
            "id": "0123456789abcdef",
            "operation": "rebalance",
            "moves": 3,
            "bytesToMove": 30,
            "leaderChanges": 1,
            "balancednessBefore": 50.0,
            "balancednessAfter": 99.0,
            "configMap": "columns-proposal",
            "createdAt": "2026-01-01T00:00:00Z",
        },
        "progress": {"percent": 40.0},
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "Executing", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ],
    }
    client.merge_patch(
        API,
        "balancepolicies",
        POLICY_NAMESPACE,
        "columns",
        {"spec": {"mode": "Auto"}, "status": status},
        subresource="status",
    )
    client.merge_patch(API, "balancepolicies", POLICY_NAMESPACE, "columns", {"status": {"state": "Paused"}})
    got = client.get(API, "balancepolicies", POLICY_NAMESPACE, "columns")
    assert got["metadata"]["generation"] == 2
    assert (got["spec"]["mode"], got["spec"]["approvedProposal"]) == ("Manual", "0" * 16)
    assert got["status"]["state"] == "Executing"

    # `kubectl get bp`: the printer columns, read by the server from the object.
    table = client.table(API, "balancepolicies", POLICY_NAMESPACE)
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names == ["Name", "Mode", "State", "Imbalance", "Proposal", "Progress", "Ready", "Age"]
    row = dict(zip(names, next(r["cells"] for r in table["rows"] if r["cells"][0] == "columns"), strict=True))
    assert row | {"Age": None} == {
        "Name": "columns",
        "Mode": "Manual",
        "State": "Executing",
        "Imbalance": 1.5,
        "Proposal": "0123456789abcdef",
        "Progress": 40,
        "Ready": "True",
        "Age": None,
    }

"""The CRDs in crds/ are generated from the models, structural, and accept every example under examples/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from kafka_balancer.cli import main as cli_main
from kafka_balancer.controller.crddocs import render_docs
from kafka_balancer.controller.crdgen import all_crds, render
from kafka_balancer.model.policy import OPERATIONS, parse_manifests

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "crds"
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


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


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_validate_against_the_crd_schema(path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("apiVersion") == "kafkabalancer.io/v1alpha1"]
    assert docs, f"{path.name} holds no kafka-balancer object"
    for doc in docs:
        # Draft 4 has OpenAPI 3.0's boolean exclusiveMinimum.
        jsonschema.Draft4Validator(_schema(doc["kind"])).validate(doc)


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
def test_schema_refuses_bad_values(patch: dict[str, Any], field: str) -> None:
    spec: dict[str, Any] = {"cluster": {"bootstrapServers": "k:9092"}}
    for key, value in patch.items():
        spec[key] = {**spec.get(key, {}), **value} if isinstance(value, dict) else value
    doc = {"apiVersion": "kafkabalancer.io/v1alpha1", "kind": "BalancePolicy", "metadata": {"name": "x"}, "spec": spec}
    with pytest.raises(jsonschema.ValidationError) as err:
        jsonschema.Draft4Validator(_schema("BalancePolicy")).validate(doc)
    assert field in list(err.value.absolute_path) or field in str(err.value.absolute_path)

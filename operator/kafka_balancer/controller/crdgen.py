"""CustomResourceDefinitions generated from the typed models, so the YAML in crds/ never drifts.

``python -m kafka_balancer.controller.crdgen [DIR]`` (or ``kafka-balancer crds``) rewrites the files;
tests/controller/test_crds.py fails when the committed files differ from what this produces.

Pydantic emits JSON Schema 2020-12; the API server wants a *structural* OpenAPI v3.0 subset. The
conversion inlines ``$ref``, turns ``anyOf [X, null]`` into ``nullable``, numeric
``exclusiveMinimum`` into the boolean form, drops titles and ``additionalProperties: false`` (the API
server prunes unknown fields instead) but keeps typed maps, and gives nested objects ``default: {}`` so the API server
fills in their documented defaults.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from kafka_balancer.controller.status import BalancePolicyStatus, ResourceGroupStatus
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec
from kafka_balancer.model.policy.fields import GROUP, VERSION
from kafka_balancer.model.policy.resource_group import ResourceGroupSpec

CRD_FILES: Final = {
    "balancepolicies": "kafkabalancer.io_balancepolicies.yaml",
    "resourcegroups": "kafkabalancer.io_resourcegroups.yaml",
}
_DROP: Final = {"title", "$defs"}


class _WithFactoryDefaults(GenerateJsonSchema):
    """Also document defaults produced by ``default_factory`` (pydantic leaves them out)."""

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        factory = schema.get("default_factory")
        if factory is not None and not schema.get("default_factory_takes_data"):
            schema = {**schema, "default": factory()}  # type: ignore[call-arg]
            schema.pop("default_factory", None)
        return super().default_schema(schema)


def _strip_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value]
    return value


def _structural(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_structural(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    ref = node.pop("$ref", None)
    if ref is not None:
        target = dict(defs[ref.rsplit("/", 1)[-1]])
        # The field's own description wins over the class docstring.
        node = {**target, **node}
    any_of = node.pop("anyOf", None)
    if any_of is not None:
        options = [o for o in any_of if o.get("type") != "null"]
        if len(options) != 1:
            raise ValueError(f"crdgen: a union of {len(options)} types is not structural: {any_of}")
        node = {**options[0], **node, "nullable": True} if len(options) < len(any_of) else {**options[0], **node}
        if ref is None and "$ref" in options[0]:
            return _structural(node, defs)
    if "const" in node:
        node["enum"] = [node.pop("const")]
    for bound, plain in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(node.get(bound), int | float) and not isinstance(node.get(bound), bool):
            node[plain] = node[bound]
            node[bound] = True
    if node.get("type") == "object" and "properties" in node and isinstance(node.get("default"), dict):
        node["default"] = {}  # nested fields carry their own defaults
    if "default" in node:
        if node["default"] is None:
            del node["default"]
        else:
            node["default"] = _strip_nulls(node["default"])
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP:
            continue
        if key == "properties":
            out[key] = {name: _structural(prop, defs) for name, prop in value.items()}
        elif key == "items":
            out[key] = _structural(value, defs)
        elif key == "additionalProperties":
            if isinstance(value, dict):  # a typed map (dict[str, int]); `false` is pruning, the server's default
                out[key] = _structural(value, defs)
        elif key == "description":
            out[key] = " ".join(str(value).split())
        else:
            out[key] = value
    if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out:
        # A free-form map (e.g. the executor checkpoint): kept as is, not pruned.
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def openapi_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of a pydantic model, as a CRD's openAPIV3Schema wants it."""
    raw = model.model_json_schema(by_alias=True, schema_generator=_WithFactoryDefaults)
    result: dict[str, Any] = _structural(raw, raw.get("$defs", {}))
    return result


def _crd(
    *,
    kind: str,
    plural: str,
    short: str,
    spec: type[BaseModel],
    status: type[BaseModel],
    columns: list[dict[str, Any]],
) -> dict[str, Any]:
    spec_schema = openapi_schema(spec)
    # An object the operator has not reconciled yet reads `status: {observedGeneration: 0}` (the API server
    # defaults it when it reads the object), not no status at all: kstatus, Flux's CEL health checks and the
    # Argo CD health script then see generation 1 not yet observed (InProgress) instead of a status-less
    # object kstatus calls Current, so `wait: true` waits for the operator to accept the spec (docs/gitops.md).
    status_schema = {**openapi_schema(status), "default": {"observedGeneration": 0}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{GROUP}",
            "labels": {"app.kubernetes.io/name": "kafka-balancer", "app.kubernetes.io/part-of": "kafka-balancer"},
        },
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": [short],
                "categories": ["kafka-balancer"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": spec_schema.get("description", ""),
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec_schema,
                                "status": status_schema,
                            },
                        }
                    },
                }
            ],
        },
    }


def _cond(type_: str) -> str:
    return f'.status.conditions[?(@.type=="{type_}")].status'


def balance_policy_crd() -> dict[str, Any]:
    columns: list[dict[str, Any]] = [
        {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
        {"name": "State", "type": "string", "jsonPath": ".status.state"},
        {"name": "Imbalance", "type": "number", "jsonPath": ".status.imbalance", "description": "worst max/avg"},
        {"name": "Proposal", "type": "string", "jsonPath": ".status.proposal.id"},
        {"name": "Progress", "type": "number", "jsonPath": ".status.progress.percent", "description": "percent"},
        {"name": "Ready", "type": "string", "jsonPath": _cond("Ready"), "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return _crd(
        kind="BalancePolicy",
        plural="balancepolicies",
        short="bp",
        spec=BalancePolicySpec,
        status=BalancePolicyStatus,
        columns=columns,
    )


def resource_group_crd() -> dict[str, Any]:
    columns: list[dict[str, Any]] = [
        {"name": "Brokers", "type": "string", "jsonPath": ".spec.brokers.ids"},
        {"name": "Racks", "type": "string", "jsonPath": ".spec.brokers.racks"},
        {"name": "Ready", "type": "string", "jsonPath": _cond("Ready")},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return _crd(
        kind="ResourceGroup",
        plural="resourcegroups",
        short="rg",
        spec=ResourceGroupSpec,
        status=ResourceGroupStatus,
        columns=columns,
    )


def all_crds() -> dict[str, dict[str, Any]]:
    """File name -> CRD document."""
    return {
        CRD_FILES["balancepolicies"]: balance_policy_crd(),
        CRD_FILES["resourcegroups"]: resource_group_crd(),
    }


HEADER: Final = "# Generated by `kafka-balancer crds` from kafka_balancer.model.policy; do not edit.\n"


def render(crd: dict[str, Any]) -> str:
    return HEADER + yaml.safe_dump(crd, sort_keys=False, width=120)


def write_crds(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, crd in all_crds().items():
        path = directory / name
        path.write_text(render(crd), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    for path in write_crds(Path(args[0] if args else "crds")):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the real kubectl asks of an API server beyond the resources themselves, served by the demo's
Kubernetes API emulator (kafka_balancer.sandbox.kube) so that `kubectl apply`, `get` and `patch` work
against it as against a cluster.

- ``GET /openapi/v3`` and ``/openapi/v3/<group version>``: kubectl validates what it applies either
  on the server (``fieldValidation=Strict``) or, when the server's OpenAPI does not offer that
  parameter, against the OpenAPI v2 schemas it downloads. Each group version's document here names,
  for every served kind, the PATCH operation with its ``fieldValidation`` parameter: kubectl leaves
  validation to the server (the emulator checks names and sizes, not schemas).
- Lists carry their ``apiVersion`` and ``kind`` (``BalancePolicyList``), which kubectl requires.
- A subresource (``balancepolicies/status``) has no short names of its own: kubectl would warn that
  ``bp`` could also mean it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any, Protocol


class Resource(Protocol):
    @property
    def group(self) -> str | None: ...
    @property
    def version(self) -> str | None: ...
    @property
    def plural(self) -> str | None: ...


def group_version(resource: Resource) -> str:
    """``v1`` for the core group, ``group/version`` otherwise."""
    return f"{resource.group}/{resource.version}" if resource.group else str(resource.version)


def _path(resource: Resource) -> str:
    """The OpenAPI index's key: ``api/v1``, ``apis/<group>/<version>``."""
    return f"apis/{resource.group}/{resource.version}" if resource.group else f"api/{resource.version}"


def openapi_index(resources: Iterable[Resource]) -> dict[str, Any]:
    """``GET /openapi/v3``: one document per served group version."""
    paths = sorted({_path(r) for r in resources})
    return {
        "paths": {
            p: {"serverRelativeURL": f"/openapi/v3/{p}?hash={hashlib.sha256(p.encode()).hexdigest()[:16]}"}
            for p in paths
        }
    }


def openapi_document(path: str, kinds: dict[Resource, tuple[str, bool]]) -> dict[str, Any] | None:
    """``GET /openapi/v3/<path>``: the PATCH operation of each kind served there (``kinds``: resource ->
    (kind, namespaced)), with the ``fieldValidation`` parameter; None for an unknown group version."""
    paths: dict[str, Any] = {}
    for resource, (kind, namespaced) in kinds.items():
        if _path(resource) != path:
            continue
        scope = "namespaces/{namespace}/" if namespaced else ""
        gvk = {"group": resource.group or "", "version": resource.version, "kind": kind}
        paths[f"/{path}/{scope}{resource.plural}/{{name}}"] = {
            "patch": {
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "OK"}},
            }
        }
    if not paths:
        return None
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "unversioned"}, "paths": paths}


def typed_list(payload: dict[str, Any], resource: Resource, kind: str) -> dict[str, Any]:
    """A list response with the ``apiVersion`` and ``kind`` (``<Kind>List``) of a real API server's."""
    return {"apiVersion": group_version(resource), "kind": f"{kind}List", **payload}


def without_subresource_names(resource_list: dict[str, Any]) -> dict[str, Any]:
    """An APIResourceList whose subresources carry no short names or categories."""
    for entry in resource_list.get("resources", []):
        if "/" in entry["name"]:
            entry["shortNames"], entry["categories"] = [], []
    return resource_list

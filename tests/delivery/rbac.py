"""A small RBAC authorizer over rendered manifests, and the API calls found in the controller's code.

The authorizer follows Kubernetes' RBAC rules for what the chart uses: ClusterRoleBindings grant
everywhere, RoleBindings only in their namespace; a rule matches on API group, resource (with
subresource, "balancepolicies/status"), verb and, when listed, resourceNames.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, order=True)
class ApiCall:
    group: str  # "" for the core API
    resource: str  # plural, with "/subresource" when one is used
    verb: str
    namespaced: bool = True  # False: a cluster-wide call (list across namespaces, CRDs)
    name: str | None = None  # a specific object (Secrets are granted by name)


@dataclass(frozen=True)
class Grant:
    group: str
    resource: str
    verb: str
    namespace: str | None  # None: cluster-wide
    names: tuple[str, ...]  # empty: any name


def grants_for(objects: list[dict[str, Any]], account: str, account_namespace: str) -> list[Grant]:
    """Every (group, resource, verb) granted to the service account, with where it applies."""
    roles = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects}
    out: list[Grant] = []
    for binding in objects:
        if binding["kind"] not in {"RoleBinding", "ClusterRoleBinding"}:
            continue
        if not any(
            s["kind"] == "ServiceAccount" and s["name"] == account and s.get("namespace") == account_namespace
            for s in binding["subjects"]
        ):
            continue
        ref = binding["roleRef"]
        scope = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
        role_ns = scope if ref["kind"] == "Role" else None
        role = roles.get((ref["kind"], role_ns, ref["name"]))
        assert role is not None, f"{binding['kind']} {binding['metadata']['name']} refers to missing {ref}"
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        out.append(Grant(group, resource, verb, scope, tuple(rule.get("resourceNames", ()))))
    return out


def allowed(grants: list[Grant], call: ApiCall, namespace: str | None) -> bool:
    """Would the API server allow ``call`` in ``namespace`` (None for a cluster-wide call)?"""
    for g in grants:
        if (g.group, g.resource, g.verb) != (call.group, call.resource, call.verb) and "*" not in (g.resource, g.verb):
            continue
        if g.namespace is not None and g.namespace != namespace:
            continue  # a Role never grants outside its namespace, nor cluster-wide calls
        if g.names and (call.name is None or call.name not in g.names):
            continue
        return True
    return False


# kubernetes client method prefix -> RBAC verb
_VERBS = {
    "get": "get",
    "read": "get",
    "list": "list",
    "create": "create",
    "patch": "patch",
    "replace": "update",
    "delete": "delete",
}
_CORE_RESOURCES = {"secret": "secrets", "config_map": "configmaps", "event": "events", "namespace": "namespaces"}


def calls_in_source(path: Path, group: str) -> set[ApiCall]:
    """API calls made through ``self._core``/``self._custom`` in a module using the kubernetes client.

    Custom-object calls take (group, version, [namespace,] plural, ...): the plural is resolved from
    the module's constants. A test compares this with the controller's published list.
    """
    tree = ast.parse(path.read_text())
    constants = {
        t.id: node.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign | ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }
    found: set[ApiCall] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if not (isinstance(owner, ast.Attribute) and owner.attr in {"_core", "_custom"}):
            continue
        method = node.func.attr
        match = re.fullmatch(
            r"(get|read|list|create|patch|replace|delete)_(namespaced_|cluster_)?(.+?)(_status)?", method
        )
        assert match, f"{path.name}: unrecognised client method {method}"
        verb, scope, kind, status = match.groups()
        namespaced = scope == "namespaced_"
        if owner.attr == "_custom":
            plural_arg = node.args[3] if scope == "namespaced_" else node.args[2]
            plural = constants[plural_arg.id] if isinstance(plural_arg, ast.Name) else plural_arg.value  # type: ignore[attr-defined]
            resource = plural + ("/status" if status else "")
            found.add(ApiCall(group, resource, _VERBS[verb], namespaced))
        else:
            resource = _CORE_RESOURCES[kind.removesuffix("_for_all_namespaces")] + ("/status" if status else "")
            found.add(ApiCall("", resource, _VERBS[verb], namespaced))
    return found

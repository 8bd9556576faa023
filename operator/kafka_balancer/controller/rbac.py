"""Every Kubernetes API call the operator makes, as data: the chart's RBAC rules are checked against it.

Two sources: kopf itself (watching the custom resources, patching them for its finalizer and
annotations, patching /status with what the handlers return, posting Events) and
:mod:`kafka_balancer.controller.kubeapi` (the reconciler's own reads and writes). The tests record
the requests that reach the Kubernetes API emulator and fail when one is missing here
(tests/controller/test_e2e.py); the chart's test (tests/delivery/test_chart_rbac.py) fails when a
call here is not granted by the chart's ClusterRole/Role.

The SparkApplication calls (:data:`SPARK_APPLICATION_CALLS`) are kept apart from :data:`API_CALLS`:
the chart grants them only with ``spark.engine=sparkApplication`` and only in the Spark namespace;
:func:`allows` accepts both.

Scope ``cluster`` means the request names no namespace (list/watch across namespaces with
``--all-namespaces``); with ``--namespace`` kopf makes the same list/watch calls per namespace instead.

The Lease calls (:data:`LEASE_CALLS`, controller.lease) are made in the operator's own namespace only:
the chart grants them there, in a Role of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from kafka_balancer.model.policy.fields import GROUP


@dataclass(frozen=True)
class ApiCall:
    group: str  # "" for the core API
    resource: str  # plural, with the subresource: "balancepolicies/status"
    verb: str  # RBAC verb: get, list, watch, create, update, patch, delete
    scope: Literal["namespaced", "cluster"]
    why: str

    @property
    def namespaced(self) -> bool:
        return self.scope == "namespaced"

    @property
    def name(self) -> str:
        return f"{self.verb} {self.group or 'core'}/{self.resource} ({self.scope})"


_KOPF: Final = (
    ApiCall(GROUP, "balancepolicies", "list", "cluster", "kopf: initial listing (--all-namespaces)"),
    ApiCall(GROUP, "balancepolicies", "watch", "cluster", "kopf: watch stream (--all-namespaces)"),
    ApiCall(GROUP, "balancepolicies", "list", "namespaced", "kopf: initial listing (--namespace)"),
    ApiCall(GROUP, "balancepolicies", "watch", "namespaced", "kopf: watch stream (--namespace)"),
    ApiCall(GROUP, "balancepolicies", "patch", "namespaced", "kopf: finalizer and progress annotations"),
    ApiCall(GROUP, "balancepolicies/status", "patch", "namespaced", "kopf: the status the handlers return"),
    ApiCall(GROUP, "resourcegroups", "list", "cluster", "kopf: initial listing (--all-namespaces)"),
    ApiCall(GROUP, "resourcegroups", "watch", "cluster", "kopf: watch stream (--all-namespaces)"),
    ApiCall(GROUP, "resourcegroups", "list", "namespaced", "kopf: initial listing (--namespace)"),
    ApiCall(GROUP, "resourcegroups", "watch", "namespaced", "kopf: watch stream (--namespace)"),
    ApiCall(GROUP, "resourcegroups", "patch", "namespaced", "kopf: progress annotations"),
    ApiCall(GROUP, "resourcegroups/status", "patch", "namespaced", "kopf: the group's validity conditions"),
    ApiCall("", "events", "create", "namespaced", "kopf.event(): an Event for each transition"),
)

_OWN: Final = (
    ApiCall(GROUP, "resourcegroups", "get", "namespaced", "read the groups a policy names"),
    ApiCall(GROUP, "balancepolicies/status", "patch", "namespaced", "executor checkpoint, from its thread"),
    ApiCall("", "secrets", "get", "namespaced", "spec.cluster.credentialsSecret (SASL user, password, CA)"),
    ApiCall("", "configmaps", "get", "namespaced", "read back the stored plan before executing it"),
    ApiCall("", "configmaps", "create", "namespaced", "store the proposal's plan (<policy>-proposal)"),
    ApiCall("", "configmaps", "patch", "namespaced", "replace the stored plan with a new proposal"),
    # Not a request of its own: setting ownerReferences with blockOwnerDeletion on the ConfigMap needs
    # this permission on the owner where the OwnerReferencesPermissionEnforcement admission plugin runs.
    ApiCall(GROUP, "balancepolicies/finalizers", "update", "namespaced", "ConfigMap ownerReference to the policy"),
)


# Only with spec.analysis.engine.type sparkApplication, and granted by the chart only in the Spark
# namespace when spark.engine=sparkApplication (tests/delivery/test_chart_rbac.py checks the same three).
SPARK_APPLICATION_CALLS: Final = (
    ApiCall("sparkoperator.k8s.io", "sparkapplications", "create", "namespaced", "submit an analysis run"),
    ApiCall("sparkoperator.k8s.io", "sparkapplications", "get", "namespaced", "follow status.applicationState"),
    ApiCall("sparkoperator.k8s.io", "sparkapplications", "delete", "namespaced", "remove a finished run"),
)


# One operator acts at a time (controller.lease): in the operator's own namespace only.
LEASE_CALLS: Final = (
    ApiCall("coordination.k8s.io", "leases", "get", "namespaced", "read the Lease only its holder acts under"),
    ApiCall("coordination.k8s.io", "leases", "create", "namespaced", "create the Lease the first time"),
    ApiCall("coordination.k8s.io", "leases", "patch", "namespaced", "take, renew and release the Lease"),
)


def _unique(calls: tuple[ApiCall, ...]) -> tuple[ApiCall, ...]:
    """One entry per (group, resource, verb, scope): kopf's and the reconciler's needs overlap."""
    seen: dict[tuple[str, str, str, str], ApiCall] = {}
    for call in calls:
        seen.setdefault((call.group, call.resource, call.verb, call.scope), call)
    return tuple(seen.values())


API_CALLS: Final[tuple[ApiCall, ...]] = _unique(_KOPF + _OWN)


def allows(group: str, resource: str, verb: str, *, namespaced: bool) -> bool:
    """Whether a recorded request is covered by :data:`API_CALLS`."""
    scope = "namespaced" if namespaced else "cluster"
    return any(
        c.group == group and c.resource == resource and c.verb == verb and c.scope == scope
        for c in API_CALLS + SPARK_APPLICATION_CALLS + LEASE_CALLS
    )

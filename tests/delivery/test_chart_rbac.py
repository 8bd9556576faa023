"""The chart's RBAC grants exactly the Kubernetes API calls the operator makes: each is allowed, nothing else is.

Whether a call is allowed is decided twice: by the RBAC model of rbac.py over the rendered objects, and
by the real kube-apiserver with those objects applied (a SubjectAccessReview for the chart's
ServiceAccount, tests/kube_apiserver.py).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kube_apiserver import LEASE_NAME, Call, kube_apiserver

from .chart import ALL_FEATURES, REPO, manifests, render
from .rbac import ApiCall, Grant, allowed, calls_in_source, grants_for

GROUP = "kafkabalancer.io"
RELEASE_NS = "kafka-balancer"
ACCOUNT = "kb-kafka-balancer"
KUBEAPI = REPO / "operator" / "kafka_balancer" / "controller" / "kubeapi.py"

# kopf's own calls for handlers on both kinds, run with --standalone (no peering objects): list+watch
# to follow the objects, patch for its finalizer and progress annotations, patch on /status, create
# for Events. The operator disables kopf's scanning, so kopf never lists CRDs or namespaces (checked
# below: if that setting goes, the chart needs those rules back).
KOPF_CALLS = {
    ApiCall(GROUP, "balancepolicies", "list"),
    ApiCall(GROUP, "balancepolicies", "watch"),
    ApiCall(GROUP, "balancepolicies", "patch"),
    ApiCall(GROUP, "balancepolicies/status", "patch"),
    ApiCall(GROUP, "resourcegroups", "list"),
    ApiCall(GROUP, "resourcegroups", "watch"),
    ApiCall(GROUP, "resourcegroups", "patch"),
    ApiCall(GROUP, "resourcegroups/status", "patch"),
    ApiCall("", "events", "create"),
}
OPERATOR = REPO / "operator" / "kafka_balancer" / "controller" / "operator.py"
# ConfigMaps the controller writes carry ownerReferences with blockOwnerDeletion: the API server
# (OwnerReferencesPermissionEnforcement) then requires update on the owner's finalizers subresource.
OWNER_REFERENCE_CALLS = {ApiCall(GROUP, "balancepolicies/finalizers", "update")}
# Analysis on the Spark operator (spark.engine=sparkApplication): submit, poll its state by name, clean up
# (analysis/spark_application.py: "the controller submits the manifest and polls status.applicationState").
SPARK_APPLICATION_CALLS = {
    ApiCall("sparkoperator.k8s.io", "sparkapplications", verb) for verb in ("create", "get", "delete")
}
# One operator acts at a time (controller/lease.py): its one Lease, named like the release (the Deployment's
# KAFKA_BALANCER_LEASE_NAME), in the release namespace only. RBAC cannot limit create by name.
LEASE_CALLS = {
    ApiCall("coordination.k8s.io", "leases", "create"),
    *(ApiCall("coordination.k8s.io", "leases", verb, name=LEASE_NAME) for verb in ("get", "patch")),
}


def controller_calls(*, all_namespaces: bool = True) -> set[ApiCall]:
    """The calls the controller publishes (kafka_balancer.controller.rbac) plus those read from its code.

    The published list holds kopf's list/watch in both forms: across namespaces (``--all-namespaces``)
    and per namespace (``--namespace``); a run makes only one of them, so the cluster-wide form is left
    out when namespaces are named. The reconciler's own cluster-wide call (listing every policy) is read
    from kubeapi.py, so it stays whatever the published entry's description says.
    """
    calls = calls_in_source(KUBEAPI, GROUP)
    try:
        published = importlib.import_module("kafka_balancer.controller.rbac")
    except ModuleNotFoundError:
        return calls
    for c in published.API_CALLS:
        if not all_namespaces and not c.namespaced and "--all-namespaces" in getattr(c, "why", ""):
            continue
        calls.add(ApiCall(c.group, c.resource, c.verb, c.namespaced))
    return calls


def _secret_calls(namespace_names: dict[str, list[str]]) -> list[tuple[ApiCall, str]]:
    return [(ApiCall("", "secrets", "get", name=n), ns) for ns, names in namespace_names.items() for n in names]


def _expected(*, spark: bool, all_namespaces: bool = True) -> set[ApiCall]:
    own = controller_calls(all_namespaces=all_namespaces)
    calls = {c for c in own if c.resource != "secrets"} | KOPF_CALLS | OWNER_REFERENCE_CALLS
    return calls | SPARK_APPLICATION_CALLS if spark else calls


def _granted_calls(grants: list[Grant]) -> set[tuple[str, str, str]]:
    return {(g.group, g.resource, g.verb) for g in grants}


def test_kopf_runs_without_scanning_so_needs_no_crd_or_namespace_access() -> None:
    source = OPERATOR.read_text()
    assert "settings.scanning.disabled = True" in source, (
        "kopf scans CRDs (and namespaces when not watching all): add list/watch on customresourcedefinitions "
        "and namespaces to the chart's RBAC and to KOPF_CALLS"
    )


def test_calls_read_from_the_code_are_the_published_list() -> None:
    in_code = calls_in_source(KUBEAPI, GROUP)
    assert {c.resource for c in in_code} >= {"secrets", "configmaps", "resourcegroups", "balancepolicies/status"}
    published = importlib.import_module("kafka_balancer.controller.rbac").API_CALLS
    listed = {(c.group, c.resource, c.verb, c.namespaced) for c in published}
    missing = {(c.group, c.resource, c.verb, c.namespaced) for c in in_code} - listed
    assert not missing, f"kubeapi.py makes calls kafka_balancer.controller.rbac.API_CALLS does not list: {missing}"


# Is ``call`` allowed in a namespace (None: cluster-wide)? Made from the chart values it judges.
Authorizer = Callable[[ApiCall, str | None], bool]


@pytest.fixture(params=["rbac-model", "kube-apiserver"])
def authorizer(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[dict[str, Any]], Authorizer]]:
    """The RBAC model of rbac.py, or the real API server's RBAC with the rendered objects applied."""
    with contextlib.ExitStack() as stack:

        def for_values(values: dict[str, Any]) -> Authorizer:
            if request.param == "rbac-model":
                grants = grants_for(manifests(render(values, namespace=RELEASE_NS)), ACCOUNT, RELEASE_NS)
                return lambda call, ns: allowed(grants, call, ns)
            server = stack.enter_context(kube_apiserver(tmp_path / "kube-apiserver", values))
            return lambda call, ns: server.can_i(
                "operator", Call("operator", call.group, call.resource, call.verb, ns, call.name)
            )

        yield for_values


@pytest.mark.parametrize("watched", [None, ("kafka-a", "kafka-b")], ids=["all-namespaces", "named-namespaces"])
def test_every_call_is_allowed_and_nothing_more(
    watched: tuple[str, ...] | None, authorizer: Callable[[dict[str, Any]], Authorizer]
) -> None:
    values: dict[str, Any] = {
        "rbac": {
            "secrets": [
                {"namespace": RELEASE_NS, "names": ["kafka-creds"]},
                {"namespace": "kafka-a", "names": ["team-a-creds"]},
            ]
        },
    }
    if watched:
        values["watch"] = {"allNamespaces": False, "namespaces": list(watched)}
    objects = manifests(render(values, namespace=RELEASE_NS))
    grants = grants_for(objects, ACCOUNT, RELEASE_NS)
    namespaces = list(watched) if watched else ["kafka-a", "some-team", RELEASE_NS]
    may = authorizer(values)

    expected = _expected(spark=False, all_namespaces=watched is None)
    for call in expected:
        where = namespaces if call.namespaced else [None]
        for ns in where:
            assert may(call, ns), f"{call} is not allowed in {ns or 'the cluster scope'}"
    # The Lease: the one the Deployment names, in the release namespace, nowhere else; no other Lease there
    # (another controller's).
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    env = {e["name"]: e.get("value") for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (env["KAFKA_BALANCER_LEASE_NAMESPACE"], env["KAFKA_BALANCER_LEASE_NAME"]) == (RELEASE_NS, LEASE_NAME)
    for call in LEASE_CALLS:
        assert may(call, RELEASE_NS), f"{call} is not allowed in the release namespace"
        assert not may(call, "kafka-a"), f"{call} allowed outside the release namespace"
        if call.name:
            other = ApiCall(call.group, call.resource, call.verb, name="another-controller")
            assert not may(other, RELEASE_NS), f"{other} allowed: only the operator's own Lease"
    # Nothing more: every granted (group, resource, verb) is one the operator uses (Secrets by name only).
    used = {(c.group, c.resource, c.verb) for c in expected | LEASE_CALLS}
    extra = _granted_calls(grants) - used - {("", "secrets", "get")}
    assert not extra, f"granted but never used: {sorted(extra)}"
    assert not any(g.resource == "*" or g.verb == "*" or g.group == "*" for g in grants)

    if watched:
        # Outside the watched namespaces the operator may not touch policies, ConfigMaps or Events
        # (a call the code also makes cluster-wide, listing policies, is necessarily allowed everywhere).
        cluster_wide = {(c.group, c.resource, c.verb) for c in expected if not c.namespaced}
        for call in expected:
            if call.namespaced and (call.group, call.resource, call.verb) not in cluster_wide:
                assert not may(call, "elsewhere"), f"{call} allowed outside the watched namespaces"

    # Secrets: exactly the named ones, only `get`, only in their namespace.
    for call, ns in _secret_calls({RELEASE_NS: ["kafka-creds"], "kafka-a": ["team-a-creds"]}):
        assert may(call, ns), f"{call} denied in {ns}"
    assert not may(ApiCall("", "secrets", "get", name="kafka-creds"), "kafka-a")
    assert not may(ApiCall("", "secrets", "get", name="other"), RELEASE_NS)
    assert not may(ApiCall("", "secrets", "list"), RELEASE_NS)
    assert all(g.names for g in grants if g.resource == "secrets"), "Secrets are only ever granted by name"


def test_spark_operator_access_only_with_that_engine() -> None:
    without = grants_for(manifests(render(namespace=RELEASE_NS)), ACCOUNT, RELEASE_NS)
    assert not any(g.group == "sparkoperator.k8s.io" for g in without)

    objects = manifests(render(ALL_FEATURES, namespace=RELEASE_NS))
    grants = grants_for(objects, ACCOUNT, RELEASE_NS)
    for call in SPARK_APPLICATION_CALLS:
        assert allowed(grants, call, "spark-jobs"), call
        assert not allowed(grants, call, RELEASE_NS), "SparkApplications only in spark.sparkApplication.namespace"
    extra = _granted_calls(grants) - {(c.group, c.resource, c.verb) for c in _expected(spark=True) | LEASE_CALLS}
    extra -= {("", "secrets", "get")}
    assert not extra, f"granted but never used: {sorted(extra)}"


def test_no_rbac_objects_when_disabled() -> None:
    objects = manifests(render({"rbac": {"create": False}}))
    assert not [o for o in objects if o["kind"] in {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}]


def test_source_scanner_reads_client_calls(tmp_path: Path) -> None:
    module = tmp_path / "api.py"
    module.write_text(
        "PLURAL = 'widgets'\n"
        "class A:\n"
        "    def f(self):\n"
        "        self._core.read_namespaced_secret('n', 'ns')\n"
        "        self._core.create_namespaced_event('ns', {})\n"
        "        self._custom.list_cluster_custom_object('g', 'v1', PLURAL)\n"
        "        self._custom.patch_namespaced_custom_object_status('g', 'v1', 'ns', PLURAL, 'n', {})\n"
    )
    assert calls_in_source(module, "g") == {
        ApiCall("", "secrets", "get"),
        ApiCall("", "events", "create"),
        ApiCall("g", "widgets", "list", namespaced=False),
        ApiCall("g", "widgets/status", "patch"),
    }

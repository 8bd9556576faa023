"""The chart's RBAC, enforced by the real kube-apiserver: the operator can do exactly what it needs.

The operator authenticates as the chart's ServiceAccount, bound by the chart's rendered ClusterRole or
Role (tests/kube_apiserver.py). A request outside those rules gets 403 Forbidden from the server, and
a policy naming a Secret that ``rbac.secrets`` does not grant ends Stalled saying so. That every call
of kafka_balancer.controller.rbac is allowed, and nothing more granted, the server answers in
tests/delivery/test_chart_rbac.py; the end-to-end tests run with ``no_unlisted_calls``: the real
operator was refused nothing it needed.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.sandbox.kube import KubeError
from kube_apiserver import (
    CHART_VALUES,
    CREDENTIALS_SECRET,
    POLICY_NAMESPACE,
    RELEASE_NAMESPACE,
    KubeApiserver,
    kube_apiserver,
)

from .conftest import Cluster, Operator
from .kube import KUBE_APISERVER

pytestmark = pytest.mark.timeout(120)

# The chart's two ways to grant: a ClusterRole for every namespace, or a Role in each watched one.
VARIANTS: dict[str, dict[str, Any]] = {
    "cluster-role": CHART_VALUES,
    "role": {**CHART_VALUES, "watch": {"allNamespaces": False, "namespaces": [POLICY_NAMESPACE]}},
}
OTHER_NAMESPACE = "default"  # a namespace the Role variant does not watch


@pytest.fixture(params=list(VARIANTS))
def rbac_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, KubeApiserver]]:
    with kube_apiserver(tmp_path / "kube-apiserver", VARIANTS[request.param]) as server:
        yield request.param, server


def _refused(server: KubeApiserver, request: Any) -> int | None:
    """The status of a request the operator should not be able to make (None: it succeeded)."""
    try:
        request(server.client("operator"))
    except KubeError as err:
        return err.code
    return None


def test_requests_outside_the_operators_rules_get_403(rbac_server: tuple[str, KubeApiserver]) -> None:
    variant, server = rbac_server
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": CREDENTIALS_SECRET}, "data": {}}
    for ns in (POLICY_NAMESPACE, RELEASE_NAMESPACE):
        server.client("admin").create({**secret, "metadata": {"name": CREDENTIALS_SECRET, "namespace": ns}}, "secrets")
    api = "kafkabalancer.io/v1alpha1"
    policy = {"apiVersion": api, "kind": "BalancePolicy", "metadata": {"name": "p", "namespace": POLICY_NAMESPACE}}
    outside = {
        "list Secrets": lambda c: c.items("v1", "secrets", POLICY_NAMESPACE),
        "read a Secret of that name elsewhere": lambda c: c.get("v1", "secrets", RELEASE_NAMESPACE, CREDENTIALS_SECRET),
        "read another Secret": lambda c: c.get("v1", "secrets", POLICY_NAMESPACE, "other"),
        "create a BalancePolicy": lambda c: c.create(
            {**policy, "spec": {"cluster": {"bootstrapServers": "k:1"}}}, "balancepolicies"
        ),
        "list ConfigMaps": lambda c: c.items("v1", "configmaps", POLICY_NAMESPACE),
        "list Pods": lambda c: c.items("v1", "pods", POLICY_NAMESPACE),
        "list CRDs": lambda c: c.items("apiextensions.k8s.io/v1", "customresourcedefinitions"),
        "create a Namespace": lambda c: c.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}, "namespaces"
        ),
    }
    if variant == "role":
        outside |= {
            "list ResourceGroups outside the watched namespace": lambda c: c.items(
                api, "resourcegroups", OTHER_NAMESPACE
            ),
            "list ResourceGroups in every namespace": lambda c: c.items(api, "resourcegroups"),
            "read a ConfigMap outside the watched namespace": lambda c: c.get("v1", "configmaps", OTHER_NAMESPACE, "x"),
        }
    granted = server.client("operator").get("v1", "secrets", POLICY_NAMESPACE, CREDENTIALS_SECRET)
    assert granted["metadata"]["name"] == CREDENTIALS_SECRET  # rbac.secrets grants it, by name
    codes = {what: _refused(server, request) for what, request in outside.items()}
    assert codes == dict.fromkeys(codes, 403), codes
    refused = [c for c in server.calls("operator") if c.code == 403]
    assert len(refused) == len(codes), "each refusal is the server's, in its audit log"


@pytest.mark.parametrize("api_server", [KUBE_APISERVER], indirect=True)
def test_a_secret_not_granted_in_rbac_secrets_stalls_the_policy(kube: Cluster, operator: Operator) -> None:
    # The Secret exists, but the chart grants only CREDENTIALS_SECRET: the server refuses the operator.
    login = {"username": "balancer", "password": "pw"}
    data = {k: base64.b64encode(v.encode()).decode() for k, v in login.items()}
    kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "other-credentials"}, "data": data})
    cluster = {
        "bootstrapServers": "127.0.0.1:9",  # never reached: the credentials come first
        "securityProtocol": "SASL_PLAINTEXT",
        "saslMechanism": "SCRAM-SHA-512",
        "allowPlaintextCredentials": True,  # loopback
        "credentialsSecret": {"name": "other-credentials"},
    }
    kube.apply(
        {
            "apiVersion": "kafkabalancer.io/v1alpha1",
            "kind": "BalancePolicy",
            "metadata": {"name": "main"},
            "spec": {"cluster": cluster, "mode": "DryRun"},
        }
    )
    stalled = kube.wait_for(
        "Stalled", lambda: (c := kube.condition("main", "Stalled")) and c["status"] == "True" and c, timeout=60
    )
    assert stalled["reason"] == "SecretNotGranted"
    assert f"{POLICY_NAMESPACE}/other-credentials" in stalled["message"]
    assert "rbac.secrets" in stalled["message"]
    assert kube.policy("main")["status"]["state"] == "Stalled"
    reads = [c for c in kube.server.calls("operator") if c.resource == "secrets"]
    assert reads, "the operator asked for the Secret"
    assert {(c.name, c.code) for c in reads} == {("other-credentials", 403)}

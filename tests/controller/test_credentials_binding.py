"""Kafka credentials go only to the cluster they belong to (issue 37, item 12).

Whoever may edit a BalancePolicy in a namespace whose credentials Secret the operator may read could
point ``bootstrapServers`` at a host of their own, or name any key of the Secret as the username, and
the operator logged in there with it. Here the attacker's hosts are emulated brokers with a TLS
certificate from the same CA as the real cluster's (a public CA would do as well) that record every
SASL PLAIN login they receive: the test checks what reached them.
"""

from __future__ import annotations

import base64
import dataclasses
import re
import ssl
from collections.abc import Callable
from typing import Any

import pytest
import trustme
from emulator_fixtures import six_broker_model
from kafka_balancer.sandbox import EmulatedCluster, sasl
from kafka_balancer.sandbox.kube import KubeError

from .conftest import Cluster, Operator, policy_manifest
from .kube import KUBE_APISERVER, ApiServer

pytestmark = pytest.mark.timeout(180)

USER, PASSWORD, PRIVATE_KEY = "balancer", "s3cret-passw0rd", "-----BEGIN PRIVATE KEY----- do not send"
SECRET = "kafka-creds"


@pytest.fixture
def tls() -> tuple[ssl.SSLContext, str]:
    """The brokers' TLS context and the CA that signs it (PEM)."""
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    return context, ca.cert_pem.bytes().decode()


@pytest.fixture
def received(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SASL PLAIN message an emulated broker receives, decoded (authzid NUL user NUL password)."""
    seen: list[str] = []
    step = sasl._Plain.step

    def recording(self: Any, token: bytes) -> tuple[bytes, bool]:
        seen.append(token.decode(errors="replace"))
        return step(self, token)

    monkeypatch.setattr(sasl._Plain, "step", recording)
    return seen


def _model(name: str) -> Any:
    return dataclasses.replace(six_broker_model(), cluster_name=name)  # a cluster id each


def _policy(name: str, cluster: dict[str, Any]) -> dict[str, Any]:
    return policy_manifest(name, {"cluster": cluster, "mode": "DryRun"})


def _stalled(kube: Cluster, name: str) -> dict[str, Any]:
    """The Stalled condition once the policy has an outcome, or ``{"proposed": True}``."""

    def probe() -> dict[str, Any] | None:
        cond = kube.condition(name, "Stalled")
        if cond and cond["status"] == "True":
            return cond
        return {"proposed": True} if (kube.policy(name).get("status") or {}).get("proposal") else None

    found: dict[str, Any] = kube.wait_for(f"{name} to be Stalled or to propose", probe, timeout=60)
    return found


def test_credentials_reach_only_the_bootstrap_servers_their_secret_names(
    kube: Cluster,
    operator: Operator,
    emulator: Callable[..., EmulatedCluster],
    tls: tuple[ssl.SSLContext, str],
    received: list[str],
) -> None:
    context, ca_pem = tls
    real = emulator(_model("real"), tls=context, sasl_users={USER: PASSWORD})
    # The attacker's brokers: any login "succeeds" as far as the test cares; they record what was sent.
    rogue = emulator(_model("rogue"), tls=context, sasl_users={"x": "x"}, sasl_mechanisms=("PLAIN",))
    rogue_keys = emulator(_model("rogue-keys"), tls=context, sasl_users={"x": "x"}, sasl_mechanisms=("PLAIN",))
    # A cluster the Secret does list, but reached without TLS.
    cleartext = emulator(_model("cleartext"), sasl_users={USER: PASSWORD}, sasl_mechanisms=("PLAIN",))
    data = {
        "username": USER,
        "password": PASSWORD,
        "ca.crt": ca_pem,
        "tls.key": PRIVATE_KEY,  # another key in the same Secret, never meant for Kafka
        "bootstrapServers": f"{real.bootstrap_servers},{cleartext.bootstrap_servers}",
    }
    secret = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET}, "data": secret})

    sasl_ssl = {"securityProtocol": "SASL_SSL", "credentialsSecret": {"name": SECRET}}
    kube.apply(
        _policy("real", {"bootstrapServers": real.bootstrap_servers, "saslMechanism": "SCRAM-SHA-512", **sasl_ssl})
    )
    kube.apply(
        _policy("elsewhere", {"bootstrapServers": rogue.bootstrap_servers, "saslMechanism": "PLAIN", **sasl_ssl})
    )
    other_key = {**sasl_ssl, "credentialsSecret": {"name": SECRET, "usernameKey": "tls.key", "passwordKey": "tls.key"}}
    kube.apply(
        _policy("other-key", {"bootstrapServers": rogue_keys.bootstrap_servers, "saslMechanism": "PLAIN", **other_key})
    )
    kube.apply(
        _policy(
            "in-clear",
            {
                "bootstrapServers": cleartext.bootstrap_servers,
                "securityProtocol": "SASL_PLAINTEXT",
                "saslMechanism": "PLAIN",
                "credentialsSecret": {"name": SECRET},
            },
        )
    )

    # The real cluster: the credentials work there.
    kube.wait_for("a proposal on the real cluster", lambda: (kube.policy("real").get("status") or {}).get("proposal"))
    elsewhere = _stalled(kube, "elsewhere")
    other_key_cond = _stalled(kube, "other-key")
    in_clear = _stalled(kube, "in-clear")
    leaked = [m.replace("\x00", " | ") for m in received if PASSWORD in m or PRIVATE_KEY in m]
    assert not leaked, f"secrets sent to hosts the Secret does not name, or in clear: {leaked}"

    assert elsewhere["reason"] == "CredentialsNotBound"
    assert f"Secret kafka/{SECRET}" in elsewhere["message"]
    assert rogue.bootstrap_servers.split(",")[0] in elsewhere["message"]
    # The key fields are gone: refused as unknown here; a real API server prunes them first, and the policy
    # then stops at CredentialsNotBound like "elsewhere". Either way only the documented keys are read.
    assert other_key_cond["reason"] == "InvalidSpec"
    assert "spec.cluster.credentialsSecret.usernameKey" in other_key_cond["message"]
    assert in_clear["reason"] == "InvalidSpec"
    assert "allowPlaintextCredentials" in in_clear["message"]

    # Allowed explicitly (a cluster reachable only over SASL_PLAINTEXT), the Secret's own cluster is fine.
    kube.patch_policy("in-clear", {"cluster": {"allowPlaintextCredentials": True}})
    kube.wait_for(
        "a proposal over SASL_PLAINTEXT", lambda: (kube.policy("in-clear").get("status") or {}).get("proposal")
    )
    assert any(PASSWORD in m for m in received), "the listed cluster got the login it was allowed"


def test_a_secret_without_bootstrap_servers_is_used_nowhere(
    kube: Cluster, operator: Operator, emulator: Callable[..., EmulatedCluster], received: list[str]
) -> None:
    cluster = emulator(_model("unbound"), sasl_users={USER: PASSWORD}, sasl_mechanisms=("PLAIN",))
    data = {"username": USER, "password": PASSWORD}
    secret = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    kube.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET}, "data": secret})
    cluster_spec = {
        "bootstrapServers": cluster.bootstrap_servers,
        "securityProtocol": "SASL_PLAINTEXT",
        "saslMechanism": "PLAIN",
        "allowPlaintextCredentials": True,
        "credentialsSecret": {"name": SECRET},
    }
    kube.apply(_policy("unbound", cluster_spec))
    stalled = _stalled(kube, "unbound")
    assert stalled["reason"] == "CredentialsNotBound"
    assert "has no key 'bootstrapServers'" in stalled["message"]
    assert not received


@pytest.mark.parametrize("api_server", [KUBE_APISERVER], indirect=True)
def test_the_crd_refuses_sasl_plaintext_at_admission_as_the_operator_does(api_server: ApiServer) -> None:
    """The CRD's CEL rule, evaluated by the real kube-apiserver at admission, and the model's validator agree."""
    from kafka_balancer.controller.crdgen import balance_policy_crd
    from kafka_balancer.model.policy.parsing import PolicyError, parse_balance_policy_spec

    schema = balance_policy_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    (rule,) = schema["properties"]["spec"]["properties"]["cluster"]["x-kubernetes-validations"]
    client = api_server.client("admin")
    for protocol in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        for allowed in (False, True):
            cluster = {"bootstrapServers": "k:9093", "securityProtocol": protocol, "allowPlaintextCredentials": allowed}
            if protocol.startswith("SASL"):
                cluster |= {"saslMechanism": "PLAIN", "credentialsSecret": {"name": SECRET}}
            policy = policy_manifest(
                f"{protocol.lower().replace('_', '-')}-{str(allowed).lower()}", {"cluster": cluster}
            )
            policy["metadata"]["namespace"] = "kafka"
            refused = protocol == "SASL_PLAINTEXT" and not allowed
            if refused:
                with pytest.raises(KubeError) as err:
                    client.create(policy, "balancepolicies", dry_run=True)
                assert err.value.code == 422
                assert rule["message"] in str(err.value)
                with pytest.raises(PolicyError, match=re.escape(rule["message"])):
                    parse_balance_policy_spec({"cluster": cluster})
            else:
                client.create(policy, "balancepolicies", dry_run=True)
                parse_balance_policy_spec({"cluster": cluster})

"""An execution whose policy stalls is stopped and cleaned up, with its own connection (issue 55).

Someone changes ``spec.cluster.bootstrapServers`` to another host while the policy executes. The policy
stalls (CredentialsNotBound: its Secret does not name that host, so no login goes there) and, before, the
execution's reassignments stayed in flight on the real cluster with nothing reporting them. Decided: the
spec no longer describes that execution, so it is stopped (its moves in flight cancelled, its throttles
removed) with the connection and credentials it started with, and reported until it has ended
(lastRun Stopped, "Stalled: CredentialsNotBound"). On the real API server, as the chart's RBAC allows.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.sandbox import EmulatedCluster
from kube_apiserver import CREDENTIALS_SECRET, POLICY_NAMESPACE, kube_apiserver

from .operator_process import OperatorProcess
from .tenants import approve, condition, policy, spec_patch, spread_model, status, wait

pytestmark = pytest.mark.timeout(240)

USER, PASSWORD = "balancer", "s3cret-passw0rd"


def test_an_execution_whose_policy_stalls_is_stopped_with_its_own_credentials(
    emulator: Callable[..., EmulatedCluster], start_operator: Callable[..., OperatorProcess], tmp_path: Path
) -> None:
    kafka = emulator(spread_model(partitions=12), time_scale=1.0, sasl_users={USER: PASSWORD})
    elsewhere = emulator(spread_model(name="elsewhere"), sasl_users={"x": "x"})
    with kube_apiserver(tmp_path / "api") as api:
        client = api.client("admin")
        data = {"username": USER, "password": PASSWORD, "bootstrapServers": kafka.bootstrap_servers}
        secret = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        client.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": CREDENTIALS_SECRET, "namespace": POLICY_NAMESPACE},
                "data": secret,
            },
            "secrets",
        )
        op = start_operator(api.write_kubeconfig(tmp_path / "kubeconfig", user="operator"))
        cluster = {
            "bootstrapServers": kafka.bootstrap_servers,
            "securityProtocol": "SASL_PLAINTEXT",
            "allowPlaintextCredentials": True,
            "saslMechanism": "SCRAM-SHA-512",
            "credentialsSecret": {"name": CREDENTIALS_SECRET},
        }
        execution = {"throttleBytesPerSec": 1_000_000, "concurrentMovesPerBroker": 2}
        policy(client, POLICY_NAMESPACE, "main", {"cluster": cluster, "mode": "Manual", "execution": execution})
        proposal = wait("a proposal", lambda: status(client, POLICY_NAMESPACE, "main").get("proposal"), [op])
        approve(client, POLICY_NAMESPACE, "main", proposal["id"])

        def moving() -> bool:
            with kafka.state.lock:
                return bool(kafka.state.reassigning)

        wait("moves in flight", moving, [op], timeout=60)
        spec_patch(
            client, POLICY_NAMESPACE, "main", {"cluster": {**cluster, "bootstrapServers": elsewhere.bootstrap_servers}}
        )

        stalled = wait(
            "the policy Stalled",
            lambda: (c := condition(client, POLICY_NAMESPACE, "main", "Stalled")).get("status") == "True" and c,
            [op],
        )
        assert stalled["reason"] == "CredentialsNotBound", stalled

        def stopped() -> dict[str, Any] | None:
            last = status(client, POLICY_NAMESPACE, "main").get("lastRun") or {}
            return last if last.get("result") else None

        last = wait("the execution to end", stopped, [op], timeout=90)
        assert last["result"] == "Stopped", last
        assert "Stalled: CredentialsNotBound" in last["message"]
        with kafka.state.lock:
            assert not kafka.state.reassigning, "no reassignment of the execution is left in flight"
            throttled = {
                b.id: {k: v for k, v in b.configs.items() if "throttled" in k} for b in kafka.state.brokers.values()
            }
            topics = {
                t.name: {k: v for k, v in t.configs.items() if "throttled" in k} for t in kafka.state.topics.values()
            }
        assert not any(throttled.values()), throttled
        assert not any(v for v in topics.values() if any(v.values())), topics
        assert condition(client, POLICY_NAMESPACE, "main", "Executing").get("status") == "False"
        with elsewhere.state.lock:
            assert not elsewhere.state.requests, "nothing was sent to the host the Secret does not name"

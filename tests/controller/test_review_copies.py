"""What reviewers read is what runs, and who approved is recorded (issue 55), on the real API server.

The proposal ConfigMap holds the verified ``proposal.json.gz`` and, for people, plain ``plan.json`` and
``summary.json``. Before: someone who may edit ConfigMaps replaced the plain plan with a harmless-looking
one; the status still showed the true id, the approval named it, and the true proposal ran while what
the reviewer read said something else. Now the copies are checked against the verified proposal before
anything runs: a copy that differs is refused like a tampered proposal (a Warning event, nothing
executed), the copies are restored, and the approval given meanwhile counts only once it is withdrawn
and given again. The approver (the field manager that set spec.approvedProposal) is recorded in
status.proposal.approvedBy and in the ExecutionStarted event.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.sandbox import EmulatedCluster
from kube_apiserver import POLICY_NAMESPACE, kube_apiserver
from submissions import Submissions

from .operator_process import OperatorProcess
from .tenants import approve, condition, events, policy, reconciliations, spread_model, status, wait

pytestmark = pytest.mark.timeout(240)
NS = POLICY_NAMESPACE


def _harmless(plan: dict[str, Any]) -> str:
    """The plan a reviewer would wave through: one partition, reordered on its own brokers."""
    first = plan["partitions"][0]
    return json.dumps({"version": 1, "partitions": [{**first, "replicas": sorted(first["replicas"])}]})


def test_review_copies_that_differ_are_refused_and_the_approval_must_be_given_again(
    emulator: Callable[..., EmulatedCluster],
    submissions: Submissions,
    start_operator: Callable[..., OperatorProcess],
    tmp_path: Path,
) -> None:
    kafka = emulator(spread_model(partitions=6), time_scale=20.0)
    with kube_apiserver(tmp_path / "api") as api:
        client = api.client("admin")
        op = start_operator(api.write_kubeconfig(tmp_path / "kubeconfig", user="operator"))
        policy(client, NS, "main", {"cluster": {"bootstrapServers": kafka.bootstrap_servers}, "mode": "Manual"})
        proposal = wait("a proposal", lambda: status(client, NS, "main").get("proposal"), [op])
        settled = reconciliations(op) + 3  # a reconciliation from a body older than the proposal stores it again
        wait("three more reconciliations", lambda: reconciliations(op) >= settled, [op])
        stored = client.get("v1", "configmaps", NS, proposal["configMap"])["data"]
        true_plan = stored["plan.json"]
        fake = {"data": {"plan.json": _harmless(json.loads(true_plan))}}
        client.merge_patch("v1", "configmaps", NS, proposal["configMap"], fake)

        approve(client, NS, "main", proposal["id"], manager="mallory-approval")
        tampered = wait("a ProposalTampered event", lambda: events(client, NS, "main", "ProposalTampered"), [op])
        assert tampered[0]["type"] == "Warning"
        assert "plan.json differs from the verified proposal" in tampered[0]["message"]
        stalled = wait(
            "Stalled: ProposalTampered",
            lambda: (c := condition(client, NS, "main", "Stalled")).get("status") == "True" and c,
            [op],
        )
        assert stalled["reason"] == "ProposalTampered", stalled
        assert "withdraw spec.approvedProposal" in stalled["message"]
        assert not submissions.moves, "nothing was executed on an approval given on tampered copies"
        restored = client.get("v1", "configmaps", NS, proposal["configMap"])["data"]["plan.json"]
        assert restored == true_plan, "the copy people read is the proposal again"
        assert status(client, NS, "main")["proposal"]["id"] == proposal["id"]

        approve(client, NS, "main", None)  # withdrawn ...
        wait(
            "the approval seen withdrawn",
            lambda: condition(client, NS, "main", "ProposalReady").get("reason") == "AwaitingApproval",
            [op],
        )
        approve(client, NS, "main", proposal["id"], manager="alice-approval")  # ... and given again, on true copies
        done = wait(
            "the execution to complete",
            lambda: (status(client, NS, "main").get("lastRun") or {}).get("result") == "Completed",
            [op],
            timeout=120,
        )
        assert done
        approved_by = status(client, NS, "main")["proposal"]["approvedBy"]
        assert approved_by.startswith("alice-approval (Update at "), approved_by
        started = events(client, NS, "main", "ExecutionStarted")
        assert len(started) == 1
        assert "approved by alice-approval" in started[0]["message"]
    assert submissions.moves, "the reviewed proposal ran once approved again"

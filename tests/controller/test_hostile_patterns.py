"""A ResourceGroup topic pattern cannot freeze the operator (issue 37, item 8).

``(a+)+b`` against a topic of 34 ``a``s takes about 2^34 steps with a backtracking matcher, and
Python's ``re`` holds the GIL meanwhile: kopf, /healthz, /metrics and every execution thread would
stop. The operator runs as its own process here (a frozen operator in the test's process would
freeze the test too) and the test checks from outside that it keeps answering while it reconciles
a policy whose group has that pattern, over a cluster that has that topic.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from emulator_fixtures import six_broker_model
from kafka_balancer.model.policy.parsing import PolicyError, parse_resource_group_spec
from kafka_balancer.planner.options import GroupOptions, PlanningError
from kafka_balancer.sandbox import EmulatedCluster

from .conftest import Cluster, policy_manifest
from .operator_process import OperatorProcess

pytestmark = pytest.mark.timeout(180)

HOSTILE = "(a+)+b"
VICTIM = "a" * 34  # a legal Kafka topic name: exponential for a backtracking matcher


def _group(name: str, patterns: list[str], brokers: list[int]) -> dict[str, Any]:
    return {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "ResourceGroup",
        "metadata": {"name": name},
        "spec": {"brokers": {"ids": brokers}, "topics": {"patterns": patterns}},
    }


# A probe's budget: a backtracking matcher holds the GIL for hours on VICTIM, so an operator that froze
# answers no probe for hours; 30 s only keeps a probe that a busy machine delays from counting as missed.
PROBE_BUDGET_S = 30.0


def _responsive(op: OperatorProcess, seconds: float, budget: float = PROBE_BUDGET_S) -> list[str]:
    """Poll /healthz and /metrics for ``seconds``; the probes that got no answer within ``budget``."""
    missed = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for path in ("/healthz", "/metrics"):
            if op.get(path, timeout=budget) != 200:
                missed.append(f"{path} at +{seconds - (deadline - time.monotonic()):.1f}s")
        time.sleep(0.2)
    return missed


def test_a_catastrophic_pattern_leaves_the_operator_responsive(
    kube: Cluster,
    emulator: Callable[..., EmulatedCluster],
    start_operator: Callable[[Path], OperatorProcess],
    tmp_path: Path,
) -> None:
    cluster = emulator(six_broker_model(topics={"payments": 6, VICTIM: 3}), time_scale=10.0)
    op = start_operator(kube.server.write_kubeconfig(tmp_path / "operator-kubeconfig"))
    kube.wait_for("/healthz", lambda: op.get("/healthz", timeout=2) == 200, timeout=60)

    kube.apply(_group("hostile", [HOSTILE, "payments"], [1, 2, 3]))
    kube.apply(_group("backref", [r"(a)\1"], [4]))  # no linear-time matcher does backreferences
    kube.apply(
        policy_manifest(
            "main", {"cluster": {"bootstrapServers": cluster.bootstrap_servers}, "resourceGroups": ["hostile"]}
        )
    )
    missed = _responsive(op, seconds=8.0)
    assert not missed, f"the operator stopped answering: {missed}"
    # kopf went on working: the policy was reconciled over the hostile pattern, and the pattern
    # only claimed what it matches (payments, by name; not the topic of a's, which has no b).
    status = kube.wait_for("a proposal", lambda: (kube.policy("main").get("status") or {}).get("proposal"))
    assert status["id"]
    assert kube.condition("main", "Stalled")["status"] == "False"  # type: ignore[index]

    def ready(name: str) -> dict[str, Any] | None:
        conds = (kube.get("resourcegroups", name).get("status") or {}).get("conditions", [])
        return next((c for c in conds if c["type"] == "Ready"), None)

    assert kube.wait_for("hostile Ready", lambda: (c := ready("hostile")) and c["status"] == "True" and c)
    refused = kube.wait_for("backref refused", lambda: (c := ready("backref")) and c["status"] == "False" and c)
    assert refused["reason"] == "InvalidSpec"
    assert "spec.topics.patterns[0]" in refused["message"]
    assert "got '(a)" in refused["message"]
    assert "backreferences" in refused["message"]


@pytest.mark.timeout(30)  # a backtracking matcher would take hours here
def test_every_matcher_is_linear_and_refuses_what_it_cannot_match_in_linear_time() -> None:
    """The CRD model (controller, CLI) and the planner's options share one matcher."""
    started = time.process_time()
    selector = parse_resource_group_spec({"brokers": {"ids": [1]}, "topics": {"patterns": [HOSTILE]}}).topics
    assert not selector.matches(VICTIM)
    assert selector.matches("a" * 200 + "b")
    group = GroupOptions("g", (1,), topic_patterns=(HOSTILE,))
    assert not group.matches(VICTIM * 7)  # the longest legal topic name, 238 a's
    # CPU seconds of this process, which other processes on the machine do not inflate: RE2 takes
    # microseconds here, a backtracking matcher hours (about 2^34 steps for each of the two topics).
    assert time.process_time() - started < 1.0
    for bad in (r"(a)\1", "(?=a)a", "a{1001}"):
        with pytest.raises(PolicyError, match=r"spec\.topics\.patterns\[0\]"):
            parse_resource_group_spec({"brokers": {"ids": [1]}, "topics": {"patterns": [bad]}})
        with pytest.raises(PlanningError, match="patterns"):
            GroupOptions("g", (1,), topic_patterns=(bad,))
    with pytest.raises(PolicyError, match=r"spec\.topics\.patterns"):
        parse_resource_group_spec({"brokers": {"ids": [1]}, "topics": {"patterns": ["x" * 1001]}})

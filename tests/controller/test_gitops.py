"""GitOps health as Flux and Argo CD compute it, with their own code (docs/gitops.md, tests/go_tools.py).

- Argo CD: gitops/argo-cd/resource_customizations is laid out as Argo CD's own tree; its health_test.yaml
  cases run in gopher-lua with Argo CD's VM setup (``gitops-health argocd-test``), one case per state.
- Flux and Argo CD on live objects: the real operator (its process, as the image starts it) drives a
  BalancePolicy through every state on the real kube-apiserver; in each state ``gitops-health live`` reads
  the objects and reports kstatus (sigs.k8s.io/cli-utils), kustomize-controller's status poller without
  and with the healthCheckExprs of docs/gitops.md (github.com/fluxcd/pkg/runtime/cel), what a
  Kustomization with ``wait: true`` reports (github.com/fluxcd/pkg/ssa's WaitForSet, fail-fast), and
  Argo CD's health from the same health.lua. Kafka is the emulator, which can hold moves in flight.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from go_tools import REPO, run
from kafka_balancer.sandbox import EmulatedCluster
from processes import stop

from .conftest import Cluster
from .kube import KUBE_APISERVER, ApiServer
from .operator_process import OperatorProcess
from .test_e2e import GROUPS, _groups, _policy, even_model, skewed_model

pytestmark = pytest.mark.timeout(300)

ARGO_CD = REPO / "gitops" / "argo-cd" / "resource_customizations"
HEALTH_LUA = ARGO_CD / "kafkabalancer.io" / "_" / "health.lua"
DOC = REPO / "docs" / "gitops.md"
API = "kafkabalancer.io"

# What each state reports: kstatus (Flux's default health check, also `wait: true` without
# healthCheckExprs), Flux with the healthCheckExprs of docs/gitops.md, and Argo CD. docs/gitops.md's
# table says the same (test_the_docs_table_is_what_the_tools_report).
EXPECTED: dict[str, tuple[str, str, str]] = {
    "created, not reconciled yet": ("InProgress", "InProgress", "Progressing"),
    "waiting for samples": ("Current", "Current", "Healthy"),
    "proposal ready": ("Current", "Current", "Healthy"),
    "executing for a long time": ("Current", "InProgress", "Healthy"),
    "stopping a withdrawn execution": ("InProgress", "InProgress", "Progressing"),
    "spec changed, not reconciled yet": ("InProgress", "InProgress", "Progressing"),
    "paused": ("Current", "Current", "Suspended"),
    "completed": ("Current", "Current", "Healthy"),
    "stalled": ("Failed", "Failed", "Degraded"),
}
# What kustomize-controller's health check (`wait: true`) says: passed, failed at once, or timed out.
WAIT = {"Current": "", "Failed": "failed early due to stalled resources", "InProgress": "timeout waiting for"}


def _doc_block(language: str, starts: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.DOTALL)
    found = [b for b in blocks if b.startswith(starts)]
    assert len(found) == 1, f"docs/gitops.md: one {language} block starting with {starts!r}, found {len(found)}"
    return found[0]


# ----- Argo CD: its own test layout --------------------------------------------------------------------
def test_argo_cd_health_test_cases_pass_in_gopher_lua_with_argo_cds_vm() -> None:
    done = run("gitops-health", ["argocd-test", ARGO_CD])
    results = [json.loads(line) for line in done.stdout.splitlines()]
    failed = [r for r in results if not r["pass"]]
    assert not failed, json.dumps(failed, indent=2)
    assert done.returncode == 0, done.stderr
    # One case per state, for both kinds, each run with the standard libraries open (Argo CD's built-in
    # scripts) and closed (an argocd-cm customization by default), with the same result.
    cases = {Path(r["case"]).stem: r for r in results}
    assert set(cases) == {path.stem for path in (ARGO_CD / "kafkabalancer.io" / "_" / "testdata").glob("*.yaml")}
    assert {r["script"] for r in results} == {"kafkabalancer.io/_/health.lua"}
    assert {c["expected"]["status"] for c in cases.values()} == {"Progressing", "Healthy", "Suspended", "Degraded"}
    assert all(r["builtIn"] == r["configMap"] == r["expected"] for r in results)
    policies = {
        yaml.safe_load((ARGO_CD / "kafkabalancer.io" / "_" / r["case"].split("/_/")[1]).read_text())["kind"]
        for r in results
    }
    assert policies == {"BalancePolicy", "ResourceGroup"}


def test_the_docs_show_the_health_lua_argo_cd_runs() -> None:
    assert _doc_block("lua", "-- Health of kafka-balancer") == HEALTH_LUA.read_text()


def test_the_docs_table_is_what_the_tools_report() -> None:
    rows = re.findall(r"^\| ([a-z][^|]*?) \| `(\w+)` \| `(\w+)` \| `(\w+)` \|", DOC.read_text(), re.MULTILINE)
    assert {state: (k, f, a) for state, k, f, a in rows} == EXPECTED


# ----- every state, live -------------------------------------------------------------------------------
class Tools:
    """``gitops-health live`` against the real API server, as admin (as Flux's and Argo CD's controllers)."""

    def __init__(self, server: ApiServer, workdir: Path) -> None:
        self.kubeconfig = server.write_kubeconfig(workdir / "gitops.kubeconfig", user="admin")
        self.kustomization = workdir / "kustomization.yaml"
        self.kustomization.write_text(_doc_block("yaml", "apiVersion: kustomize.toolkit.fluxcd.io/v1"))

    def read(self, kind: str, name: str) -> dict[str, Any]:
        obj = f"{API}/{kind}/kafka/{name}"
        args = ["live", "--kubeconfig", self.kubeconfig, "--kustomization", self.kustomization]
        done = run("gitops-health", [*args, "--argocd", ARGO_CD, "--timeout", "2s", obj])
        assert done.returncode == 0, done.stderr
        report: dict[str, Any] = json.loads(done.stdout)
        return {**report["objects"][obj], "wait": report["wait"], "waitExprs": report.get("waitExprs")}

    def check(self, state: str, name: str, kind: str = "BalancePolicy") -> dict[str, Any]:
        """Every tool's answer for the object in ``state``, checked against EXPECTED."""
        got = self.read(kind, name)
        kstatus, with_exprs, argo = EXPECTED[state]
        assert got["kstatus"]["status"] == kstatus, (state, got)
        assert got["flux"]["status"] == kstatus, (state, got)  # Flux's poller computes kstatus too
        assert got["fluxExprs"]["status"] == with_exprs, (state, got)
        assert not got["fluxExprs"].get("error"), (state, got)
        assert got["argocd"]["status"] == got["argocdConfigMap"]["status"] == argo, (state, got)
        assert got["argocd"]["message"] == got["argocdConfigMap"]["message"], (state, got)
        assert got["wait"].startswith(WAIT[kstatus]), (state, got)
        assert bool(got["wait"]) == bool(WAIT[kstatus]), (state, got)
        assert got["waitExprs"].startswith(WAIT[with_exprs]), (state, got)
        return got


def _status(kube: Cluster, name: str) -> dict[str, Any]:
    return dict(kube.policy(name).get("status") or {})


def _condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions", []) if c["type"] == type_), {})


def _stalled_group(kube: Cluster, name: str) -> dict[str, Any]:
    status = kube.get("resourcegroups", name).get("status") or {}
    stalled = _condition(status, "Stalled")
    return stalled if stalled.get("status") == "True" else {}


def _events(kube: Cluster, reason: str) -> list[dict[str, Any]]:
    return [e for e in kube.events("main") if e.get("reason") == reason]


def _checkpoint(kube: Cluster, name: str) -> dict[str, Any]:
    text = _status(kube, name).get("executionCheckpoint")
    return dict(json.loads(text)) if text else {}


def _held(cluster: EmulatedCluster) -> list[tuple[str, int]]:
    """Hold every move in flight (it copies nothing and never finishes), as a broker that cannot fetch."""
    with cluster.state.lock:
        moving = sorted(cluster.state.reassigning)
        for topic, partition in moving:
            cluster.stick_reassignment(topic, partition)
    return moving


@pytest.mark.parametrize("api_server", [KUBE_APISERVER], indirect=True)
def test_every_state_as_kstatus_flux_and_argo_cd_read_it_live(
    api_server: ApiServer,
    kube: Cluster,
    emulator: Callable[..., EmulatedCluster],
    start_operator: Callable[..., OperatorProcess],
    tmp_path: Path,
) -> None:
    tools = Tools(api_server, tmp_path)
    operator_kubeconfig = api_server.write_kubeconfig(tmp_path / "operator.kubeconfig", "kafka", user="operator")
    cluster = emulator(skewed_model(), time_scale=2.0)
    sampled = emulator(even_model(), time_scale=2.0)  # another cluster id: one policy per cluster
    _groups(kube)
    main = _policy("main", cluster.bootstrap_servers, mode="Manual")
    main["spec"]["execution"] = {"throttleBytesPerSec": 4_000_000, "concurrentMovesPerBroker": 1}
    kube.apply(main)
    sampling = _policy("sampling", sampled.bootstrap_servers, mode="Manual", resourceGroups=[])
    sampling["spec"]["analysis"] = {
        "samples": str(tmp_path / "samples"),
        "intervalSeconds": 3600,
        "windowSeconds": 3600,
    }
    kube.apply(sampling)
    kube.apply(_policy("misgrouped", "127.0.0.1:1", resourceGroups=["nope"]))
    broken = {"brokers": {"ids": [1, 2]}, "topics": {"patterns": ["("]}}  # admitted: RE2 syntax is the operator's check
    kube.apply(
        {"apiVersion": f"{API}/v1alpha1", "kind": "ResourceGroup", "metadata": {"name": "broken"}, "spec": broken}
    )

    # No operator yet: the CRD's status default (observedGeneration 0) keeps a new object InProgress.
    created = tools.check("created, not reconciled yet", "main")
    assert created["argocd"]["message"] == "Waiting for the kafka-balancer operator to reconcile generation 1"
    assert created["kstatus"]["message"] == "BalancePolicy generation is 1, but latest observed generation is 0"

    first = start_operator(operator_kubeconfig)
    kube.wait_for("a proposal", lambda: _status(kube, "main").get("state") == "ProposalReady", timeout=180)
    proposal = _status(kube, "main")["proposal"]
    ready = tools.check("proposal ready", "main")
    assert ready["argocd"]["message"].startswith(f"AwaitingApproval: set spec.approvedProposal to '{proposal['id']}'")
    group = tools.read("ResourceGroup", next(iter(GROUPS)))  # no healthCheckExprs for it: kstatus reads Ready
    assert group["kstatus"]["status"] == group["flux"]["status"] == "Current", group
    assert group["argocd"]["status"] == "Healthy", group

    kube.wait_for("the refused group", lambda: _stalled_group(kube, "broken"), timeout=120)
    refused = tools.read("ResourceGroup", "broken")
    assert refused["kstatus"]["status"] == refused["flux"]["status"] == "Failed", refused
    assert refused["argocd"]["message"] == f"InvalidSpec: {_stalled_group(kube, 'broken')['message']}", refused
    assert refused["argocd"]["status"] == "Degraded", refused
    assert "ResourceGroup/kafka/broken status: 'Failed'" in refused["wait"]

    kube.wait_for("samples being collected", lambda: _status(kube, "sampling").get("state") == "Analysing", timeout=120)
    sampling_health = tools.check("waiting for samples", "sampling")
    assert sampling_health["argocd"]["message"].startswith("CollectingSamples: collecting samples into"), (
        sampling_health
    )

    kube.wait_for("the stall", lambda: _status(kube, "misgrouped").get("state") == "Stalled", timeout=120)
    stalled = tools.check("stalled", "misgrouped")
    reason = _condition(_status(kube, "misgrouped"), "Stalled")
    assert stalled["kstatus"]["message"] == reason["message"]
    assert stalled["argocd"]["message"] == f"UnknownResourceGroup: {reason['message']}"
    assert "BalancePolicy/kafka/misgrouped status: 'Failed'" in stalled["wait"]

    # Approved: the execution runs, its moves held in flight. Not Reconciling: kstatus reads it Current.
    kube.patch_policy("main", {"approvedProposal": proposal["id"]})
    kube.wait_for("moves in flight", lambda: _held(cluster), interval=0.05, timeout=60)
    executing = tools.check("executing for a long time", "main")
    assert executing["argocd"]["message"].startswith(f"Executing: executing proposal {proposal['id']}, ")
    assert _condition(_status(kube, "main"), "Reconciling")["status"] == "False"

    # An operator whose timer is off: the status changes only with the spec, so the stop it begins on
    # `paused: true` stays in status (the next tick would record it done).
    stop(first.proc)
    second = start_operator(operator_kubeconfig, reconcile_seconds=3600)
    kube.wait_for("the execution resumed", lambda: _events(kube, "ExecutionResumed"), timeout=180)
    generation = kube.policy("main")["metadata"]["generation"]
    kube.patch_policy("main", {"paused": True})
    kube.wait_for("the stop", lambda: _status(kube, "main").get("observedGeneration") == generation + 1, timeout=60)
    stopping = tools.check("stopping a withdrawn execution", "main")
    assert stopping["argocd"]["message"].startswith("Paused: stopping the execution"), stopping
    kube.wait_for("the execution stopped", lambda: _checkpoint(kube, "main").get("state") == "Stopped", timeout=120)

    # The spec changes while no operator runs.
    stop(second.proc)
    kube.patch_policy("main", {"execution": {"throttleBytesPerSec": 8_000_000, "concurrentMovesPerBroker": 1}})
    changed = tools.check("spec changed, not reconciled yet", "main")
    assert (
        changed["argocd"]["message"]
        == f"Waiting for the kafka-balancer operator to reconcile generation {generation + 2}"
    )

    start_operator(operator_kubeconfig)
    kube.wait_for("paused", lambda: _status(kube, "main").get("state") == "Paused", timeout=180)
    paused = tools.check("paused", "main")
    assert paused["argocd"]["message"] == "spec.paused is true: no proposal is executed"

    kube.patch_policy("main", {"paused": False})
    done = kube.wait_for(
        "the execution to complete",
        lambda: (s := _status(kube, "main")).get("state") == "Completed" and s,
        timeout=120,
    )
    completed = tools.check("completed", "main")
    assert completed["argocd"]["message"] == f"AlreadyExecuted: proposal {done['proposal']['id']} was already executed"

"""docs/gitops.md's Argo CD health.lua (real Lua, lupa) and Flux healthCheckExprs (real CEL) on policies in each state.

The objects are built with the operator's own status models, so a change in status shape breaks these tests.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import cel
import pytest
import yaml
from kafka_balancer.controller.status import (
    EXECUTING,
    PROPOSAL_READY,
    READY,
    STALLED,
    BalancePolicyStatus,
    Progress,
    set_condition,
)
from lupa import LuaRuntime

DOC = (Path(__file__).resolve().parents[2] / "docs" / "gitops.md").read_text()


def _policy(
    *, generation: int = 2, observed: int | None = 2, paused: bool = False, **conditions: Any
) -> dict[str, Any]:
    """conditions: TYPE=(status, reason, message)."""
    status = BalancePolicyStatus(observed_generation=observed)
    for type_, (value, reason, message) in conditions.items():
        status.conditions = set_condition(status.conditions, type_, value, reason=reason, message=message)
    if conditions.get(EXECUTING, (False,))[0]:
        status.progress = Progress(bytes_moved=425, bytes_total=1000, percent=42.5)
    return {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BalancePolicy",
        "metadata": {"name": "main", "namespace": "kafka", "generation": generation},
        "spec": {"cluster": {"bootstrapServers": "k:9092"}, "paused": paused},
        "status": status.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


OK = (True, "Reconciled", "spec accepted")
NOT_STALLED = (False, "Reconciled", "")
CASES = {
    "new": (
        {"apiVersion": "kafkabalancer.io/v1alpha1", "kind": "BalancePolicy", "metadata": {"generation": 1}},
        "Progressing",
    ),
    "old generation": (_policy(observed=1, Ready=OK, Stalled=NOT_STALLED), "Progressing"),
    "ready": (_policy(Ready=OK, Stalled=NOT_STALLED), "Healthy"),
    "executing": (
        _policy(
            Ready=(True, "Executing", ""), Stalled=NOT_STALLED, Executing=(True, "Executing", "executing proposal ab12")
        ),
        "Healthy",
    ),
    "awaiting approval": (
        _policy(Ready=OK, Stalled=NOT_STALLED, ProposalReady=(True, "AwaitingApproval", "set spec.approvedProposal")),
        "Healthy",
    ),
    "stalled": (
        _policy(Ready=(False, "UnknownResourceGroup", "x"), Stalled=(True, "UnknownResourceGroup", "'nope' not found")),
        "Degraded",
    ),
    "paused": (_policy(paused=True, Ready=OK, Stalled=NOT_STALLED), "Suspended"),
}
FLUX = {"Progressing": "progressing", "Healthy": "current", "Degraded": "failed", "Suspended": "current"}


def _lua_script() -> str:
    match = re.search(r"```lua\n(.*?)```", DOC, re.DOTALL)
    assert match, "docs/gitops.md has no lua block"
    return match.group(1)


def _argo(obj: dict[str, Any]) -> tuple[str, str]:
    lua = LuaRuntime(unpack_returned_tuples=True)

    def to_lua(value: Any) -> Any:
        if isinstance(value, dict):
            return lua.table_from({k: to_lua(v) for k, v in value.items()})
        if isinstance(value, list):
            return lua.table_from([to_lua(v) for v in value])
        return value

    health = lua.eval(f"function(obj)\n{_lua_script()}\nend")(to_lua(obj))
    return str(health["status"]), str(health["message"])


@pytest.mark.parametrize("case", list(CASES))
def test_argo_cd_health_lua(case: str) -> None:
    obj, expected = CASES[case]
    status, message = _argo(obj)
    assert status == expected, message
    if case == "stalled":
        assert message == "UnknownResourceGroup: 'nope' not found"
    if case == "executing":
        assert message.startswith("Executing: 42.5%")
    if case == "awaiting approval":
        assert message.startswith("AwaitingApproval")


def _flux_exprs() -> dict[str, dict[str, str]]:
    block = re.search(r"```yaml\n(apiVersion: kustomize.*?)```", DOC, re.DOTALL)
    assert block, "docs/gitops.md has no Flux Kustomization"
    kustomization = yaml.safe_load(block.group(1))
    return {e["kind"]: e for e in kustomization["spec"]["healthCheckExprs"]}


# Flux itself treats an object without status as in progress before it evaluates any expression.
@pytest.mark.parametrize("case", [c for c in CASES if "status" in CASES[c][0]])
def test_flux_health_check_exprs(case: str) -> None:
    obj, expected = CASES[case]
    exprs = _flux_exprs()["BalancePolicy"]
    failed = cel.evaluate(exprs["failed"], obj)
    current = cel.evaluate(exprs["current"], obj)
    got = "failed" if failed else "current" if current else "progressing"
    assert got == FLUX[expected]


def test_both_kinds_have_flux_expressions() -> None:
    assert set(_flux_exprs()) == {"BalancePolicy", "ResourceGroup"}
    assert READY in _flux_exprs()["ResourceGroup"]["current"]
    assert STALLED in _flux_exprs()["ResourceGroup"]["failed"]
    assert PROPOSAL_READY not in _flux_exprs()["BalancePolicy"]["current"]  # waiting for approval is healthy

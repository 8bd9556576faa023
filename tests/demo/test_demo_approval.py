"""The demo approves a proposal again when the operator made a newer one before it saw the approval:
the status it acts on is the operator's own (controller.approval's reason), read from a BalancePolicy."""

from __future__ import annotations

from typing import Any

from kafka_balancer.cli.demo_approval import superseding
from kafka_balancer.controller.approval import STALE_APPROVAL


def _status(reason: str | None, current: str) -> dict[str, Any]:
    stalled = [] if reason is None else [{"type": "Stalled", "status": "True", "reason": reason, "message": "..."}]
    return {"proposal": {"id": current, "moves": 3}, "conditions": [{"type": "Ready", "status": "False"}, *stalled]}


def test_a_stale_approval_is_superseded_by_the_proposal_in_status() -> None:
    assert superseding(_status(STALE_APPROVAL, "new"), "old") == {"id": "new", "moves": 3}


def test_nothing_supersedes_an_approval_of_the_current_proposal_or_another_stall() -> None:
    assert superseding(_status(STALE_APPROVAL, "old"), "old") is None
    assert superseding(_status("ProposalTampered", "new"), "old") is None
    assert superseding(_status(None, "new"), "old") is None

"""The demo approves the proposal in status by id, as a person would, and follows the execution.

An approval names one proposal. If the operator makes a new one before it sees the approval (the demo
measures traffic in 10-second windows, so the cluster it reads changes), it refuses the approval as
stale (``StaleApproval``) and shows the new proposal; a person reviews that one and approves its id,
and so does the demo, a few times at most.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Final

from kafka_balancer.cli import demo_view as view
from kafka_balancer.cli.demo_context import Context, say, step
from kafka_balancer.cli.demo_kafka import DemoError, EmulatedDemo, RealDemo
from kafka_balancer.controller.approval import STALE_APPROVAL
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.model.policy.fields import API_VERSION

if TYPE_CHECKING:
    from kafka_balancer.cli.demo_kubectl import Kubectl
    from kafka_balancer.sandbox.kube import KubeClient

# Approvals the demo gives before a proposal that keeps changing fails it.
MAX_APPROVALS: Final = 3


def policy_status(client: KubeClient, policy: dict[str, Any]) -> dict[str, Any]:
    meta = policy["metadata"]
    found = client.get(API_VERSION, "balancepolicies", meta["namespace"], meta["name"])
    return dict(found.get("status") or {})


def _stalled_condition(status: dict[str, Any]) -> dict[str, Any] | None:
    return next(
        (c for c in status.get("conditions") or [] if c.get("type") == "Stalled" and c.get("status") == "True"), None
    )


def stalled(status: dict[str, Any]) -> None:
    cond = _stalled_condition(status)
    if cond is not None:
        raise DemoError(f"the policy is Stalled: {cond.get('reason')}: {cond.get('message')}")


def superseding(status: dict[str, Any], approved: str) -> dict[str, Any] | None:
    """The proposal to approve instead of ``approved``: the one in status when the operator refused
    ``approved`` as stale, else None."""
    cond = _stalled_condition(status)
    current = status.get("proposal") or {}
    if cond is None or cond.get("reason") != STALE_APPROVAL or current.get("id") in (None, approved):
        return None
    return dict(current)


def _approve(kubectl: Kubectl, policy: dict[str, Any], proposal: dict[str, Any]) -> dict[str, Any]:
    """Approve ``proposal``; its summary, read from its ConfigMap now (the operator rewrites that ConfigMap
    with the next proposal once the execution ends)."""
    meta = policy["metadata"]
    patch = {"spec": {"approvedProposal": proposal["id"]}}
    say(f"    $ {view.command_line(meta['namespace'], meta['name'], patch)}")
    kubectl.patch(meta["namespace"], meta["name"], patch)
    configmap = kubectl.client.get("v1", "configmaps", meta["namespace"], proposal["configMap"])
    return dict(json.loads((configmap.get("data") or {}).get("summary.json", "{}")))


def _approve_again(kubectl: Kubectl, policy: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
    say(f"    {STALE_APPROVAL}: the operator made proposal {newer['id']} before it saw the approval:")
    for line in view.proposal_lines(newer):
        say(line)
    return _approve(kubectl, policy, newer)


def _now(kafka: EmulatedDemo | RealDemo, start: float) -> float:
    """Seconds on the clock copies run by: the emulator's, else the wall clock since ``start``."""
    clock = kafka.clock()
    return time.monotonic() - start if clock is None else clock


def approve_and_follow(
    ctx: Context, kubectl: Kubectl, policy: dict[str, Any], proposal: dict[str, Any], kafka: EmulatedDemo | RealDemo
) -> dict[str, Any]:
    step("Approving it, as a person would")
    summary = _approve(kubectl, policy, proposal)
    approvals = 1
    client = kubectl.client

    step("Executing (progress from status.progress; moves in flight from Kafka's ListPartitionReassignments)")
    start = time.monotonic()
    clock0 = kafka.clock()
    adapter = KafkaAdapter(ConnectionSpec(kafka.bootstrap_servers))
    last_line, last_bytes, last_clock = "", 0.0, _now(kafka, start)
    rate: float | None = None  # bytes per (emulated) second: what the policy's throttle limits
    try:
        while True:
            status = policy_status(client, policy)
            newer = superseding(status, proposal["id"])
            if newer is not None and approvals < MAX_APPROVALS:
                summary, proposal, approvals = _approve_again(kubectl, policy, newer), newer, approvals + 1
                continue
            stalled(status)
            run_ = status.get("lastRun") or {}
            if run_.get("proposalId") == proposal["id"] and run_.get("result"):
                break
            progress = status.get("progress") or {}
            clock = _now(kafka, start)
            moved = float(progress.get("bytesMoved", 0))
            if moved > last_bytes and clock > last_clock:
                rate, last_bytes, last_clock = (moved - last_bytes) / (clock - last_clock), moved, clock
            in_flight = len(adapter.list_reassignments())
            line = view.progress_line(time.monotonic() - start, progress, in_flight, rate)
            if progress and line.split("]", 1)[1] != last_line:
                say(line)
                last_line = line.split("]", 1)[1]
            if time.monotonic() > ctx.deadline:
                raise DemoError(
                    f"timed out after {ctx.args.timeout:.0f} s waiting for the execution "
                    f"(state {status.get('state')}, progress {progress})"
                )
            time.sleep(1.0)
    finally:
        adapter.close()
    seconds = time.monotonic() - start
    end = kafka.clock()
    emulated = None if end is None or clock0 is None else end - clock0
    if run_["result"] != "Completed":
        raise DemoError(f"the execution ended {run_['result']}: {run_.get('message') or status.get('state')}")
    progress = status.get("progress") or {}
    say(view.progress_line(seconds, progress, 0, rate))
    say(
        f"    execution Completed (status.lastRun): {run_.get('partitionsMoved', 0)} partitions, "
        f"{view.gigabytes(float(run_.get('bytesMoved', 0)))}, {run_.get('startedAt')} -> {run_.get('finishedAt')}"
    )
    return {
        "bytesMoved": int(run_.get("bytesMoved", 0)),
        "partitions": int(run_.get("partitionsMoved", 0)),
        "seconds": seconds,
        "emulated": emulated,
        "summary": summary,
    }

"""A proposal: what the planner hands to the executor and the controller.

It bundles the reassignment plan (Kafka's JSON, replicas reordered where the preferred leader
changes), the leader changes on their own (for the election batches that follow the moves), and
a JSON-able summary (moves, bytes, per-goal statistics before/after, balancedness).

The id is a hash of the input snapshot, the options and the plan, so approving an id approves
exactly what was reviewed: any change to the cluster, the policy or the plan gives another id. The
proposal carries ``basis`` (the hash of the snapshot and the options), so its id can be recomputed
from what it holds: :meth:`Proposal.verify` is the integrity check of a stored copy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kafka_balancer.model.cluster import ClusterModel
from kafka_balancer.model.documents import loads_json
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.limits import check_int32, check_topic_name, shown
from kafka_balancer.model.plan import ReassignmentPlan

PROPOSAL_ID_LENGTH = 16


@dataclass(frozen=True, order=True)
class LeaderChange:
    """A partition whose leader after the plan (its preferred leader) differs from its leader now."""

    topic: str
    partition: int
    old_leader: int | None
    new_leader: int

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "from": self.old_leader, "to": self.new_leader}


@dataclass(frozen=True)
class Proposal:
    """The plan, the leader changes, and the summary, identified by a deterministic id.

    ``summary`` keys (all JSON values): ``proposalId``, ``operation``, ``moves`` (replicas added on
    new brokers), ``partitionsMoved``, ``bytesToMove``, ``leaderChanges``, ``balancednessBefore`` and
    ``balancednessAfter`` (0..100), ``goalsHolding`` / ``goalsViolated`` (names, after the plan),
    ``goals`` (per goal: ``holdsBefore``, ``holdsAfter``, ``before`` and ``after`` statistics) and
    ``groups`` (per resource group: brokers, per-resource ``before``/``after`` statistics with
    ``maxOverAvg``, ``minOverAvg``, ``stddevOverAvg``).
    """

    id: str
    plan: ReassignmentPlan
    leader_changes: tuple[LeaderChange, ...]
    summary: Mapping[str, Any] = field(default_factory=dict)
    basis: str = ""  # planning_basis() of the snapshot and options; "" in proposals written before it existed

    @property
    def is_empty(self) -> bool:
        return not self.plan.partitions and not self.leader_changes

    def verify(self) -> None:
        """Raise ModelError unless the id is the hash of this proposal's basis, plan and leader changes."""
        if not self.basis:
            raise ModelError(f"proposal {self.id}: field 'basis' is missing, so its id cannot be checked")
        actual = content_id(self.basis, self.plan, self.leader_changes)
        if actual != self.id:
            raise ModelError(
                f"proposal {self.id}: its content hashes to {actual}: it is not the proposal that was reviewed"
            )

    def to_dict(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "plan": self.plan.to_dict(),
            "leaderChanges": [c.to_dict() for c in self.leader_changes],
            "summary": dict(self.summary),
        }
        if self.basis:
            out["basis"] = self.basis
        return out

    def dumps(self, *, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Any) -> Proposal:
        if not isinstance(data, Mapping):
            raise ModelError(f"proposal: must be an object, got {type(data).__name__}")
        pid = data.get("id")
        if not isinstance(pid, str) or not pid:
            raise ModelError(f"proposal: field 'id' must be a non-empty string, got {shown(pid)}")
        plan = ReassignmentPlan.from_dict(data.get("plan"))
        raw_changes = data.get("leaderChanges", [])
        if not isinstance(raw_changes, list):
            raise ModelError(f"proposal: field 'leaderChanges' must be a list, got {shown(raw_changes)}")
        changes = []
        for i, row in enumerate(raw_changes):
            where = f"proposal: leaderChanges[{i}]"
            if not isinstance(row, Mapping):
                raise ModelError(f"{where} must be an object, got {shown(row)}")
            check_topic_name(row.get("topic"), where)
            part, new = check_int32(row.get("partition"), where, "partition"), check_int32(row.get("to"), where, "to")
            old = row.get("from")
            if old is not None:
                check_int32(old, where, "from")
            changes.append(LeaderChange(row["topic"], part, old, new))
        summary = data.get("summary", {})
        if not isinstance(summary, Mapping):
            raise ModelError(f"proposal: field 'summary' must be an object, got {shown(summary)}")
        basis = data.get("basis", "")
        if not isinstance(basis, str):
            raise ModelError(f"proposal: field 'basis' must be a string, got {shown(basis)}")
        return cls(pid, plan, tuple(sorted(changes)), dict(summary), basis)

    @classmethod
    def loads(cls, text: str | bytes) -> Proposal:
        return cls.from_dict(loads_json(text, "proposal"))


def model_fingerprint(model: ClusterModel) -> str:
    """A hash of everything in the model the planner reads (placement, leaders, loads, brokers)."""
    digest = hashlib.sha256()
    for array in (
        model.broker_ids, model.broker_alive, model.capacity, model.topic_min_isr, model.partition_topic,
        model.partition_id, model.replicas, model.leader, model.size_bytes, model.bytes_in, model.bytes_out,
        model.cpu_leader,
    ):  # fmt: skip
        digest.update(np.ascontiguousarray(array).tobytes())
    digest.update(json.dumps([list(model.broker_racks), list(model.topics)]).encode())
    cordoned = model.broker_cordoned
    if cordoned.any():  # only then: the fingerprints of clusters without cordons stay as they were
        digest.update(np.ascontiguousarray(cordoned).tobytes())
    return digest.hexdigest()


def planning_basis(snapshot_fingerprint: str, options: Any) -> str:
    """The hash of what a proposal was planned from: the snapshot fingerprint and the canonical options JSON.

    ``options`` must be JSON-able (the planner passes its options as a dict)."""
    digest = hashlib.sha256()
    digest.update(snapshot_fingerprint.encode())
    digest.update(json.dumps(options, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def content_id(basis: str, plan: ReassignmentPlan, leaders: Iterable[LeaderChange]) -> str:
    """The deterministic proposal id: sha256 of the planning basis + plan + leader changes.

    Lower-case hex, so it fits the CRD's ``approvedProposal`` pattern."""
    digest = hashlib.sha256()
    digest.update(basis.encode())
    digest.update(plan.dumps().encode())
    digest.update(json.dumps([c.to_dict() for c in leaders]).encode())
    return digest.hexdigest()[:PROPOSAL_ID_LENGTH]

"""Execution and task states, and the compact JSON record that lets an execution resume.

The record is what a store persists (a file for the CLI, the BalancePolicy status for the
operator), so it is kept small: the plan itself is not stored (the caller supplies it again and
its hash must match), and per-task states are one run-length-encoded string over the plan's
partition order, e.g. ``"c1200i5p795"``.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zlib
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kafka_balancer.model import ModelError, ReassignmentPlan

RECORD_VERSION = 1


class ExecutionState(StrEnum):
    PENDING = "Pending"
    MOVING_REPLICAS = "MovingReplicas"
    ELECTING_LEADERS = "ElectingLeaders"
    STOPPING = "Stopping"
    STOPPED = "Stopped"
    COMPLETED = "Completed"
    FAILED = "Failed"

    @property
    def finished(self) -> bool:
        return self in (ExecutionState.STOPPED, ExecutionState.COMPLETED, ExecutionState.FAILED)


class TaskState(StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    ABORTED = "aborted"  # cancelled by a stop; the partition is back on its original replicas
    DEAD = "dead"  # given up: stuck and cancelled, or blocked by cluster health for too long

    @property
    def code(self) -> str:
        return _CODES[self]

    @property
    def finished(self) -> bool:
        return self in (TaskState.COMPLETED, TaskState.ABORTED, TaskState.DEAD)


_CODES = {
    TaskState.PENDING: "p",
    TaskState.IN_PROGRESS: "i",
    TaskState.COMPLETED: "c",
    TaskState.ABORTED: "a",
    TaskState.DEAD: "d",
}
_BY_CODE = {code: state for state, code in _CODES.items()}
_RUN = re.compile(r"([a-z])(\d+)")
_PACKED = "z:"
_PACK_ABOVE = 512  # characters of run-length form worth keeping as is (readable in the status)


def encode_states(states: list[TaskState]) -> str:
    """Run-length encode task states: one letter per state, then the run length.

    Moves finish out of plan order, so mid-run the runs can be short; when the run-length form
    would be long, the letters are zlib-compressed instead (``z:`` + base64), which stays under
    two bits per task for a mix of two states (about 40 KB for 200,000 partitions)."""
    out: list[str] = []
    i = 0
    while i < len(states):
        j = i
        while j < len(states) and states[j] is states[i]:
            j += 1
        out.append(f"{states[i].code}{j - i}")
        i = j
    text = "".join(out)
    if len(text) <= _PACK_ABOVE:
        return text
    packed = _PACKED + base64.b64encode(zlib.compress("".join(s.code for s in states).encode(), 9)).decode()
    return packed if len(packed) < len(text) else text


def decode_states(text: str, expected: int | None) -> list[TaskState]:
    if text.startswith(_PACKED):
        try:
            letters = zlib.decompress(base64.b64decode(text[len(_PACKED) :], validate=True)).decode()
        except (ValueError, zlib.error):
            raise ModelError(f"execution record: field 'tasks' has a corrupt packed form, got {text[:40]!r}") from None
        text = "".join(f"{code}1" for code in letters)
    if _RUN.sub("", text):
        raise ModelError(f"execution record: field 'tasks' is not a run-length state string, got {text[:40]!r}")
    states: list[TaskState] = []
    for code, count in _RUN.findall(text):
        if code not in _BY_CODE:
            raise ModelError(f"execution record: field 'tasks' has unknown state code {code!r}")
        states.extend([_BY_CODE[code]] * int(count))
    if expected is not None and len(states) != expected:
        raise ModelError(f"execution record: field 'tasks' covers {len(states)} partitions, the plan has {expected}")
    return states


def plan_id(plan: ReassignmentPlan) -> str:
    """A stable id of the plan's content, so a resume never runs a record against another plan."""
    return hashlib.sha256(plan.dumps().encode()).hexdigest()[:16]


@dataclass
class ThrottleRecord:
    """Throttle configs this executor set, and what was there before, so cleanup restores exactly that.

    ``brokers``: broker ids whose replication rates we set (brokers that already had a rate are
    never touched, so never listed). ``topics``: topic -> the original values of its
    leader/follower throttled.replicas configs (None = was not set) before we changed them.
    """

    brokers: list[int] = field(default_factory=list)
    topics: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.brokers and not self.topics

    def to_dict(self) -> dict[str, Any]:
        return {"brokers": sorted(self.brokers), "topics": {t: list(v) for t, v in sorted(self.topics.items())}}

    @classmethod
    def from_dict(cls, data: Any) -> ThrottleRecord:
        if not isinstance(data, dict):
            raise ModelError(f"execution record: field 'throttles' must be an object, got {data!r}")
        brokers = data.get("brokers", [])
        if not isinstance(brokers, list) or not all(isinstance(b, int) for b in brokers):
            raise ModelError(f"execution record: field 'throttles.brokers' must be a list of ids, got {brokers!r}")
        topics: dict[str, tuple[str | None, str | None]] = {}
        for name, pair in dict(data.get("topics", {})).items():
            if not isinstance(pair, list) or len(pair) != 2:
                raise ModelError(f"execution record: field 'throttles.topics.{name}' must be [leader, follower]")
            topics[str(name)] = (pair[0], pair[1])
        return cls(brokers=list(brokers), topics=topics)


@dataclass
class ExecutionRecord:
    """Everything needed to continue an execution in another process."""

    plan_id: str
    state: ExecutionState
    tasks: list[TaskState]
    throttles: ThrottleRecord = field(default_factory=ThrottleRecord)
    # Why each dead task was given up, keyed by "topic-partition".
    dead_reasons: dict[str, str] = field(default_factory=dict)
    # Why the execution failed (offline partitions, ...), empty otherwise.
    reason: str = ""
    started_at: float = 0.0
    updated_at: float = 0.0
    # Who is running it (pid, host, bootstrap servers): lets `kafka-balancer stop` act on its own.
    context: dict[str, str] = field(default_factory=dict)
    # Moves submitted and not yet finished: (topic, partition, bytes to copy), so they can be
    # cancelled without the plan, and a move that finished while no executor ran still counts.
    in_flight: list[tuple[str, int, float]] = field(default_factory=list)
    # Bytes copied by moves that completed (in this and earlier runs).
    bytes_done: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": RECORD_VERSION,
            "planId": self.plan_id,
            "state": self.state.value,
            "tasks": encode_states(self.tasks),
            "throttles": self.throttles.to_dict(),
            "deadReasons": dict(sorted(self.dead_reasons.items())),
            "reason": self.reason,
            "startedAt": self.started_at,
            "updatedAt": self.updated_at,
            "context": dict(self.context),
            "inFlight": [[t, p, b] for t, p, b in self.in_flight],
            "bytesDone": self.bytes_done,
        }

    @classmethod
    def from_dict(cls, data: Any, plan: ReassignmentPlan | None = None) -> ExecutionRecord:
        """Parse a saved record; with ``plan``, check the task string covers exactly its partitions."""
        if not isinstance(data, dict):
            raise ModelError(f"execution record: must be an object, got {type(data).__name__}")
        if data.get("version") != RECORD_VERSION:
            raise ModelError(f"execution record: field 'version' must be {RECORD_VERSION}, got {data.get('version')!r}")
        try:
            state = ExecutionState(str(data.get("state")))
        except ValueError:
            raise ModelError(f"execution record: field 'state' is not a state, got {data.get('state')!r}") from None
        return cls(
            plan_id=str(data.get("planId")),
            state=state,
            tasks=decode_states(str(data.get("tasks", "")), None if plan is None else len(plan)),
            throttles=ThrottleRecord.from_dict(data.get("throttles", {})),
            dead_reasons={str(k): str(v) for k, v in dict(data.get("deadReasons", {})).items()},
            reason=str(data.get("reason", "")),
            started_at=float(data.get("startedAt", 0.0)),
            updated_at=float(data.get("updatedAt", 0.0)),
            context={str(k): str(v) for k, v in dict(data.get("context", {})).items()},
            in_flight=parse_in_flight(data.get("inFlight", [])),
            bytes_done=float(data.get("bytesDone", 0.0)),
        )


def parse_in_flight(data: Any) -> list[tuple[str, int, float]]:
    if not isinstance(data, list) or not all(
        isinstance(x, list)
        and len(x) == 3
        and isinstance(x[0], str)
        and isinstance(x[1], int)
        and isinstance(x[2], (int, float))
        for x in data
    ):
        raise ModelError(
            f"execution record: field 'inFlight' must be a list of [topic, partition, bytes], got {str(data)[:80]}"
        )
    return [(str(t), int(p), float(b)) for t, p, b in data]

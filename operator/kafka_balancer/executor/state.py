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
from kafka_balancer.model.limits import check_amount, check_int32, shown

RECORD_VERSION = 2  # 2: throttle entries we added (not whole lists), in-flight targets


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
MAX_TASKS = 1 << 24  # partitions one plan may move: far above any Kafka cluster's partition count


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


def _unpack(text: str) -> str:
    """The letters of a packed task string, refused when they would exceed ``MAX_TASKS``: a crafted
    record can compress gigabytes of letters into kilobytes."""
    try:
        inflate = zlib.decompressobj()
        letters = inflate.decompress(base64.b64decode(text[len(_PACKED) :], validate=True), MAX_TASKS + 1)
        if len(letters) > MAX_TASKS or inflate.unconsumed_tail:
            raise ModelError(f"execution record: field 'tasks' unpacks to more than {MAX_TASKS} tasks")
        if not inflate.eof:
            raise zlib.error("truncated")
        return letters.decode("ascii")
    except (ValueError, zlib.error):
        raise ModelError(f"execution record: field 'tasks' has a corrupt packed form, got {text[:40]!r}") from None


def decode_states(text: str, expected: int | None) -> list[TaskState]:
    if text.startswith(_PACKED):
        letters = _unpack(text)
        unknown = set(letters) - set(_BY_CODE)
        if unknown:
            raise ModelError(f"execution record: field 'tasks' has unknown state code {min(unknown)!r}")
        states = [_BY_CODE[code] for code in letters]
    else:
        if _RUN.sub("", text):
            raise ModelError(f"execution record: field 'tasks' is not a run-length state string, got {text[:40]!r}")
        total = 0
        for run in _RUN.finditer(text):
            total += int(run.group(2))
            if total > MAX_TASKS:
                raise ModelError(f"execution record: field 'tasks' covers more than {MAX_TASKS} tasks")
            if run.group(1) not in _BY_CODE:
                raise ModelError(f"execution record: field 'tasks' has unknown state code {run.group(1)!r}")
        states = [_BY_CODE[run.group(1)] for run in _RUN.finditer(text) for _ in range(int(run.group(2)))]
    if expected is not None and len(states) != expected:
        raise ModelError(f"execution record: field 'tasks' covers {len(states)} partitions, the plan has {expected}")
    return states


def plan_id(plan: ReassignmentPlan) -> str:
    """A stable id of the plan's content, so a resume never runs a record against another plan."""
    return hashlib.sha256(plan.dumps().encode()).hexdigest()[:16]


@dataclass
class ThrottleRecord:
    """The throttle configs this executor set, so that cleanup takes back exactly those and nothing else.

    ``brokers``: broker id -> the rate we set on it (brokers that had a rate of their own are never
    touched, so never listed; "" in records written before version 2: the rate is not known).
    ``topics``: topic -> throttled-replicas config -> the entries we added to that list (entries
    already listed are someone else's, never ours). ``created``: topic -> the lists that did not
    exist before we added to them (deleted once nothing but ours is left in them). ``retired``: topic ->
    list config -> entries we added to a list we created and took out again during the run. A broker
    answers DescribeConfigs from its own copy of the metadata, which may lag our last write by some
    milliseconds: a read may still show these, and they are ours, not someone else's.
    ``legacy_topics``: version-1 records: topic -> the original (leader, follower) values to restore.
    """

    brokers: dict[int, str] = field(default_factory=dict)
    topics: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    created: dict[str, list[str]] = field(default_factory=dict)
    retired: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    legacy_topics: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    # broker id -> the rate we set as its replica.alter.log.dirs.io.max.bytes.per.second (copies between
    # its log directories); as ``brokers``, never one that had its own.
    dir_brokers: dict[int, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.brokers and not self.topics and not self.legacy_topics and not self.dir_brokers

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokers": {str(b): rate for b, rate in sorted(self.brokers.items())},
            "topics": {t: {k: list(v) for k, v in sorted(c.items())} for t, c in sorted(self.topics.items())},
            "created": {t: sorted(keys) for t, keys in sorted(self.created.items()) if keys},
        }
        retired = {t: {k: sorted(v) for k, v in sorted(c.items()) if v} for t, c in sorted(self.retired.items())}
        if any(retired.values()):
            out["retired"] = {t: c for t, c in retired.items() if c}
        if self.legacy_topics:
            out["legacyTopics"] = {t: list(v) for t, v in sorted(self.legacy_topics.items())}
        if self.dir_brokers:
            out["dirBrokers"] = {str(b): rate for b, rate in sorted(self.dir_brokers.items())}
        return out

    @classmethod
    def from_dict(cls, data: Any, version: int = RECORD_VERSION) -> ThrottleRecord:
        if not isinstance(data, dict):
            raise ModelError(f"execution record: field 'throttles' must be an object, got {data!r}")
        if version == 1:
            return cls._from_version_1(data)
        brokers = _rates(data, "brokers")
        dir_brokers = _rates(data, "dirBrokers")
        topics = _entry_lists(data, "topics")
        retired = _entry_lists(data, "retired")
        created = _object(data, "created")
        if not all(isinstance(keys, list) and all(isinstance(k, str) for k in keys) for keys in created.values()):
            raise ModelError(
                f"{_RECORD}: field 'throttles.created' must map topics to config names, got {shown(created)}"
            )
        legacy = cls._legacy_topics(_object(data, "legacyTopics"))
        return cls(
            brokers=brokers,
            topics=topics,
            created=created,
            retired=retired,
            legacy_topics=legacy,
            dir_brokers=dir_brokers,
        )

    @classmethod
    def _from_version_1(cls, data: dict[str, Any]) -> ThrottleRecord:
        brokers = data.get("brokers", [])
        if not isinstance(brokers, list) or not all(isinstance(b, int) for b in brokers):
            raise ModelError(f"execution record: field 'throttles.brokers' must be a list of ids, got {brokers!r}")
        return cls(brokers=dict.fromkeys(brokers, ""), legacy_topics=cls._legacy_topics(_object(data, "topics")))

    @staticmethod
    def _legacy_topics(data: Any) -> dict[str, tuple[str | None, str | None]]:
        topics: dict[str, tuple[str | None, str | None]] = {}
        for name, pair in data.items():
            if not isinstance(pair, list) or len(pair) != 2 or not all(v is None or isinstance(v, str) for v in pair):
                raise ModelError(f"execution record: field 'throttles.topics.{name}' must be [leader, follower]")
            topics[str(name)] = (pair[0], pair[1])
        return topics


def _rates(data: dict[str, Any], name: str) -> dict[int, str]:
    rates = data.get(name, {})
    if not isinstance(rates, dict) or not all(str(b).isdigit() and isinstance(r, str) for b, r in rates.items()):
        raise ModelError(f"execution record: field 'throttles.{name}' must map broker ids to rates, got {rates!r}")
    return {int(b): r for b, r in rates.items()}


def _entry_lists(data: dict[str, Any], name: str) -> dict[str, dict[str, list[str]]]:
    """topic -> throttled-replicas config -> entries."""
    out: dict[str, dict[str, list[str]]] = {}
    for topic, configs in _object(data, name).items():
        if not isinstance(configs, dict) or not all(
            isinstance(v, list) and all(isinstance(e, str) for e in v) for v in configs.values()
        ):
            raise ModelError(f"execution record: field 'throttles.{name}.{topic}' must map configs to entry lists")
        out[str(topic)] = {str(k): list(v) for k, v in configs.items()}
    return out


def _object(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ModelError(f"{_RECORD}: field 'throttles.{name}' must be an object, got {shown(value)}")
    return value


@dataclass(frozen=True)
class InFlight:
    """A move submitted and not yet seen finished: what `stop` may cancel without the plan (only if
    Kafka still reports our ``target``: a reassignment to another target is someone else's)."""

    topic: str
    partition: int
    bytes: float
    original: tuple[int, ...] | None  # None (and index) in records written before version 2
    target: tuple[int, ...] | None
    index: int | None = None  # the task's position in the plan
    # Replicas we put in a named log directory: (broker, directory, the one it was in or None).
    dirs: tuple[tuple[int, str, str | None], ...] = ()

    def to_list(self) -> list[Any]:
        out = [self.topic, self.partition, self.bytes, _ids(self.original), _ids(self.target), self.index]
        if self.dirs:
            out.append([list(d) for d in self.dirs])
        return out


def _ids(replicas: tuple[int, ...] | None) -> list[int] | None:
    return None if replicas is None else list(replicas)


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
    # Moves submitted and not yet finished, so they can be cancelled without the plan, and a move that
    # finished while no executor ran still counts.
    in_flight: list[InFlight] = field(default_factory=list)
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
            "inFlight": [m.to_list() for m in self.in_flight],
            "bytesDone": self.bytes_done,
        }

    @classmethod
    def from_dict(cls, data: Any, plan: ReassignmentPlan | None = None) -> ExecutionRecord:
        """Parse a saved record; with ``plan``, check the task string covers exactly its partitions."""
        if not isinstance(data, dict):
            raise ModelError(f"execution record: must be an object, got {type(data).__name__}")
        version = data.get("version")
        if version not in (1, RECORD_VERSION):
            raise ModelError(f"execution record: field 'version' must be 1 or {RECORD_VERSION}, got {version!r}")
        try:
            state = ExecutionState(str(data.get("state")))
        except ValueError:
            raise ModelError(f"execution record: field 'state' is not a state, got {data.get('state')!r}") from None
        return cls(
            plan_id=_text(data, "planId", None),
            state=state,
            tasks=decode_states(_text(data, "tasks", ""), None if plan is None else len(plan)),
            throttles=ThrottleRecord.from_dict(data.get("throttles", {}), int(version)),
            dead_reasons=_texts(data, "deadReasons"),
            reason=_text(data, "reason", ""),
            started_at=_number(data, "startedAt"),
            updated_at=_number(data, "updatedAt"),
            context=_texts(data, "context"),
            in_flight=parse_in_flight(data.get("inFlight", [])),
            bytes_done=_number(data, "bytesDone"),
        )


_RECORD = "execution record"


def _text(data: dict[str, Any], name: str, default: str | None) -> str:
    value = data.get(name, default)
    if not isinstance(value, str):
        raise ModelError(f"{_RECORD}: field '{name}' must be a string, got {shown(value)}")
    return value


def _texts(data: dict[str, Any], name: str) -> dict[str, str]:
    value = data.get(name, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ModelError(f"{_RECORD}: field '{name}' must map names to strings, got {shown(value)}")
    return dict(value)


def _number(data: dict[str, Any], name: str) -> float:
    return check_amount(data.get(name, 0.0), _RECORD, name)


def parse_in_flight(data: Any) -> list[InFlight]:
    """``[topic, partition, bytes, original, target, index]`` entries (``[topic, partition, bytes]`` in
    version 1)."""
    if not isinstance(data, list) or not all(_in_flight_entry(x) for x in data):
        raise ModelError(
            "execution record: field 'inFlight' must be a list of [topic, partition, bytes, original, target, "
            f"index] (and [[broker, directory, previous directory], ...] where log directories move), got {shown(data)}"
        )
    out = []
    for x in data:
        check_int32(x[1], f"{_RECORD}: inFlight {shown(x[0])}", "partition")
        check_amount(x[2], f"{_RECORD}: inFlight {x[0]}-{x[1]}", "bytes")
        original, target, index = (x[3], x[4], x[5]) if len(x) >= 6 else (None, None, None)
        replicas = (None if original is None else tuple(original), None if target is None else tuple(target))
        dirs = tuple((int(b), str(path), was) for b, path, was in x[6]) if len(x) == 7 else ()
        out.append(InFlight(str(x[0]), int(x[1]), float(x[2]), *replicas, index, dirs))
    return out


def _dir_entry(d: Any) -> bool:
    """[broker, directory, the directory it was in or null]"""
    return (
        isinstance(d, list)
        and len(d) == 3
        and isinstance(d[0], int)
        and isinstance(d[1], str)
        and (d[2] is None or isinstance(d[2], str))
    )


def _in_flight_entry(x: Any) -> bool:
    if not isinstance(x, list) or len(x) not in (3, 6, 7):
        return False
    if len(x) == 7 and not (isinstance(x[6], list) and all(_dir_entry(d) for d in x[6])):
        return False
    if not (isinstance(x[0], str) and isinstance(x[1], int) and isinstance(x[2], (int, float))):
        return False
    if len(x) >= 6 and not (x[5] is None or isinstance(x[5], int)):
        return False
    return all(r is None or (isinstance(r, list) and all(isinstance(b, int) for b in r)) for r in x[3:5])

"""A plan in Kafka's reassignment JSON: what the planner writes and the executor applies.

``{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [3, 1, 2]}]}`` is
accepted as is by ``kafka-reassign-partitions.sh --execute``. A partition whose preferred leader
changes is listed with its replicas reordered (the first is the preferred leader), so applying the
JSON and then a preferred-leader election realises the whole plan.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafka_balancer.model.documents import loads_json
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.limits import INT32_MAX, check_int32, check_topic_name, shown

PLAN_VERSION = 1


@dataclass(frozen=True, order=True)
class PartitionTarget:
    topic: str
    partition: int
    replicas: tuple[int, ...]

    @property
    def preferred_leader(self) -> int:
        return self.replicas[0]


@dataclass(frozen=True)
class ReassignmentPlan:
    partitions: tuple[PartitionTarget, ...]

    @classmethod
    def of(cls, targets: Iterable[PartitionTarget]) -> ReassignmentPlan:
        ordered = tuple(sorted(targets, key=lambda t: (t.topic, t.partition)))
        seen: set[tuple[str, int]] = set()
        for target in ordered:
            key = (target.topic, target.partition)
            if key in seen:
                raise ModelError(f"plan: partition {target.topic}-{target.partition} is listed twice")
            seen.add(key)
        return cls(ordered)

    def __len__(self) -> int:
        return len(self.partitions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": PLAN_VERSION,
            "partitions": [
                {"topic": t.topic, "partition": t.partition, "replicas": list(t.replicas)} for t in self.partitions
            ],
        }

    def dumps(self, *, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Any) -> ReassignmentPlan:
        if not isinstance(data, dict):
            raise ModelError(f"plan: must be an object, got {type(data).__name__}")
        extra = sorted(set(data) - {"version", "partitions"})
        if extra:
            raise ModelError(f"plan: unknown field {shown(extra[0])}")
        if data.get("version") != PLAN_VERSION:
            raise ModelError(f"plan: field 'version' must be {PLAN_VERSION}, got {shown(data.get('version'))}")
        rows = data.get("partitions")
        if not isinstance(rows, list):
            raise ModelError(f"plan: field 'partitions' must be a list, got {shown(rows)}")
        targets = []
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise ModelError(f"plan: partitions[{i}] must be an object, got {shown(row)}")
            where = f"plan: partitions[{i}] ({shown(row.get('topic'))}-{shown(row.get('partition'))})"
            extra = sorted(set(row) - {"topic", "partition", "replicas", "log_dirs"})
            if extra:
                raise ModelError(f"{where}: unknown field {shown(extra[0])}")
            topic, partition, replicas = row.get("topic"), row.get("partition"), row.get("replicas")
            topic = check_topic_name(topic, where)
            partition = check_int32(partition, where, "partition")
            if (
                not isinstance(replicas, list)
                or not replicas
                or any(isinstance(b, bool) or not isinstance(b, int) or not 0 <= b <= INT32_MAX for b in replicas)
            ):
                raise ModelError(
                    f"{where}: field 'replicas' must be a non-empty list of broker ids in 0..{INT32_MAX}, "
                    f"got {shown(replicas)}"
                )
            if len(set(replicas)) != len(replicas):
                raise ModelError(f"{where}: field 'replicas' has a duplicate broker, got {shown(replicas)}")
            _check_log_dirs(row, where)
            targets.append(PartitionTarget(topic, partition, tuple(replicas)))
        return cls.of(targets)

    @classmethod
    def loads(cls, text: str | bytes) -> ReassignmentPlan:
        return cls.from_dict(loads_json(text, "plan"))


def _check_log_dirs(row: dict[str, Any], where: str) -> None:
    """``log_dirs`` as kafka-reassign-partitions.sh writes it: one entry per replica. Only ``any`` is
    accepted: the executor moves replicas between brokers and never between a broker's log directories,
    so a named directory would be silently ignored."""
    if "log_dirs" not in row:
        return
    dirs, replicas = row["log_dirs"], row["replicas"]
    if not isinstance(dirs, list) or len(dirs) != len(replicas):
        raise ModelError(
            f"{where}: field 'log_dirs' must list one entry per replica ({len(replicas)}), got {shown(dirs)}"
        )
    named = [d for d in dirs if d != "any"]
    if named:
        raise ModelError(
            f"{where}: field 'log_dirs' names {shown(named[0])}; only \"any\" is accepted (execute moves replicas "
            "between brokers, not between a broker's log directories)"
        )

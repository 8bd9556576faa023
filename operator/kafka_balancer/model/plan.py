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

from kafka_balancer.model.errors import ModelError

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
            raise ModelError(f"plan: unknown field '{extra[0]}'")
        if data.get("version") != PLAN_VERSION:
            raise ModelError(f"plan: field 'version' must be {PLAN_VERSION}, got {data.get('version')!r}")
        rows = data.get("partitions")
        if not isinstance(rows, list):
            raise ModelError(f"plan: field 'partitions' must be a list, got {rows!r}")
        targets = []
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise ModelError(f"plan: partitions[{i}] must be an object, got {row!r}")
            where = f"plan: partitions[{i}] ({row.get('topic')!r}-{row.get('partition')!r})"
            extra = sorted(set(row) - {"topic", "partition", "replicas", "log_dirs"})
            if extra:
                raise ModelError(f"{where}: unknown field '{extra[0]}'")
            topic, partition, replicas = row.get("topic"), row.get("partition"), row.get("replicas")
            if not isinstance(topic, str) or not topic:
                raise ModelError(f"{where}: field 'topic' must be a non-empty string, got {topic!r}")
            if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
                raise ModelError(f"{where}: field 'partition' must be a non-negative integer, got {partition!r}")
            if (
                not isinstance(replicas, list)
                or not replicas
                or any(isinstance(b, bool) or not isinstance(b, int) or b < 0 for b in replicas)
            ):
                raise ModelError(f"{where}: field 'replicas' must be a non-empty list of broker ids, got {replicas!r}")
            if len(set(replicas)) != len(replicas):
                raise ModelError(f"{where}: field 'replicas' has a duplicate broker, got {replicas!r}")
            targets.append(PartitionTarget(topic, partition, tuple(replicas)))
        return cls.of(targets)

    @classmethod
    def loads(cls, text: str | bytes) -> ReassignmentPlan:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ModelError(f"plan: not valid JSON: {err}") from None
        return cls.from_dict(data)

"""A plan in Kafka's reassignment JSON: what the planner writes and the executor applies.

``{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [3, 1, 2]}]}`` is
accepted as is by ``kafka-reassign-partitions.sh --execute``. A partition whose preferred leader
changes is listed with its replicas reordered (the first is the preferred leader), so applying the
JSON and then a preferred-leader election realises the whole plan.

``log_dirs`` (JBOD), as kafka-reassign-partitions.sh takes it: one entry per replica, an absolute
path of that broker's ``log.dirs`` or ``"any"`` (the broker's choice). A named directory moves the
replica there: into it when the broker receives the replica, between the broker's directories when
it already holds it (the same replica set with another directory is a move of its own).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kafka_balancer.model.cluster import ClusterModel
from kafka_balancer.model.documents import loads_json
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.limits import INT32_MAX, check_int32, check_topic_name, shown

PLAN_VERSION = 1
ANY_LOG_DIR = "any"


@dataclass(frozen=True, order=True)
class PartitionTarget:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    # One per replica: an absolute path or ANY_LOG_DIR; None when the plan names no directory.
    log_dirs: tuple[str, ...] | None = None

    @property
    def preferred_leader(self) -> int:
        return self.replicas[0]

    @property
    def named_log_dirs(self) -> dict[int, str]:
        """broker id -> the log directory the plan puts its replica in, for the replicas that name one."""
        if self.log_dirs is None:
            return {}
        return {b: d for b, d in zip(self.replicas, self.log_dirs, strict=True) if d != ANY_LOG_DIR}


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
        return {"version": PLAN_VERSION, "partitions": [_row(t) for t in self.partitions]}

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
            dirs = _check_log_dirs(row, where)
            targets.append(PartitionTarget(topic, partition, tuple(replicas), dirs))
        return cls.of(targets)

    @classmethod
    def loads(cls, text: str | bytes) -> ReassignmentPlan:
        return cls.from_dict(loads_json(text, "plan"))


def _row(t: PartitionTarget) -> dict[str, Any]:
    """One partition's entry; ``log_dirs`` only where a directory is named (all ``any`` says nothing)."""
    row: dict[str, Any] = {"topic": t.topic, "partition": t.partition, "replicas": list(t.replicas)}
    if t.named_log_dirs and t.log_dirs is not None:
        row["log_dirs"] = list(t.log_dirs)
    return row


def _check_log_dirs(row: dict[str, Any], where: str) -> tuple[str, ...] | None:
    """``log_dirs`` as kafka-reassign-partitions.sh takes it: one entry per replica, each ``any`` or an
    absolute path (whether the broker has that directory is checked against the cluster, see
    executor.tasks). None when absent or all ``any``."""
    if "log_dirs" not in row:
        return None
    dirs, replicas = row["log_dirs"], row["replicas"]
    if not isinstance(dirs, list) or len(dirs) != len(replicas):
        raise ModelError(
            f"{where}: field 'log_dirs' must list one entry per replica ({len(replicas)}), got {shown(dirs)}"
        )
    for d in dirs:
        if not isinstance(d, str) or (d != ANY_LOG_DIR and not d.startswith("/")):
            raise ModelError(
                f"{where}: field 'log_dirs' entries must be \"{ANY_LOG_DIR}\" or an absolute path, got {shown(d)}"
            )
    return tuple(dirs) if any(d != ANY_LOG_DIR for d in dirs) else None


def check_log_dirs(plan: ReassignmentPlan, cluster: ClusterModel) -> None:
    """Every directory the plan names is one of its broker's log directories as the cluster reports
    them, and takes no new replica if cordoned (KIP-1066). Raises ModelError naming the partition,
    the field and the value; nothing is executed then. Partitions the cluster lacks are left to the
    caller (they are refused by name there)."""
    for i, target in enumerate(plan.partitions):
        named = target.named_log_dirs
        if not named:
            continue
        where = f"plan: partitions[{i}] ({target.topic}-{target.partition})"
        try:
            p = cluster.partition_index(target.topic, target.partition)
        except KeyError:
            continue
        for b, path in named.items():
            try:
                dirs = {d.path: d for d in cluster.log_dirs(cluster.broker_index(b))}
            except KeyError:
                dirs = {}
            if path not in dirs:
                known = (
                    f"its log directories are {sorted(dirs)}" if dirs else "its log directories are not known (down?)"
                )
                raise ModelError(f"{where}: field 'log_dirs' names {path!r} for broker {b}; {known}")
            if dirs[path].cordoned and cluster.replica_log_dir(p, b) != path:
                raise ModelError(
                    f"{where}: field 'log_dirs' names {path!r} for broker {b}, which is cordoned "
                    "(cordoned.log.dirs): it takes no new replica"
                )

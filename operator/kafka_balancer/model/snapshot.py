"""Convert between the cluster snapshot JSON (cluster-snapshot.schema.json, version 1) and the model.

Validation is hand-written rather than delegated to a JSON-schema library: a snapshot can hold
millions of replicas, and every error must name the broker or partition, the field and the value.
A test checks that this reader and the JSON schema agree.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from importlib import resources
from typing import Any

from kafka_balancer.model.build import ClusterBuilder
from kafka_balancer.model.cluster import CPU, DISK, NETWORK_IN, NETWORK_OUT, ClusterModel, LogDir
from kafka_balancer.model.documents import loads_json
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.limits import check_amount, shown

SNAPSHOT_VERSION = 1

_TOP_FIELDS = {"version", "cluster", "capturedAt", "brokers", "partitions", "topics"}
_BROKER_FIELDS = {"id", "rack", "alive", "capacity", "logDirs", "followerFetchLastTieredOffset"}
_LOG_DIR_FIELDS = {"path", "cordoned", "totalBytes", "usableBytes"}
_CAPACITY_FIELDS = {
    "diskBytes": "disk_bytes",
    "networkInBytesPerSec": "network_in_bytes_per_sec",
    "networkOutBytesPerSec": "network_out_bytes_per_sec",
    "cpuCores": "cpu_cores",
}
_PARTITION_NUMBERS = {
    "sizeBytes": "size_bytes",
    "bytesInPerSec": "bytes_in_per_sec",
    "bytesOutPerSec": "bytes_out_per_sec",
    "messagesInPerSec": "messages_in_per_sec",
    "cpuCoresLeader": "cpu_cores_leader",
    "remoteBytes": "remote_bytes",
    "untieredBytes": "untiered_bytes",
}
_PARTITION_FIELDS = {"topic", "partition", "replicas", "leader", "isr", "logDirs"} | set(_PARTITION_NUMBERS)
_TOPIC_FIELDS = {"name", "minInsyncReplicas", "uncleanLeaderElection"}


def schema() -> dict[str, Any]:
    """The JSON schema this module implements: the project's own snapshot contract."""
    text = resources.files("kafka_balancer").joinpath("schemas/cluster-snapshot.schema.json")
    loaded: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return loaded


def _unknown(where: str, item: Mapping[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(item) - allowed)
    if extra:
        raise ModelError(f"{where}: unknown field '{extra[0]}' (allowed: {', '.join(sorted(allowed))})")


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ModelError(f"{where}: must be an object, got {type(value).__name__} {shown(value)}")
    return value


def _int_list(value: Any, where: str, field: str) -> list[int]:
    if not isinstance(value, list) or any(isinstance(b, bool) or not isinstance(b, int) or b < 0 for b in value):
        raise ModelError(f"{where}: field '{field}' must be a list of broker ids, got {shown(value)}")
    return value


def _log_dirs(value: Any, where: str) -> list[LogDir]:
    if not isinstance(value, list):
        raise ModelError(f"{where}: field 'logDirs' must be a list, got {value!r}")
    out = []
    for k, raw in enumerate(value):
        entry = _object(raw, f"{where}.logDirs[{k}]")
        _unknown(f"{where}.logDirs[{k}]", entry, _LOG_DIR_FIELDS)
        path, cordoned = entry.get("path"), entry.get("cordoned", False)
        if not isinstance(path, str) or not path:
            raise ModelError(f"{where}.logDirs[{k}]: field 'path' must be a non-empty string, got {path!r}")
        if not isinstance(cordoned, bool):
            raise ModelError(f"{where}.logDirs[{k}]: field 'cordoned' must be true or false, got {cordoned!r}")
        total, usable = (
            None if entry.get(name) is None else check_amount(entry[name], f"{where}.logDirs[{k}]", name)
            for name in ("totalBytes", "usableBytes")
        )
        out.append(LogDir(path, cordoned, total, usable))
    return out


def parse_snapshot(data: Any) -> ClusterModel:
    """Validate a decoded snapshot document and build the model from it."""
    doc = _object(data, "snapshot")
    _unknown("snapshot", doc, _TOP_FIELDS)
    if doc.get("version") != SNAPSHOT_VERSION:
        raise ModelError(f"snapshot: field 'version' must be {SNAPSHOT_VERSION}, got {shown(doc.get('version'))}")
    for name in ("cluster", "capturedAt"):
        if name in doc and not isinstance(doc[name], str):
            raise ModelError(f"snapshot: field '{name}' must be a string, got {shown(doc[name])}")
    builder = ClusterBuilder(cluster_name=doc.get("cluster"), captured_at=doc.get("capturedAt"))

    brokers = doc.get("brokers")
    if not isinstance(brokers, list) or not brokers:
        raise ModelError(f"snapshot: field 'brokers' must be a non-empty list, got {shown(brokers)}")
    for i, raw in enumerate(brokers):
        broker = _object(raw, f"brokers[{i}]")
        where = f"brokers[{i}] (id {shown(broker.get('id'))})"
        _unknown(where, broker, _BROKER_FIELDS)
        if "id" not in broker:
            raise ModelError(f"brokers[{i}]: missing required field 'id'")
        rack = broker.get("rack")
        if rack is not None and not isinstance(rack, str):
            raise ModelError(f"{where}: field 'rack' must be a string or null, got {shown(rack)}")
        alive = broker.get("alive", True)
        if not isinstance(alive, bool):
            raise ModelError(f"{where}: field 'alive' must be true or false, got {shown(alive)}")
        fetch_last_tiered = broker.get("followerFetchLastTieredOffset", False)
        if not isinstance(fetch_last_tiered, bool):
            raise ModelError(
                f"{where}: field 'followerFetchLastTieredOffset' must be true or false, got {shown(fetch_last_tiered)}"
            )
        capacity = _object(broker.get("capacity", {}), f"{where}.capacity")
        _unknown(f"{where}.capacity", capacity, set(_CAPACITY_FIELDS))
        builder.add_broker(
            broker["id"],
            rack=rack,
            alive=alive,
            log_dirs=_log_dirs(broker.get("logDirs", []), where),
            fetch_last_tiered=fetch_last_tiered,
            **{_CAPACITY_FIELDS[k]: v for k, v in capacity.items()},
        )

    topics = doc.get("topics", [])
    if not isinstance(topics, list):
        raise ModelError(f"snapshot: field 'topics' must be a list, got {shown(topics)}")
    for i, raw in enumerate(topics):
        topic = _object(raw, f"topics[{i}]")
        where = f"topics[{i}] ({shown(topic.get('name'))})"
        _unknown(where, topic, _TOPIC_FIELDS)
        unclean = topic.get("uncleanLeaderElection")
        if unclean is not None and not isinstance(unclean, bool):
            raise ModelError(f"{where}: field 'uncleanLeaderElection' must be true or false, got {shown(unclean)}")
        topic_name = topic.get("name")
        if not isinstance(topic_name, str) or not topic_name:
            raise ModelError(f"{where}: field 'name' must be a non-empty string, got {shown(topic_name)}")
        builder.set_topic(
            topic_name,
            min_insync_replicas=topic.get("minInsyncReplicas"),
            unclean_leader_election=unclean,
        )

    partitions = doc.get("partitions")
    if not isinstance(partitions, list):
        raise ModelError(f"snapshot: field 'partitions' must be a list, got {shown(partitions)}")
    for i, raw in enumerate(partitions):
        part = _object(raw, f"partitions[{i}]")
        where = f"partitions[{i}] ({shown(part.get('topic'))}-{shown(part.get('partition'))})"
        if not _PARTITION_FIELDS.issuperset(part):
            _unknown(where, part, _PARTITION_FIELDS)
        for required in ("topic", "partition", "replicas"):
            if required not in part:
                raise ModelError(f"{where}: missing required field '{required}'")
        replicas = _int_list(part["replicas"], where, "replicas")
        isr = part.get("isr")
        if isr is not None:
            isr = _int_list(isr, where, "isr")
        leader = part.get("leader")
        if leader is not None and (isinstance(leader, bool) or not isinstance(leader, int)):
            raise ModelError(f"{where}: field 'leader' must be a broker id or null, got {shown(leader)}")
        numbers = {_PARTITION_NUMBERS[k]: part[k] for k in _PARTITION_NUMBERS if k in part}
        dirs = part.get("logDirs")
        if dirs is not None and not isinstance(dirs, list):
            raise ModelError(f"{where}: field 'logDirs' must be a list of paths (or null), got {shown(dirs)}")
        builder.add_partition(
            part["topic"],
            part["partition"],
            replicas,
            leader=leader,
            leader_given="leader" in part,
            isr=isr,
            log_dirs=dirs,
            **numbers,
        )
    return builder.build()


def loads_snapshot(text: str | bytes) -> ClusterModel:
    return parse_snapshot(loads_json(text, "snapshot"))


def _number(value: float) -> float | int:
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _log_dir(d: LogDir) -> dict[str, Any]:
    out: dict[str, Any] = {"path": d.path, "cordoned": d.cordoned}
    if d.total_bytes is not None:
        out["totalBytes"] = _number(d.total_bytes)
    if d.usable_bytes is not None:
        out["usableBytes"] = _number(d.usable_bytes)
    return out


def snapshot_to_dict(model: ClusterModel) -> dict[str, Any]:
    """The snapshot document for a model; ``parse_snapshot`` of it gives an equal model."""
    brokers: list[dict[str, Any]] = []
    names = (
        (DISK, "diskBytes"),
        (NETWORK_IN, "networkInBytesPerSec"),
        (NETWORK_OUT, "networkOutBytesPerSec"),
        (CPU, "cpuCores"),
    )
    for b in range(model.num_brokers):
        entry: dict[str, Any] = {"id": int(model.broker_ids[b]), "rack": model.broker_racks[b]}
        entry["alive"] = bool(model.broker_alive[b])
        capacity = {
            name: _number(float(model.capacity[b, col]))
            for col, name in names
            if not math.isnan(model.capacity[b, col])
        }
        if capacity:
            entry["capacity"] = capacity
        if model.log_dirs(b):
            entry["logDirs"] = [_log_dir(d) for d in model.log_dirs(b)]
        if model.broker_fetch_last_tiered is not None and model.broker_fetch_last_tiered[b]:
            entry["followerFetchLastTieredOffset"] = True
        brokers.append(entry)

    ids = model.broker_ids.tolist()
    replicas = model.replicas.tolist()
    isr_mask = model.isr_mask.tolist()
    leaders = model.leader.tolist()
    sizes, ins, outs = model.size_bytes.tolist(), model.bytes_in.tolist(), model.bytes_out.tolist()
    msgs, cpus = model.messages_in.tolist(), model.cpu_leader.tolist()
    remote = None if model.remote_bytes is None else model.remote_bytes.tolist()
    untiered = None if model.untiered_bytes is None else model.untiered_bytes.tolist()
    partitions: list[dict[str, Any]] = []
    for p, (t, pid) in enumerate(zip(model.partition_topic.tolist(), model.partition_id.tolist(), strict=True)):
        row = replicas[p]
        reps = [ids[b] for b in row if b >= 0]
        entry = {
            "topic": model.topics[t],
            "partition": pid,
            "replicas": reps,
            "leader": ids[leaders[p]] if leaders[p] >= 0 else None,
            "isr": [ids[b] for b, m in zip(row, isr_mask[p], strict=True) if b >= 0 and m],
            "sizeBytes": _number(sizes[p]),
            "bytesInPerSec": _number(ins[p]),
            "bytesOutPerSec": _number(outs[p]),
            "messagesInPerSec": _number(msgs[p]),
        }
        if not math.isnan(cpus[p]):
            entry["cpuCoresLeader"] = _number(cpus[p])
        if model.replica_dir is not None and (model.replica_dir[p] >= 0).any():
            entry["logDirs"] = list(model.replica_log_dirs(p))
        if remote is not None and untiered is not None and (remote[p] or untiered[p] != sizes[p]):
            entry["remoteBytes"] = _number(remote[p])
            entry["untieredBytes"] = _number(untiered[p])
        partitions.append(entry)

    topics: list[dict[str, Any]] = []
    for settings in model.topic_settings():
        if settings.min_insync_replicas is None and settings.unclean_leader_election is None:
            continue
        topic: dict[str, Any] = {"name": settings.name}
        if settings.min_insync_replicas is not None:
            topic["minInsyncReplicas"] = settings.min_insync_replicas
        if settings.unclean_leader_election is not None:
            topic["uncleanLeaderElection"] = settings.unclean_leader_election
        topics.append(topic)

    doc: dict[str, Any] = {"version": SNAPSHOT_VERSION}
    if model.cluster_name is not None:
        doc["cluster"] = model.cluster_name
    if model.captured_at is not None:
        doc["capturedAt"] = model.captured_at
    doc["brokers"] = brokers
    doc["partitions"] = partitions
    if topics:
        doc["topics"] = topics
    return doc


def dumps_snapshot(model: ClusterModel, *, indent: int | None = None) -> str:
    return json.dumps(snapshot_to_dict(model), indent=indent)


def models_equal(a: ClusterModel, b: ClusterModel) -> bool:
    """Same brokers, topics, placement, ISR, leaders and loads (name and timestamp ignored)."""
    da, db = snapshot_to_dict(a), snapshot_to_dict(b)
    for doc in (da, db):
        doc.pop("cluster", None)
        doc.pop("capturedAt", None)
    return da == db

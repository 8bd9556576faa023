"""Handlers for cluster metadata, topics and configs: Metadata, DescribeCluster, FindCoordinator,
CreateTopics, DeleteTopics, DescribeConfigs, IncrementalAlterConfigs. Called with the state lock held.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import Any

from kafka.protocol.admin.cluster import DescribeClusterResponse
from kafka.protocol.admin.configs import DescribeConfigsResponse, IncrementalAlterConfigsResponse
from kafka.protocol.admin.topics import CreateTopicsResponse, DeleteTopicsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataResponse

from kafka_balancer.kafka.errors import error_code
from kafka_balancer.kafka.port import (
    CORDONED_LOG_DIRS,
    FOLLOWER_THROTTLE_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLE_RATE,
    LEADER_THROTTLED_REPLICAS,
    LOG_DIR_THROTTLE_RATE,
    LOG_DIRS,
    MIN_INSYNC_REPLICAS,
    UNCLEAN_LEADER_ELECTION,
    config_list,
)
from kafka_balancer.sandbox.protocol import Call
from kafka_balancer.sandbox.state import NO_LEADER, ClusterState, TopicState

TOPIC, BROKER = 2, 4
# DescribeConfigs config_source values.
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER, STATIC_BROKER, DEFAULT = 1, 2, 3, 4, 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

TOPIC_DEFAULTS = {
    MIN_INSYNC_REPLICAS: "1",
    UNCLEAN_LEADER_ELECTION: "false",
    LEADER_THROTTLED_REPLICAS: "",
    FOLLOWER_THROTTLED_REPLICAS: "",
    "retention.ms": "604800000",
    "cleanup.policy": "delete",
}
BROKER_DYNAMIC = {LEADER_THROTTLE_RATE, FOLLOWER_THROTTLE_RATE, LOG_DIR_THROTTLE_RATE}
# Broker configs that are also the default of a topic config of the same name: a cluster-wide
# default set on the broker resource "" is then every topic's effective value, unless the topic sets it.
BROKER_DEFAULTS = {MIN_INSYNC_REPLICAS: "1", UNCLEAN_LEADER_ELECTION: "false"}
# Metadata versions whose all-topics responses are spliced from per-topic encodings (both
# clients use v12); other versions are encoded whole.
SPLICED_METADATA_VERSIONS = (11, 12)


# ----- metadata ---------------------------------------------------------------------------------
def _md_topic(state: ClusterState, topic: TopicState) -> Any:
    alive = {b for b, info in state.brokers.items() if info.alive}
    parts = [
        MetadataResponse.MetadataResponseTopic.MetadataResponsePartition(
            error_code=error_code("LEADER_NOT_AVAILABLE") if p.leader == NO_LEADER else 0,
            partition_index=p.index,
            leader_id=p.leader,
            leader_epoch=p.leader_epoch,
            replica_nodes=list(p.replicas),
            isr_nodes=list(p.isr),
            offline_replicas=[b for b in p.replicas if b not in alive],
        )
        for p in topic.partitions
    ]
    return MetadataResponse.MetadataResponseTopic(
        error_code=0,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=False,
        partitions=parts,
        authorized_operations=None,
    )


def _md_brokers(state: ClusterState, host: str) -> list[Any]:
    return [
        MetadataResponse.MetadataResponseBroker(node_id=b.id, host=host, port=b.port, rack=b.rack)
        for b in sorted(state.brokers.values(), key=lambda b: b.id)
        if b.alive
    ]


def _encoded_topic(state: ClusterState, topic: TopicState, version: int) -> bytes:
    per_version = state.encoded_topics.setdefault(topic.name, {})
    hit = per_version.get(version)
    if hit is None:
        # The nested class's struct encodes an array: one element behind a count of 1 (uvarint 2).
        array = MetadataResponse.MetadataResponseTopic._struct.encode(
            [_md_topic(state, topic)], version=version, compact=True, tagged=True
        )
        hit = per_version[version] = bytes(array)[1:]
    return hit


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _metadata_all_topics(call: Call) -> bytes:
    """All topics, spliced from per-topic encodings (v11/v12: the topic array is the last field
    before the empty tagged-field section, so the response is head + count + topics + b"\x00")."""
    state = call.state
    shell = MetadataResponse(
        version=call.version,
        throttle_time_ms=0,
        brokers=_md_brokers(state, call.host),
        cluster_id=state.cluster_id,
        controller_id=state.controller_id,
        topics=[],
        authorized_operations=None,
        error_code=0,
    )
    empty = bytes(shell.encode(version=call.version))
    assert empty.endswith(b"\x01\x00"), "unexpected Metadata layout"
    topics = sorted(state.topics.values(), key=lambda t: t.name)
    chunks = [_encoded_topic(state, t, call.version) for t in topics]
    return b"".join([empty[:-2], _uvarint(len(chunks) + 1), *chunks, b"\x00"])


def metadata(call: Call) -> Any:
    state, req = call.state, call.body
    all_topics = req.topics is None or (call.version == 0 and not req.topics)
    key = ("metadata", call.version)
    if all_topics:
        hit = state.cached(key)
        if hit is not None:
            return hit
        if call.version in SPLICED_METADATA_VERSIONS:
            state.cache[key] = encoded = _metadata_all_topics(call)
            return encoded
        topics = [_md_topic(state, t) for t in sorted(state.topics.values(), key=lambda t: t.name)]
    else:
        topics = []
        for wanted in req.topics:
            topic = state.topics.get(wanted.name) if wanted.name is not None else None
            if topic is None:
                topics.append(
                    MetadataResponse.MetadataResponseTopic(
                        error_code=error_code("UNKNOWN_TOPIC_OR_PARTITION"),
                        name=wanted.name,
                        topic_id=wanted.topic_id,
                        is_internal=False,
                        partitions=[],
                        authorized_operations=None,
                    )
                )
            else:
                topics.append(_md_topic(state, topic))
    response = MetadataResponse(
        version=call.version,
        throttle_time_ms=0,
        brokers=_md_brokers(state, call.host),
        cluster_id=state.cluster_id,
        controller_id=state.controller_id,
        topics=topics,
        authorized_operations=None,
        error_code=0,
    )
    if all_topics:
        encoded = bytes(response.encode(version=call.version))
        state.cache[key] = encoded
        return encoded
    return response


def describe_cluster(call: Call) -> Any:
    live = sorted((b for b in call.state.brokers.values() if b.alive), key=lambda b: b.id)
    return describe_cluster_response(call, [(b.id, call.host, b.port, b.rack) for b in live])


def describe_cluster_response(call: Call, brokers: Sequence[tuple[int, str, int, str | None]]) -> Any:
    """A DescribeCluster answer listing ``brokers`` as (id, host, port, rack), none fenced."""
    return DescribeClusterResponse(
        version=call.version,
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        endpoint_type=1,
        cluster_id=call.state.cluster_id,
        controller_id=call.state.controller_id,
        brokers=[
            DescribeClusterResponse.DescribeClusterBroker(
                broker_id=broker_id, host=host, port=port, rack=rack, is_fenced=False
            )
            for broker_id, host, port, rack in brokers
        ],
        authorized_operations=None,
    )


def coordinator_for(state: ClusterState, key: str) -> int:
    """The broker coordinating a group: a stable hash over live brokers, like __consumer_offsets."""
    alive = state.alive_ids()
    if not alive:
        return -1
    return alive[zlib.crc32(key.encode()) % len(alive)]


def find_coordinator(call: Call) -> Any:
    state, req = call.state, call.body
    keys = list(req.coordinator_keys) if call.version >= 4 else [req.key]
    found = []
    for key in keys:
        node = coordinator_for(state, key)
        port = state.brokers[node].port if node >= 0 else -1
        err = 0 if node >= 0 else error_code("COORDINATOR_NOT_AVAILABLE")
        found.append((key, node, port, err))
    if call.version >= 4:
        return FindCoordinatorResponse(
            version=call.version,
            throttle_time_ms=0,
            coordinators=[
                FindCoordinatorResponse.Coordinator(
                    key=k, node_id=n, host=call.host, port=p, error_code=e, error_message=None
                )
                for k, n, p, e in found
            ],
        )
    _, node, port, err = found[0]
    return FindCoordinatorResponse(
        version=call.version,
        throttle_time_ms=0,
        error_code=err,
        error_message=None,
        node_id=node,
        host=call.host,
        port=port,
    )


# ----- topics -----------------------------------------------------------------------------------
def _spread(state: ClusterState, name: str, partitions: int, rf: int) -> list[list[int]]:
    # Like Kafka's placement, onto live brokers that have a log directory left uncordoned (KIP-1066).
    alive = sorted(b.id for b in state.brokers.values() if b.takes_new_replicas)
    start = zlib.crc32(name.encode()) % len(alive)
    return [[alive[(start + p + k) % len(alive)] for k in range(rf)] for p in range(partitions)]


def create_topics(call: Call) -> Any:
    state, req = call.state, call.body
    results = []
    for t in req.topics:
        err, message, assignment = _plan_topic(state, call.broker_id, t)
        if err == 0 and not req.validate_only:
            configs = {c.name: c.value for c in t.configs if c.value is not None}
            state.add_topic(t.name, assignment, configs)
        topic = state.topics.get(t.name)
        results.append(
            CreateTopicsResponse.CreatableTopicResult(
                name=t.name,
                topic_id=topic.topic_id if topic is not None and err == 0 else None,
                error_code=err,
                error_message=message,
                num_partitions=len(assignment) if err == 0 else -1,
                replication_factor=len(assignment[0]) if err == 0 and assignment else -1,
                configs=None,
            )
        )
    return CreateTopicsResponse(version=call.version, throttle_time_ms=0, topics=results)


def _plan_topic(state: ClusterState, broker_id: int, t: Any) -> tuple[int, str | None, list[list[int]]]:
    if broker_id != state.controller_id:
        return error_code("NOT_CONTROLLER"), None, []
    if t.name in state.topics:
        return error_code("TOPIC_ALREADY_EXISTS"), f"Topic '{t.name}' already exists.", []
    if t.assignments:
        assignment = [list(a.broker_ids) for a in sorted(t.assignments, key=lambda a: a.partition_index)]
        for a in assignment:
            if not a or len(set(a)) != len(a) or any(b not in state.brokers for b in a):
                return error_code("INVALID_REPLICA_ASSIGNMENT"), f"invalid replica assignment {a}", []
        return 0, None, assignment
    partitions = t.num_partitions if t.num_partitions > 0 else 1
    rf = t.replication_factor if t.replication_factor > 0 else min(3, len(state.alive_ids()))
    if rf > len(state.alive_ids()):
        message = f"Replication factor: {rf} larger than available brokers: {len(state.alive_ids())}."
        return error_code("INVALID_REPLICATION_FACTOR"), message, []
    return 0, None, _spread(state, t.name, partitions, rf)


def delete_topics(call: Call) -> Any:
    state, req = call.state, call.body
    results = []
    for name in req.topic_names:
        if call.broker_id != state.controller_id:
            err = error_code("NOT_CONTROLLER")
        elif name not in state.topics:
            err = error_code("UNKNOWN_TOPIC_OR_PARTITION")
        else:
            state.delete_topic(name)
            err = 0
        results.append(DeleteTopicsResponse.DeletableTopicResult(name=name, error_code=err, error_message=None))
    return DeleteTopicsResponse(version=call.version, throttle_time_ms=0, responses=results)


# ----- configs ----------------------------------------------------------------------------------
def _config_entries(state: ClusterState, rtype: int, name: str) -> dict[str, tuple[str, int]] | None:
    """A resource's configs with their value and source, as DescribeConfigs reports them."""
    defaults = {k: (v, DEFAULT) for k, v in BROKER_DEFAULTS.items()}
    defaults.update({k: (v, DYNAMIC_DEFAULT_BROKER) for k, v in state.broker_defaults.items()})
    if rtype == TOPIC:
        topic = state.topics.get(name)
        if topic is None:
            return None
        entries = {k: (v, DEFAULT) for k, v in TOPIC_DEFAULTS.items()}
        entries.update({k: v for k, v in defaults.items() if k in TOPIC_DEFAULTS})
        entries.update({k: (v, DYNAMIC_TOPIC) for k, v in topic.configs.items()})
        return entries
    if rtype == BROKER and name == "":
        return {k: (v, DYNAMIC_DEFAULT_BROKER) for k, v in state.broker_defaults.items()}
    if rtype == BROKER:
        if not name.isdigit() or int(name) not in state.brokers:
            return None
        broker = state.brokers[int(name)]
        entries = dict(defaults)
        entries["broker.id"] = (str(broker.id), STATIC_BROKER)
        entries[LOG_DIRS] = (",".join(broker.log_dirs), STATIC_BROKER)
        if state.features.cordons:
            entries[CORDONED_LOG_DIRS] = ("", DEFAULT)
        if broker.rack is not None:
            entries["broker.rack"] = (broker.rack, STATIC_BROKER)
        entries.update({k: (v, DYNAMIC_BROKER) for k, v in broker.configs.items()})
        return entries
    return None


def describe_configs(call: Call) -> Any:
    state, req = call.state, call.body
    results = []
    for res in req.resources:
        entries = _config_entries(state, res.resource_type, res.resource_name)
        configs = []
        if entries is not None:
            wanted = res.configuration_keys
            for name, (value, source) in sorted(entries.items()):
                if wanted is not None and name not in wanted:
                    continue
                configs.append(
                    DescribeConfigsResponse.DescribeConfigsResult.DescribeConfigsResourceResult(
                        name=name,
                        value=value,
                        read_only=source == STATIC_BROKER,
                        config_source=source,
                        is_default=source == DEFAULT,
                        is_sensitive=False,
                        synonyms=[],
                        config_type=0,
                        documentation=None,
                    )
                )
        missing = "UNKNOWN_TOPIC_OR_PARTITION" if res.resource_type == TOPIC else "INVALID_REQUEST"
        results.append(
            DescribeConfigsResponse.DescribeConfigsResult(
                error_code=0 if entries is not None else error_code(missing),
                error_message=None if entries is not None else f"unknown resource {res.resource_name!r}",
                resource_type=res.resource_type,
                resource_name=res.resource_name,
                configs=configs,
            )
        )
    return DescribeConfigsResponse(version=call.version, throttle_time_ms=0, results=results)


LONG_MAX = 2**63 - 1


def _check_value(name: str, value: str | None) -> tuple[str, str] | None:
    """Validate the configs the balancer writes as Kafka 4.3 does: (error name, Kafka's message).

    A broker's LONG config that does not parse is INVALID_REQUEST, a topic's replica list that does
    not parse is INVALID_CONFIG (both as real brokers answer IncrementalAlterConfigs)."""
    if value is None:
        return None
    if name in BROKER_DYNAMIC:
        prefix = f"Invalid value {value} for configuration {name}"
        text = value.strip()
        if not re.fullmatch(r"[+-]?\d+", text) or not -LONG_MAX - 1 <= int(text) <= LONG_MAX:
            return "INVALID_REQUEST", f"{prefix}: Not a number of type LONG"
        if int(text) < 0:
            return "INVALID_REQUEST", f"{prefix}: Value must be at least 0"
    if name == MIN_INSYNC_REPLICAS and (not value.strip().isdigit() or int(value) < 1):
        return "INVALID_CONFIG", f"Invalid value {value} for configuration {name}: Value must be at least 1"
    if name in (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS) and value.strip() not in ("", "*"):
        for item in _list_items(value):
            p, _, b = item.partition(":")
            if not (p.isdigit() and b.isdigit()):
                return "INVALID_CONFIG", (
                    f"Invalid value [{value}] for configuration {name}: {name} must be the literal '*' or a list "
                    "of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
                )
    return None


def _check_cordons(name: str, value: str | None, log_dirs: list[str] | None) -> tuple[str, str] | None:
    """``cordoned.log.dirs`` of a broker lists entries of its log.dirs, or is ``*`` (Kafka 4.3's check and message)."""
    if name != CORDONED_LOG_DIRS or value is None or log_dirs is None:
        return None
    missing = [d for d in config_list(value) if d != "*" and d not in log_dirs]
    if missing:
        return "INVALID_REQUEST", (
            "requirement failed: All entries in cordoned.log.dirs must be present in log.dirs or log.dir. "
            f"Missing entries : {','.join(missing)}"
        )
    return None


def _list_items(value: str) -> list[str]:
    """A LIST config's entries as Kafka parses them: split on commas, whitespace around each dropped."""
    return re.split(r"\s*,\s*", value.strip()) if value.strip() else []


def _stored(name: str, value: str) -> str:
    """The value Kafka stores for a config: a replica list re-joined from its trimmed entries."""
    if name in (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS):
        return ",".join(_list_items(value))
    return value


def incremental_alter_configs(call: Call) -> Any:
    state, req = call.state, call.body
    responses = []
    for res in req.resources:
        err, message = 0, None
        target: dict[str, str] | None = None
        if res.resource_type == TOPIC and res.resource_name in state.topics:
            target = state.topics[res.resource_name].configs
        elif res.resource_type == BROKER and res.resource_name == "":
            target = state.broker_defaults
        elif res.resource_type == BROKER and res.resource_name.isdigit() and int(res.resource_name) in state.brokers:
            target = state.brokers[int(res.resource_name)].configs
        if target is None:
            err = error_code("UNKNOWN_TOPIC_OR_PARTITION" if res.resource_type == TOPIC else "INVALID_REQUEST")
            message = f"unknown resource {res.resource_name!r}"
        else:
            updated = dict(target)
            broker = (
                state.brokers.get(int(res.resource_name))
                if res.resource_type == BROKER and target is not state.broker_defaults
                else None
            )
            log_dirs = broker.log_dirs if broker is not None else None
            for c in res.configs:
                problem = _check_value(c.name, c.value) or _check_cordons(c.name, c.value, log_dirs)
                if problem is not None:
                    err, message = error_code(problem[0]), problem[1]
                    break
                if c.config_operation == SET:
                    updated[c.name] = _stored(c.name, c.value or "")
                elif (
                    c.config_operation == DELETE
                    and target is state.broker_defaults
                    and c.name == MIN_INSYNC_REPLICAS
                    and state.features.eligible_leader_replicas
                ):
                    # Kafka 4.x clusters elect from eligible leader replicas (KIP-966, on by default),
                    # which need a cluster-level min.insync.replicas: it can be set, not deleted.
                    message = "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
                    err = error_code("INVALID_CONFIG")
                    break
                elif c.config_operation == DELETE:
                    updated.pop(c.name, None)
                elif c.config_operation in (APPEND, SUBTRACT):
                    items = [i for i in updated.get(c.name, "").split(",") if i]
                    change = [i for i in (c.value or "").split(",") if i]
                    if c.config_operation == APPEND:
                        items += [i for i in change if i not in items]
                    else:
                        items = [i for i in items if i not in change]
                    updated[c.name] = ",".join(items)
                else:
                    err, message = error_code("INVALID_REQUEST"), f"unknown operation {c.config_operation}"
                    break
            if err == 0 and not req.validate_only:
                target.clear()
                target.update(updated)
        responses.append(
            IncrementalAlterConfigsResponse.AlterConfigsResourceResponse(
                error_code=err,
                error_message=message,
                resource_type=res.resource_type,
                resource_name=res.resource_name,
            )
        )
    return IncrementalAlterConfigsResponse(version=call.version, throttle_time_ms=0, responses=responses)

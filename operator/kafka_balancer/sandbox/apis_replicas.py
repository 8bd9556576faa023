"""Handlers for replicas and logs: AlterPartitionReassignments, ListPartitionReassignments,
ElectLeaders, DescribeLogDirs, AlterReplicaLogDirs, ListOffsets. Called with the state lock held.
"""

from __future__ import annotations

import math
from typing import Any

from kafka.protocol.admin.cluster import AlterReplicaLogDirsResponse, DescribeLogDirsResponse
from kafka.protocol.admin.topics import (
    AlterPartitionReassignmentsResponse,
    DescribeTopicPartitionsResponse,
    ElectLeadersResponse,
    ListPartitionReassignmentsResponse,
)
from kafka.protocol.consumer.offsets import ListOffsetsResponse

from kafka_balancer.kafka.errors import error_code
from kafka_balancer.sandbox import log_dirs, operations
from kafka_balancer.sandbox.log_dirs import future_offset_lag
from kafka_balancer.sandbox.protocol import Call
from kafka_balancer.sandbox.state import ClusterState, PartitionState

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


def _not_controller(call: Call) -> bool:
    return call.broker_id != call.state.controller_id


def alter_reassignments(call: Call) -> Any:
    state, req = call.state, call.body
    top = error_code("NOT_CONTROLLER") if _not_controller(call) else 0
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            err, message = 0, None
            if top == 0:
                part = state.partition(t.name, p.partition_index)
                if part is None:
                    err = error_code("UNKNOWN_TOPIC_OR_PARTITION")
                else:
                    name = operations.reassign(state, part, p.replicas)
                    if name is not None:
                        err = error_code(name)
                        message = f"{name}: replicas {p.replicas} for {t.name}-{p.partition_index}"
            parts.append(
                AlterPartitionReassignmentsResponse.ReassignableTopicResponse.ReassignablePartitionResponse(
                    partition_index=p.partition_index, error_code=err, error_message=message
                )
            )
        topics.append(AlterPartitionReassignmentsResponse.ReassignableTopicResponse(name=t.name, partitions=parts))
    return AlterPartitionReassignmentsResponse(
        version=call.version,
        throttle_time_ms=0,
        allow_replication_factor_change=True,
        error_code=top,
        error_message=None,
        responses=topics if top == 0 else [],
    )


def list_reassignments(call: Call) -> Any:
    state, req = call.state, call.body
    if _not_controller(call):
        return ListPartitionReassignmentsResponse(
            version=call.version, throttle_time_ms=0, error_code=error_code("NOT_CONTROLLER"), topics=[]
        )
    if req.topics is None:
        chosen = sorted(state.reassigning.values(), key=lambda p: (p.topic, p.index))
    else:
        chosen = []
        for t in req.topics:
            for i in t.partition_indexes:
                part = state.partition(t.name, i)
                if part is not None and part.reassignment is not None:
                    chosen.append(part)
    by_topic: dict[str, list[Any]] = {}
    for part in chosen:
        r = part.reassignment
        assert r is not None
        by_topic.setdefault(part.topic, []).append(
            ListPartitionReassignmentsResponse.OngoingTopicReassignment.OngoingPartitionReassignment(
                partition_index=part.index,
                replicas=list(part.replicas),
                adding_replicas=list(r.adding),
                removing_replicas=list(r.removing),
            )
        )
    return ListPartitionReassignmentsResponse(
        version=call.version,
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        topics=[
            ListPartitionReassignmentsResponse.OngoingTopicReassignment(name=n, partitions=ps)
            for n, ps in by_topic.items()
        ],
    )


def elect_leaders(call: Call) -> Any:
    state, req = call.state, call.body
    election_type = req.election_type if call.version >= 1 else operations.PREFERRED
    not_controller = _not_controller(call)
    wanted: list[tuple[str, list[int]]]
    if req.topic_partitions is None:
        wanted = [(t.name, [p.index for p in t.partitions]) for t in state.topics.values()]
    else:
        wanted = [(t.topic, list(t.partitions)) for t in req.topic_partitions]
    results = []
    for topic, indexes in wanted:
        outcome = []
        for i in indexes:
            if not_controller:
                name: str | None = "NOT_CONTROLLER"
            else:
                part = state.partition(topic, i)
                name = "UNKNOWN_TOPIC_OR_PARTITION" if part is None else operations.elect(state, part, election_type)
            outcome.append(
                ElectLeadersResponse.ReplicaElectionResult.PartitionResult(
                    partition_id=i,
                    error_code=0 if name is None else error_code(name),
                    error_message=None if name is None else f"{name} for {topic}-{i}",
                )
            )
        results.append(ElectLeadersResponse.ReplicaElectionResult(topic=topic, partition_result=outcome))
    return ElectLeadersResponse(
        version=call.version,
        throttle_time_ms=0,
        error_code=error_code("NOT_CONTROLLER") if not_controller and call.version >= 1 else 0,
        replica_election_results=results,
    )


def _hosted(state: ClusterState, broker_id: int, req: Any) -> list[PartitionState]:
    if req.topics is None:
        return [p for t in state.topics.values() for p in t.partitions if broker_id in p.replicas]
    out = []
    for t in req.topics:
        for i in t.partitions:
            part = state.partition(t.topic, i)
            if part is not None and broker_id in part.replicas:
                out.append(part)
    return out


def describe_log_dirs(call: Call) -> Any:
    """Each log directory of the broker the request was sent to, with the replicas in it (a replica
    being moved between its directories also as the future replica in the destination, with
    ``is_future_key``), the volume's total and usable bytes (v4+) and whether it is cordoned (v5)."""
    state = call.state
    broker = state.brokers[call.broker_id]
    result = DescribeLogDirsResponse.DescribeLogDirsResult
    partition_cls = result.DescribeLogDirsTopic.DescribeLogDirsPartition
    by_dir: dict[str, dict[str, list[Any]]] = {path: {} for path in broker.log_dirs}
    used: dict[str, float] = dict.fromkeys(broker.log_dirs, 0.0)
    size = state.size
    for part in _hosted(state, call.broker_id, call.body):
        lag = part.lagging.get(call.broker_id)
        full = float(size[part.row])
        replica = full if lag is None else lag
        path = part.dirs[call.broker_id]
        used[path] += replica
        by_dir[path].setdefault(part.topic, []).append(
            partition_cls(
                partition_index=part.index,
                partition_size=round(replica),
                offset_lag=0 if lag is None else max(0, int(_offset_lag(state, part, full - replica))),
                is_future_key=False,
            )
        )
        future = part.future.get(call.broker_id)
        if future is not None:
            used[future.path] += future.copied
            by_dir[future.path].setdefault(part.topic, []).append(
                partition_cls(
                    partition_index=part.index,
                    partition_size=round(future.copied),
                    offset_lag=future_offset_lag(state, part, call.broker_id),
                    is_future_key=True,
                )
            )
    cordoned = {d.path for d in broker.log_dir_entries() if d.cordoned}
    results = []
    for path, topics in by_dir.items():
        volume = broker.volume_bytes(path)
        total = -1 if math.isnan(volume) else int(volume)
        results.append(
            result(
                error_code=0,
                log_dir=path,
                topics=[result.DescribeLogDirsTopic(name=n, partitions=ps) for n, ps in topics.items()],
                total_bytes=total,
                usable_bytes=-1 if total < 0 else max(0, total - round(used[path])),
                is_cordoned=path in cordoned,
            )
        )
    return DescribeLogDirsResponse(version=call.version, throttle_time_ms=0, error_code=0, results=results)


def alter_replica_log_dirs(call: Call) -> Any:
    """AlterReplicaLogDirs: move (or, for a replica still to arrive, place) replicas of the broker the
    request was sent to into the named directories; per-replica errors as Kafka 4.3 gives them."""
    resp = AlterReplicaLogDirsResponse.AlterReplicaLogDirTopicResult
    results: dict[str, list[Any]] = {}
    for d in call.body.dirs:
        for t in d.topics:
            for index in t.partitions:
                name = log_dirs.alter_replica_log_dir(call.state, call.broker_id, t.name, index, d.path)
                results.setdefault(t.name, []).append(
                    resp.AlterReplicaLogDirPartitionResult(
                        partition_index=index, error_code=0 if name is None else error_code(name)
                    )
                )
    return AlterReplicaLogDirsResponse(
        version=call.version,
        throttle_time_ms=0,
        results=[resp(topic_name=n, partitions=ps) for n, ps in results.items()],
    )


def _offset_lag(state: ClusterState, part: PartitionState, missing_bytes: float) -> float:
    leo = float(state.log_end[part.row])
    full = float(state.size[part.row])
    return 0.0 if full <= 0 else leo * missing_bytes / full


def list_offsets(call: Call) -> Any:
    state, req = call.state, call.body
    topics = []
    for t in req.topics:
        parts = []
        for p in t.partitions:
            part = state.partition(t.name, p.partition_index)
            offset, err = -1, 0
            if part is None:
                err = error_code("UNKNOWN_TOPIC_OR_PARTITION")
            elif part.leader != call.broker_id:
                err = error_code("NOT_LEADER_OR_FOLLOWER")
            elif 0 <= getattr(p, "current_leader_epoch", -1) != part.leader_epoch:
                # The client's metadata names another leader epoch (KIP-320), as real brokers check.
                stale = p.current_leader_epoch < part.leader_epoch
                err = error_code("FENCED_LEADER_EPOCH" if stale else "UNKNOWN_LEADER_EPOCH")
            elif part.hw_epoch != part.leader_epoch:
                part.hw_epoch = part.leader_epoch  # the followers' next fetch tells the new leader
                err = error_code("OFFSET_NOT_AVAILABLE")
            elif p.timestamp == EARLIEST:
                offset = 0
            elif p.timestamp in (LATEST, MAX_TIMESTAMP):
                # The epsilon keeps 309.9999999 (float sums of rate * dt) from losing a message.
                offset = int(state.log_end[part.row] + 1e-6) - (1 if p.timestamp == MAX_TIMESTAMP else 0)
            else:
                # Record timestamps are not emulated: every record is as old as the log start.
                offset = 0 if int(state.log_end[part.row]) > 0 else -1
            parts.append(
                ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index,
                    error_code=err,
                    timestamp=-1,
                    offset=offset,
                    leader_epoch=part.leader_epoch if part is not None else -1,
                )
            )
        topics.append(ListOffsetsResponse.ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return ListOffsetsResponse(version=call.version, throttle_time_ms=0, topics=topics)


def describe_topic_partitions(call: Call) -> Any:
    """DescribeTopicPartitions (KIP-966): each partition with its ISR and eligible leader replicas,
    for the topics asked, at most ``response_partition_limit`` partitions, from ``cursor`` on."""
    state, req = call.state, call.body
    resp = DescribeTopicPartitionsResponse
    start = (req.cursor.topic_name, req.cursor.partition_index) if req.cursor is not None else ("", -1)
    topics, listed, next_cursor = [], 0, None
    for name in sorted({t.name for t in req.topics}):
        topic = state.topics.get(name)
        if topic is None:
            topics.append(resp.DescribeTopicPartitionsResponseTopic(
                error_code=error_code("UNKNOWN_TOPIC_OR_PARTITION"), name=name, topic_id=None, is_internal=False,
                partitions=[], topic_authorized_operations=-2147483648,
            ))  # fmt: skip
            continue
        parts = []
        for part in topic.partitions:
            if (name, part.index) < start:
                continue
            if listed == req.response_partition_limit:
                next_cursor = resp.Cursor(topic_name=name, partition_index=part.index)
                break
            listed += 1
            parts.append(resp.DescribeTopicPartitionsResponseTopic.DescribeTopicPartitionsResponsePartition(
                error_code=0, partition_index=part.index, leader_id=part.leader, leader_epoch=part.leader_epoch,
                replica_nodes=list(part.replicas), isr_nodes=list(part.isr), eligible_leader_replicas=list(part.elr),
                last_known_elr=[], offline_replicas=[b for b in part.replicas if not state.brokers[b].alive],
            ))  # fmt: skip
        topics.append(resp.DescribeTopicPartitionsResponseTopic(
            error_code=0, name=name, topic_id=topic.topic_id, is_internal=False, partitions=parts,
            topic_authorized_operations=-2147483648,
        ))  # fmt: skip
        if next_cursor is not None:
            break
    return resp(version=call.version, throttle_time_ms=0, topics=topics, next_cursor=next_cursor)

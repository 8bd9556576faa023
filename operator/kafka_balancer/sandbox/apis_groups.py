"""Handlers for consumer groups: ListGroups, DescribeGroups, OffsetFetch. Groups are seeded by
tests (``EmulatedCluster.seed_group``); each lives on the coordinator FindCoordinator names.
"""

from __future__ import annotations

import struct
from typing import Any

from kafka.protocol.admin.groups import DescribeGroupsResponse, ListGroupsResponse
from kafka.protocol.consumer.group import OffsetFetchResponse

from kafka_balancer.kafka.errors import error_code
from kafka_balancer.sandbox.apis_cluster import coordinator_for
from kafka_balancer.sandbox.protocol import Call
from kafka_balancer.sandbox.state import ClusterState, GroupSeed, MemberSeed


def _string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def encode_subscription(member: MemberSeed) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, user data (null)."""
    out = struct.pack(">hi", 0, len(member.subscription))
    out += b"".join(_string(t) for t in member.subscription)
    return out + struct.pack(">i", -1)


def encode_assignment(member: MemberSeed) -> bytes:
    """ConsumerProtocolAssignment v0: version, (topic, partitions) pairs, user data (null)."""
    out = struct.pack(">hi", 0, len(member.assignment))
    for topic, parts in sorted(member.assignment.items()):
        out += _string(topic) + struct.pack(">i", len(parts)) + b"".join(struct.pack(">i", p) for p in parts)
    return out + struct.pack(">i", -1)


def _mine(state: ClusterState, broker_id: int) -> list[GroupSeed]:
    return [g for g in state.groups.values() if coordinator_for(state, g.group_id) == broker_id]


def list_groups(call: Call) -> Any:
    req = call.body
    states = set(req.states_filter or []) if call.version >= 4 else set()
    groups = [g for g in _mine(call.state, call.broker_id) if not states or g.state in states]
    return ListGroupsResponse(
        version=call.version,
        throttle_time_ms=0,
        error_code=0,
        groups=[
            ListGroupsResponse.ListedGroup(
                group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state, group_type="classic"
            )
            for g in sorted(groups, key=lambda g: g.group_id)
        ],
    )


def describe_groups(call: Call) -> Any:
    state = call.state
    out = []
    for group_id in call.body.groups:
        group = state.groups.get(group_id)
        err = error_code("NOT_COORDINATOR") if coordinator_for(state, group_id) != call.broker_id else 0
        members = []
        if group is not None and err == 0:
            members = [
                DescribeGroupsResponse.DescribedGroup.DescribedGroupMember(
                    member_id=m.member_id,
                    group_instance_id=None,
                    client_id=m.client_id,
                    client_host=m.host,
                    member_metadata=encode_subscription(m),
                    member_assignment=encode_assignment(m),
                )
                for m in group.members
            ]
        out.append(
            DescribeGroupsResponse.DescribedGroup(
                error_code=err,
                error_message=None,
                group_id=group_id,
                group_state=group.state if group is not None else "Dead",
                protocol_type=group.protocol_type if group is not None else "",
                protocol_data=group.assignor if group is not None else "",
                members=members,
                authorized_operations=None,
            )
        )
    return DescribeGroupsResponse(version=call.version, throttle_time_ms=0, groups=out)


def _offsets(state: ClusterState, group_id: str, topics: Any) -> dict[str, list[tuple[int, int]]]:
    group = state.groups.get(group_id)
    committed = group.offsets if group is not None else {}
    result: dict[str, list[tuple[int, int]]] = {}
    if topics is None:
        for (topic, part), offset in sorted(committed.items()):
            result.setdefault(topic, []).append((part, offset))
        return result
    for t in topics:
        result[t.name] = [(i, committed.get((t.name, i), -1)) for i in t.partition_indexes]
    return result


def offset_fetch(call: Call) -> Any:
    state, req = call.state, call.body
    if call.version >= 8:
        groups = []
        for g in req.groups:
            mine = coordinator_for(state, g.group_id) == call.broker_id
            found = _offsets(state, g.group_id, g.topics) if mine else {}
            groups.append(
                OffsetFetchResponse.OffsetFetchResponseGroup(
                    group_id=g.group_id,
                    topics=[
                        OffsetFetchResponse.OffsetFetchResponseGroup.OffsetFetchResponseTopics(
                            name=topic,
                            partitions=[
                                OffsetFetchResponse.OffsetFetchResponseGroup.OffsetFetchResponseTopics.OffsetFetchResponsePartitions(
                                    partition_index=i,
                                    committed_offset=o,
                                    committed_leader_epoch=-1,
                                    metadata="",
                                    error_code=0,
                                )
                                for i, o in parts
                            ],
                        )
                        for topic, parts in found.items()
                    ],
                    error_code=0 if mine else error_code("NOT_COORDINATOR"),
                )
            )
        return OffsetFetchResponse(version=call.version, throttle_time_ms=0, groups=groups)
    mine = coordinator_for(state, req.group_id) == call.broker_id
    found = _offsets(state, req.group_id, req.topics) if mine else {}
    return OffsetFetchResponse(
        version=call.version,
        throttle_time_ms=0,
        error_code=0 if mine else error_code("NOT_COORDINATOR"),
        topics=[
            OffsetFetchResponse.OffsetFetchResponseTopic(
                name=topic,
                partitions=[
                    OffsetFetchResponse.OffsetFetchResponseTopic.OffsetFetchResponsePartition(
                        partition_index=i, committed_offset=o, committed_leader_epoch=-1, metadata="", error_code=0
                    )
                    for i, o in parts
                ],
            )
            for topic, parts in found.items()
        ],
    )

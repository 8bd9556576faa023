"""Consumer groups (members, assignments, committed offsets) and the log end offsets their lag is
measured against, through librdkafka; the members' subscriptions, which librdkafka does not expose,
through kafka-python.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin._listoffsets import OffsetSpec

from kafka_balancer.kafka.clients import Clients, from_confluent
from kafka_balancer.kafka.port import (
    ConsumerGroupInfo,
    ConsumerGroupMember,
    KafkaUnavailableError,
    TopicPartition,
)

# (group id, member id) -> the topics the member subscribes to.
Subscriptions = dict[tuple[str, str], tuple[str, ...]]


def _group_state(state: Any) -> str:
    """Kafka's spelling of a group state (``PreparingRebalance``), from librdkafka's enum name."""
    name = str(getattr(state, "name", state))
    return "".join(word.capitalize() for word in name.split("_"))


def _member(group_id: str, m: Any, subscriptions: Subscriptions) -> ConsumerGroupMember:
    """One member of librdkafka's group description."""
    assignment: dict[str, list[int]] = {}
    for tp in m.assignment.topic_partitions if m.assignment else []:
        assignment.setdefault(tp.topic, []).append(tp.partition)
    return ConsumerGroupMember(
        member_id=m.member_id,
        client_id=m.client_id,
        host=m.host,
        subscription=subscriptions.get((group_id, m.member_id), tuple(sorted(assignment))),
        assignment={t: tuple(sorted(ps)) for t, ps in sorted(assignment.items())},
    )


class Groups:
    """Reads log end offsets and consumer groups."""

    def __init__(self, clients: Clients):
        self._clients = clients

    def log_end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        wanted = {CkTopicPartition(tp.topic, tp.partition): latest for tp in partitions}
        if not wanted:
            return {}
        clients = self._clients

        def read() -> dict[TopicPartition, int]:
            out: dict[TopicPartition, int] = {}
            for ck, future in clients.admin.list_offsets(wanted).items():
                tp = TopicPartition(ck.topic, ck.partition)
                offset = int(clients.result(future, tp).offset)
                if offset < 0:
                    # librdkafka answers OFFSET_INVALID (-1001), not an error, when the connection
                    # to the leader drops mid-request: a lost answer, not an offset.
                    raise KafkaUnavailableError("_TRANSPORT", f"no log end offset (librdkafka gave {offset})", tp)
                out[tp] = offset
            return out

        return clients.read(functools.partial(clients.settled, read))

    def consumer_groups(self) -> list[ConsumerGroupInfo]:
        return self._clients.read(self._consumer_groups)

    def _consumer_groups(self) -> list[ConsumerGroupInfo]:
        clients = self._clients
        listing = clients.result(clients.admin.list_consumer_groups())
        if listing.errors:
            # A broker that did not answer may coordinate groups: a partial list would read as
            # groups gone and their committed offsets as consumption going backwards.
            raise from_confluent(listing.errors[0])
        group_ids = sorted(g.group_id for g in listing.valid)
        if not group_ids:
            return []
        described = {g: clients.result(f) for g, f in clients.admin.describe_consumer_groups(group_ids).items()}
        subscriptions = self._subscriptions(group_ids)
        committed = {group_id: self._committed(group_id) for group_id in group_ids}
        all_tps = {tp for offsets in committed.values() for tp in offsets}
        log_end = self.log_end_offsets(sorted(all_tps))
        groups = []
        for group_id in group_ids:
            d = described[group_id]
            offsets = committed.get(group_id, {})
            groups.append(
                ConsumerGroupInfo(
                    group_id=group_id,
                    state=_group_state(d.state),
                    protocol_type="consumer" if not d.is_simple_consumer_group else "",
                    assignor=d.partition_assignor or "",
                    members=tuple(_member(group_id, m, subscriptions) for m in d.members),
                    committed=offsets,
                    log_end={tp: log_end[tp] for tp in offsets if tp in log_end},
                )
            )
        return groups

    def _subscriptions(self, group_ids: Sequence[str]) -> Subscriptions:
        """Each member's subscribed topics: librdkafka does not expose them; kafka-python decodes them."""
        raw = self._clients.kp_call(lambda kp: kp.describe_groups(group_ids))
        subscriptions: Subscriptions = {}
        for group_id, info in raw.items():
            for m in info.get("members", []):
                meta = m.get("member_metadata")
                topics = getattr(meta, "topics", None) if not isinstance(meta, dict) else meta.get("topics")
                subscriptions[(group_id, m["member_id"])] = tuple(topics or ())
        return subscriptions

    def _committed(self, group_id: str) -> dict[TopicPartition, int]:
        """The group's committed offsets (partitions without one left out)."""
        committed: dict[TopicPartition, int] = {}
        request = [ConsumerGroupTopicPartitions(group_id)]
        for _, future in self._clients.admin.list_consumer_group_offsets(request).items():
            result = self._clients.result(future)
            committed = {
                TopicPartition(tp.topic, tp.partition): int(tp.offset)
                for tp in result.topic_partitions
                if tp.offset >= 0
            }
        return committed

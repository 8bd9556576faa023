"""What a cluster's metadata must say before anything of it is used: checked as soon as it is read.

A server that speaks Kafka can say anything its protocol can encode. librdkafka takes partition ids,
broker ids and replica lists as they come and builds requests from them: a partition numbered
2147483647 (a legal INT32) makes ``AdminClient.list_offsets`` write far outside its arrays and the
process dies with SIGSEGV. So every answer that describes the cluster (Metadata, DescribeCluster) is
checked against what Kafka itself guarantees before the adapter hands any of it back to a client or
to the model, and refused whole with :class:`~kafka_balancer.kafka.port.InvalidMetadataError`:

- broker ids are unique INT32s >= 0, each with a host (printable, at most 255 characters) and a TCP port;
- a topic's name is one Kafka allows, and its partitions are numbered 0..N-1;
- a partition's replicas are at least one, unique broker ids >= 0; its leader is -1 (none) or one of
  them; its ISR is unique and a subset of them;
- the cluster id, when given, is printable and at most 255 characters.

A replica on a broker the metadata does not list is normal (Kafka lists live brokers only) and allowed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Protocol

from kafka_balancer.kafka.port import InvalidMetadataError
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.limits import INT32_MAX, check_topic_name, shown

NAME_MAX: Final = 255  # a host, a rack or a cluster id: far above any real one


class BrokerSeen(Protocol):
    """A broker as a client library decoded it (librdkafka's BrokerMetadata or Node)."""

    @property
    def id(self) -> int: ...

    @property
    def host(self) -> str | None: ...

    @property
    def port(self) -> int: ...


class PartitionSeen(Protocol):
    """A partition as librdkafka decoded it (PartitionMetadata): checked where it is, not copied."""

    @property
    def leader(self) -> int: ...

    @property
    def replicas(self) -> Sequence[int]: ...

    @property
    def isrs(self) -> Sequence[int]: ...


def check_brokers(brokers: Iterable[BrokerSeen], where: str) -> None:
    """Unique broker ids in 0..INT32_MAX, a host and a port each (and a printable rack where given)."""
    seen: set[int] = set()
    for b in brokers:
        _check_id(b.id, f"{where}: broker", "id")
        if b.id in seen:
            raise InvalidMetadataError(f"{where}: broker id {b.id} is listed twice")
        seen.add(b.id)
        _check_text(b.host, f"{where}: broker {b.id}", "host", empty=False)
        rack = getattr(b, "rack", None)
        if rack is not None:
            _check_text(rack, f"{where}: broker {b.id}", "rack", empty=True)
        if not 0 < b.port <= 65535:
            raise InvalidMetadataError(f"{where}: broker {b.id}: field 'port' must be a TCP port, got {shown(b.port)}")


def check_cluster_id(cluster_id: str | None, where: str) -> None:
    if cluster_id is not None:
        _check_text(cluster_id, where, "clusterId", empty=True)


def check_topic(name: str, partitions: Mapping[int, PartitionSeen], where: str) -> None:
    """A legal name, partitions 0..N-1, and each partition's replicas, leader and ISR consistent."""
    try:
        check_topic_name(name, where)
    except ModelError as err:
        raise InvalidMetadataError(str(err)) from None
    indexes = sorted(partitions)
    if indexes != list(range(len(indexes))):
        shown_ids = indexes if len(indexes) <= 10 else [*indexes[:5], "...", *indexes[-3:]]
        raise InvalidMetadataError(
            f"{where}: topic {name!r}: partitions must be numbered 0..{len(indexes) - 1}, got {shown_ids}"
        )
    for index in indexes:
        _check_partition(partitions[index], f"{where}: partition {name}-{index}")


def _check_partition(p: PartitionSeen, where: str) -> None:
    if not p.replicas:
        raise InvalidMetadataError(f"{where}: field 'replicas' is empty")
    for b in p.replicas:
        _check_id(b, where, "replicas")
    if len(set(p.replicas)) != len(p.replicas):
        raise InvalidMetadataError(f"{where}: field 'replicas' lists a broker twice, got {shown(list(p.replicas))}")
    if p.leader != -1 and p.leader not in p.replicas:
        raise InvalidMetadataError(
            f"{where}: field 'leader' must be -1 or one of the replicas {shown(list(p.replicas))}, got {p.leader}"
        )
    if len(set(p.isrs)) != len(p.isrs) or not set(p.isrs) <= set(p.replicas):
        raise InvalidMetadataError(
            f"{where}: field 'isr' must be replicas {shown(list(p.replicas))} listed once each, "
            f"got {shown(list(p.isrs))}"
        )


def _check_id(value: int, where: str, field: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT32_MAX:
        raise InvalidMetadataError(
            f"{where}: field '{field}' must hold broker ids in 0..{INT32_MAX}, got {shown(value)}"
        )


def _check_text(value: object, where: str, field: str, *, empty: bool) -> None:
    if not isinstance(value, str) or (not value and not empty):
        raise InvalidMetadataError(f"{where}: field '{field}' must be a non-empty string, got {shown(value)}")
    if len(value) > NAME_MAX or not value.isprintable():
        raise InvalidMetadataError(
            f"{where}: field '{field}' must be printable and at most {NAME_MAX} characters, got {shown(value)}"
        )

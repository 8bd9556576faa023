"""The sample schema: what one sampling round records, as Arrow tables (documented in docs/samples.md).

Two datasets, so that other pipelines (a Kafka Connect sink, a Flink job) can write samples too:

* ``partitions``: one row per partition per sample; counters (offsets, sizes, Prometheus totals) are
  recorded as cumulative values and turned into rates by the Spark job, which is why a sample on its own
  never needs the previous one.
* ``brokers``: one row per broker per sample: liveness, rack, optional measured counters.

Counters are cumulative so that a missed sample widens one interval instead of losing data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

import pyarrow as pa

SCHEMA_VERSION: Final = 1

PARTITION_SCHEMA: Final = pa.schema(
    [
        pa.field("ts", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("leader", pa.int32()),  # null: offline
        pa.field("replicas", pa.list_(pa.int32()), nullable=False),
        pa.field("isr", pa.list_(pa.int32())),
        pa.field("replica_sizes", pa.list_(pa.int64())),  # aligned with replicas; null item = unknown
        pa.field("log_end_offset", pa.int64()),
        pa.field("consumer_offsets_sum", pa.int64()),  # sum of committed offsets over consumer groups
        pa.field("topic_bytes_in_total", pa.float64()),  # Prometheus counters of the topic (leaders)
        pa.field("topic_messages_in_total", pa.float64()),
        pa.field("topic_bytes_out_total", pa.float64()),
        pa.field("min_insync_replicas", pa.int32()),
        pa.field("unclean_leader_election", pa.bool_()),
    ]
)

BROKER_SCHEMA: Final = pa.schema(
    [
        pa.field("ts", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("broker_id", pa.int32(), nullable=False),
        pa.field("rack", pa.string()),
        pa.field("alive", pa.bool_(), nullable=False),
        pa.field("cpu_seconds_total", pa.float64()),  # process_cpu_seconds_total, when measured
        pa.field("bytes_in_total", pa.float64()),
        pa.field("bytes_out_total", pa.float64()),
    ]
)

# Columns a file must have (with these types) to be usable; the others may be absent (read as null).
REQUIRED_PARTITION_COLUMNS: Final = ("ts", "topic", "partition", "replicas")
REQUIRED_BROKER_COLUMNS: Final = ("ts", "broker_id", "alive")


class SampleSchemaError(ValueError):
    """A sample file or record does not follow the sample schema; the message names file, column and type."""


@dataclass(frozen=True)
class PartitionSample:
    topic: str
    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    replica_sizes: tuple[int | None, ...] = ()
    log_end_offset: int | None = None
    consumer_offsets_sum: int | None = None
    topic_bytes_in_total: float | None = None
    topic_messages_in_total: float | None = None
    topic_bytes_out_total: float | None = None
    min_insync_replicas: int | None = None
    unclean_leader_election: bool | None = None


@dataclass(frozen=True)
class BrokerSample:
    broker_id: int
    rack: str | None
    alive: bool
    cpu_seconds_total: float | None = None
    bytes_in_total: float | None = None
    bytes_out_total: float | None = None


@dataclass(frozen=True)
class Sample:
    """One sampling round of one cluster."""

    cluster: str
    ts: datetime
    partitions: Sequence[PartitionSample] = field(default_factory=tuple)
    brokers: Sequence[BrokerSample] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.ts.tzinfo is None:
            raise SampleSchemaError(f"sample: field 'ts' must be timezone-aware, got {self.ts!r}")
        if not self.cluster or "/" in self.cluster or "=" in self.cluster:
            raise SampleSchemaError(
                f"sample: field 'cluster' must be a non-empty name without '/' or '=', got {self.cluster!r}"
            )

    def partition_table(self) -> pa.Table:
        ts = self.ts.astimezone(UTC)
        rows = self.partitions
        columns = {
            "ts": [ts] * len(rows),
            "topic": [p.topic for p in rows],
            "partition": [p.partition for p in rows],
            "leader": [p.leader for p in rows],
            "replicas": [list(p.replicas) for p in rows],
            "isr": [list(p.isr) for p in rows],
            "replica_sizes": [list(p.replica_sizes) if p.replica_sizes else None for p in rows],
            "log_end_offset": [p.log_end_offset for p in rows],
            "consumer_offsets_sum": [p.consumer_offsets_sum for p in rows],
            "topic_bytes_in_total": [p.topic_bytes_in_total for p in rows],
            "topic_messages_in_total": [p.topic_messages_in_total for p in rows],
            "topic_bytes_out_total": [p.topic_bytes_out_total for p in rows],
            "min_insync_replicas": [p.min_insync_replicas for p in rows],
            "unclean_leader_election": [p.unclean_leader_election for p in rows],
        }
        return pa.table(columns, schema=PARTITION_SCHEMA)

    def broker_table(self) -> pa.Table:
        ts = self.ts.astimezone(UTC)
        rows = self.brokers
        columns = {
            "ts": [ts] * len(rows),
            "broker_id": [b.broker_id for b in rows],
            "rack": [b.rack for b in rows],
            "alive": [b.alive for b in rows],
            "cpu_seconds_total": [b.cpu_seconds_total for b in rows],
            "bytes_in_total": [b.bytes_in_total for b in rows],
            "bytes_out_total": [b.bytes_out_total for b in rows],
        }
        return pa.table(columns, schema=BROKER_SCHEMA)


def check_file_schema(found: pa.Schema, expected: pa.Schema, required: Sequence[str], where: str) -> None:
    """Raise :class:`SampleSchemaError` when ``found`` lacks a required column or has a wrong type."""
    for name in required:
        if name not in found.names:
            raise SampleSchemaError(f"{where}: missing required column '{name}' ({expected.field(name).type})")
    for column in expected:
        if column.name not in found.names:
            continue
        got = found.field(column.name).type
        if not _compatible(got, column.type):
            raise SampleSchemaError(f"{where}: column '{column.name}' must be {column.type}, got {got}")


def _compatible(got: pa.DataType, want: pa.DataType) -> bool:
    if got.equals(want):
        return True
    # Spark reads any timestamp unit; other writers often use microseconds or spell the zone differently.
    # Integer and float widths must match: Spark refuses to narrow a column while reading.
    if pa.types.is_timestamp(want):
        return bool(pa.types.is_timestamp(got))
    if pa.types.is_list(want):
        return bool(pa.types.is_list(got)) and _compatible(got.value_type, want.value_type)
    if pa.types.is_string(want):
        return bool(pa.types.is_string(got) or pa.types.is_large_string(got))
    return False

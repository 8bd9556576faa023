"""Tiered storage (KIP-405) as the admin API shows it: a partition's bytes in remote storage and the
part of its local log not yet tiered, from offsets and the leader's local log size.

Kafka reports the bytes of each local log (DescribeLogDirs) but not those in remote storage; ListOffsets
tells where each part begins (KIP-405, KIP-1005): the log start (earliest, remote included), the local
log start (earliest-local), the last offset copied to remote storage (latest-tiered, -1 when none) and
the log end. The local log's bytes per offset price the other parts, as exact as the records are even in
size. A new follower copies the leader's local log, or only what follows the last tiered offset where it
fetches from there (KIP-1023, ``follower.fetch.last.tiered.offset.enable``, Kafka 4.3+).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TieredOffsets:
    """ListOffsets of one partition: earliest, earliest-local, latest-tiered (-1: none) and latest."""

    start: int
    local_start: int
    tiered: int
    end: int


@dataclass(frozen=True)
class TieredBytes:
    remote: float  # in remote storage
    untiered: float  # of the local log, past the last tiered offset


def tiered_bytes(local_bytes: float, offsets: TieredOffsets) -> TieredBytes:
    """The remote and untiered bytes of a partition whose leader's local log holds ``local_bytes``."""
    local_records = offsets.end - offsets.local_start
    if local_records <= 0 or local_bytes <= 0:
        return TieredBytes(0.0, max(local_bytes, 0.0))
    per_offset = local_bytes / local_records
    next_untiered = offsets.tiered + 1 if offsets.tiered >= 0 else offsets.start
    remote = max(0, next_untiered - offsets.start) * per_offset
    untiered = max(0, offsets.end - max(next_untiered, offsets.local_start)) * per_offset
    return TieredBytes(remote, min(untiered, local_bytes))

"""Tiered storage priced from ListOffsets and the leader's local log (kafka_balancer.kafka.tiering)."""

from __future__ import annotations

import pytest
from kafka_balancer.kafka.tiering import TieredBytes, TieredOffsets, tiered_bytes


@pytest.mark.parametrize(
    ("local", "offsets", "expected"),
    [
        # 1,000 records of 1 KB: 0-799 in remote storage, the local log 600-999 (600-799 kept locally as well).
        (400_000, TieredOffsets(start=0, local_start=600, tiered=799, end=1000), TieredBytes(800_000, 200_000)),
        # Nothing tiered yet (latest-tiered -1): the whole local log is untiered.
        (400_000, TieredOffsets(start=0, local_start=0, tiered=-1, end=400), TieredBytes(0, 400_000)),
        # Everything local is tiered: a new follower from the last tiered offset copies nothing.
        (100_000, TieredOffsets(start=0, local_start=900, tiered=999, end=1000), TieredBytes(1_000_000, 0)),
        # Records deleted by retention from remote storage too: remote counts from the log start.
        (100_000, TieredOffsets(start=500, local_start=900, tiered=949, end=1000), TieredBytes(450_000, 50_000)),
        # An empty partition.
        (0, TieredOffsets(start=0, local_start=0, tiered=-1, end=0), TieredBytes(0, 0)),
    ],
)
def test_remote_and_untiered_bytes_from_offsets(local: float, offsets: TieredOffsets, expected: TieredBytes) -> None:
    found = tiered_bytes(local, offsets)
    assert (found.remote, found.untiered) == pytest.approx((expected.remote, expected.untiered))

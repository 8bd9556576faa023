"""What reached the emulator's controller (fixture ``submissions``): every AlterPartitionReassignments
entry it served, from any client (an executor, an operator process's worker, a test's own client).

The brokers' request handlers call ``operations.reassign`` through the module, so the fixture counts
there, per (topic, partition): ``moves`` submitted, ``cancels``, the ISR each partition had when a move
was submitted (``isr_at_submit``), and the most reassignments in flight on each broker right after each
entry (``max_in_flight``; the per-broker limit counts a move on the brokers it adds replicas to and takes
them from).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest
from kafka_balancer.sandbox import operations
from kafka_balancer.sandbox.state import ClusterState, PartitionState

TopicPartition = tuple[str, int]


@dataclass
class Submissions:
    moves: Counter[TopicPartition] = field(default_factory=Counter)
    cancels: Counter[TopicPartition] = field(default_factory=Counter)
    isr_at_submit: dict[TopicPartition, list[list[int]]] = field(default_factory=dict)
    max_in_flight: Counter[int] = field(default_factory=Counter)  # broker -> most reassignments at once

    @property
    def most_on_a_broker(self) -> int:
        return max(self.max_in_flight.values(), default=0)


@pytest.fixture
def submissions(monkeypatch: pytest.MonkeyPatch) -> Submissions:
    counts = Submissions()
    original = operations.reassign

    def counting(state: ClusterState, part: PartitionState, target: list[int] | None) -> str | None:
        key = (part.topic, part.index)
        if target is None:
            counts.cancels[key] += 1
        else:
            counts.moves[key] += 1
            counts.isr_at_submit.setdefault(key, []).append(list(part.isr))
        error = original(state, part, target)
        for broker, n in state.reassignments_per_broker().items():
            counts.max_in_flight[broker] = max(counts.max_in_flight[broker], n)
        return error

    monkeypatch.setattr(operations, "reassign", counting)
    return counts

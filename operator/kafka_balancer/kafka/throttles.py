"""Replication throttles (KIP-73) for a set of moves, set and removed through any KafkaPort.

Setting returns a :class:`ThrottleRecord` of exactly what this code changed: the broker rates it
set (with the value each broker had before) and the ``partition:broker`` entries it added to each
topic's throttled-replicas lists. Removal undoes only that, so a throttle an operator set by hand
(another broker's rate, another partition's entry) survives. The record is JSON-able so that an
executor can persist it and clean up after a crash.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_balancer.kafka.port import (
    FOLLOWER_THROTTLE_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLE_RATE,
    LEADER_THROTTLED_REPLICAS,
    KafkaPort,
    TopicPartition,
)

_RATES = (LEADER_THROTTLE_RATE, FOLLOWER_THROTTLE_RATE)
_LISTS = (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)


@dataclass(frozen=True)
class ThrottleRecord:
    """What :func:`set_throttles` changed. ``previous_rates[broker][config]`` is the value the
    broker had before (None = unset); ``added[topic][config]`` lists the entries we appended."""

    previous_rates: dict[int, dict[str, str | None]] = field(default_factory=dict)
    added: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "previousRates": {str(b): dict(v) for b, v in self.previous_rates.items()},
            "added": {t: {k: list(v) for k, v in c.items()} for t, c in self.added.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThrottleRecord:
        return cls(
            previous_rates={int(b): dict(v) for b, v in data.get("previousRates", {}).items()},
            added={t: {k: list(v) for k, v in c.items()} for t, c in data.get("added", {}).items()},
        )

    @property
    def empty(self) -> bool:
        return not self.previous_rates and not self.added


def _entries(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def throttle_entries(
    moves: Mapping[TopicPartition, tuple[Sequence[int], Sequence[int]]],
) -> dict[str, dict[str, list[str]]]:
    """The throttled-replicas entries for moves ``tp -> (current replicas, target replicas)``.

    As kafka-reassign-partitions does: the leader side lists every current replica (any may be
    the leader that serves the copy), the follower side lists the replicas being added."""
    out: dict[str, dict[str, list[str]]] = {}
    for tp, (current, target) in sorted(moves.items()):
        topic = out.setdefault(tp.topic, {LEADER_THROTTLED_REPLICAS: [], FOLLOWER_THROTTLED_REPLICAS: []})
        topic[LEADER_THROTTLED_REPLICAS] += [f"{tp.partition}:{b}" for b in current]
        topic[FOLLOWER_THROTTLED_REPLICAS] += [f"{tp.partition}:{b}" for b in target if b not in current]
    return out


def set_throttles(
    port: KafkaPort,
    rate_bytes_per_sec: int,
    moves: Mapping[TopicPartition, tuple[Sequence[int], Sequence[int]]],
) -> ThrottleRecord:
    """Throttle the replicas of ``moves`` and the brokers they involve to ``rate_bytes_per_sec``."""
    if isinstance(rate_bytes_per_sec, bool) or not isinstance(rate_bytes_per_sec, int) or rate_bytes_per_sec <= 0:
        raise ValueError(
            f"execution: field 'throttleBytesPerSec' must be a positive integer, got {rate_bytes_per_sec!r}"
        )
    wanted = throttle_entries(moves)
    brokers = sorted({b for current, target in moves.values() for b in (*current, *target)})
    before = port.broker_configs(brokers) if brokers else {}
    previous = {b: {k: before.get(b, {}).get(k) for k in _RATES} for b in brokers}
    current_topics = port.topic_configs(sorted(wanted)) if wanted else {}
    added: dict[str, dict[str, list[str]]] = {}
    topic_changes: dict[str, dict[str, str | None]] = {}
    for topic, configs in wanted.items():
        for name, entries in configs.items():
            existing = _entries(current_topics.get(topic, {}).get(name))
            if "*" in existing:
                continue  # already throttles every replica of the topic
            new = [e for e in dict.fromkeys(entries) if e not in existing]
            if new:
                added.setdefault(topic, {})[name] = new
                topic_changes.setdefault(topic, {})[name] = ",".join(existing + new)
    rate = str(rate_bytes_per_sec)
    record = ThrottleRecord(previous_rates=previous, added=added)
    # Topics first: a rate alone throttles nothing, so a failure in between leaves no half state
    # that slows unrelated traffic.
    if topic_changes:
        port.alter_topic_configs(topic_changes)
    if brokers:
        port.alter_broker_configs({b: dict.fromkeys(_RATES, rate) for b in brokers})
    return record


def remove_throttles(port: KafkaPort, record: ThrottleRecord) -> None:
    """Undo exactly what ``record`` says was set: restore broker rates, drop our list entries."""
    if record.previous_rates:
        port.alter_broker_configs({b: dict(prev) for b, prev in record.previous_rates.items()})
    if record.added:
        current = port.topic_configs(sorted(record.added))
        changes: dict[str, dict[str, str | None]] = {}
        for topic, configs in record.added.items():
            if topic not in current:
                continue  # the topic was deleted meanwhile
            for name, ours in configs.items():
                remaining = [e for e in _entries(current[topic].get(name)) if e not in ours]
                changes.setdefault(topic, {})[name] = ",".join(remaining) if remaining else None
        if changes:
            port.alter_topic_configs(changes)

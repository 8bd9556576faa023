"""Replication throttles (KIP-73) limited to the moves in flight, and always taken back.

Rates go on the brokers a plan involves; ``throttled.replicas`` lists only the replicas of
partitions being moved right now (source replicas as leader-throttled, added replicas as
follower-throttled), because a listed replica that is not moving would throttle ordinary
follower catch-up. Every change is recorded *before* it is made, so whoever reads the record
after a crash can undo exactly what this executor did; configs it found already set are never
overwritten or removed.

``kafka.throttles`` (set_throttles/remove_throttles) throttles a fixed set of moves in one go, as
kafka-reassign-partitions does; the executor's set of moves changes at every poll, and it must
not overwrite a broker rate someone else set even for the length of a run, hence this manager.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from kafka_balancer.executor.safety import alive_brokers
from kafka_balancer.executor.state import ThrottleRecord
from kafka_balancer.executor.tasks import Task
from kafka_balancer.kafka.port import (
    FOLLOWER_THROTTLE_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLE_RATE,
    LEADER_THROTTLED_REPLICAS,
    KafkaError,
    KafkaPort,
)

ALL_REPLICAS = "*"


def parse_replica_list(value: str | None) -> set[tuple[int, int]]:
    """``"0:1,0:2"`` -> {(0, 1), (0, 2)}; empty or unset -> empty. ``*`` is handled by callers."""
    out: set[tuple[int, int]] = set()
    for raw in (value or "").split(","):
        item = raw.strip()
        if not item or item == ALL_REPLICAS:
            continue
        partition, _, broker = item.partition(":")
        out.add((int(partition), int(broker)))
    return out


def format_replica_list(entries: Iterable[tuple[int, int]]) -> str:
    return ",".join(f"{p}:{b}" for p, b in sorted(set(entries)))


def _merged(original: str | None, ours: set[tuple[int, int]]) -> str | None:
    """The config value that keeps the original entries and adds ours; None means delete."""
    if original is not None and original.strip() == ALL_REPLICAS:
        return original  # every replica is already throttled: nothing to add
    entries = parse_replica_list(original) | ours
    return format_replica_list(entries) if entries else None


def _blank(value: str | None) -> str | None:
    return value if value else None


class ThrottleManager:
    def __init__(
        self,
        port: KafkaPort,
        rate: int | None,
        record: ThrottleRecord,
        save: Callable[[], None],
    ) -> None:
        self.port = port
        self.rate = rate
        self.record = record
        self._save = save
        # Topic -> (leader, follower) values last written, to skip writes that change nothing.
        self._applied: dict[str, tuple[str | None, str | None]] = {}

    @property
    def enabled(self) -> bool:
        return self.rate is not None

    def set_rates(self, brokers: Iterable[int]) -> None:
        """Put the rate on these brokers, except those that already had a rate we did not set."""
        if self.rate is None:
            return
        wanted = sorted(set(brokers))
        ours = set(self.record.brokers)
        fresh = [b for b in wanted if b not in ours]
        if fresh:
            # One broker per call: Kafka accepts a single BROKER resource per config request.
            configs = {b: self.port.broker_configs([b]).get(b, {}) for b in fresh}
            for b in fresh:
                existing = configs[b]
                if _blank(existing.get(LEADER_THROTTLE_RATE)) or _blank(existing.get(FOLLOWER_THROTTLE_RATE)):
                    continue  # someone else's throttle: left exactly as it is
                self.record.brokers.append(b)
            self._save()
        targets = [b for b in wanted if b in set(self.record.brokers)]
        value = str(self.rate)
        for b in targets:
            self.port.alter_broker_configs({b: {LEADER_THROTTLE_RATE: value, FOLLOWER_THROTTLE_RATE: value}})

    def update_replicas(self, in_flight: Sequence[Task]) -> None:
        """Make the topics' throttled.replicas list exactly the in-flight moves (plus originals)."""
        if self.rate is None:
            return
        leader: dict[str, set[tuple[int, int]]] = {}
        follower: dict[str, set[tuple[int, int]]] = {}
        for task in in_flight:
            topic, p = task.tp.topic, task.tp.partition
            leader.setdefault(topic, set()).update((p, b) for b in task.original)
            follower.setdefault(topic, set()).update((p, b) for b in task.adding)
        new_topics = sorted(t for t in leader if t not in self.record.topics)
        if new_topics:
            configs = self.port.topic_configs(new_topics)
            for topic in new_topics:
                found = configs.get(topic, {})
                self.record.topics[topic] = (
                    _blank(found.get(LEADER_THROTTLED_REPLICAS)),
                    _blank(found.get(FOLLOWER_THROTTLED_REPLICAS)),
                )
            self._save()  # recorded before the first write, so a crash can always undo it
        changes: dict[str, dict[str, str | None]] = {}
        finished: list[str] = []
        for topic, (orig_leader, orig_follower) in self.record.topics.items():
            if topic in leader:
                value = (_merged(orig_leader, leader[topic]), _merged(orig_follower, follower.get(topic, set())))
            else:
                value = (orig_leader, orig_follower)
                finished.append(topic)
            if self._applied.get(topic) != value:
                changes[topic] = {LEADER_THROTTLED_REPLICAS: value[0], FOLLOWER_THROTTLED_REPLICAS: value[1]}
                self._applied[topic] = value
        if changes:
            self.port.alter_topic_configs(changes)
        if finished:
            for topic in finished:
                del self.record.topics[topic]
                self._applied.pop(topic, None)
            self._save()

    def clear(self) -> list[str]:
        """Remove every throttle this executor set (also those recorded by a crashed run).

        Returns what could not be removed (e.g. a rate on a broker that is down); those stay in
        the record so that a later run or `kafka-balancer stop` removes them."""
        failures: list[str] = []
        alive: set[int] | None = None
        if self.record.brokers:
            # A metadata read first: it tells which brokers are up (a config request to a down
            # broker only times out), and it makes the client learn of brokers that came back
            # (librdkafka forgets a broker that left the metadata until its next refresh).
            try:
                cluster = self.port.read_cluster(with_sizes=False)
                alive = alive_brokers(cluster)
            except KafkaError:
                alive = None
        if self.record.topics:
            try:
                self.port.alter_topic_configs(
                    {
                        topic: {LEADER_THROTTLED_REPLICAS: leader, FOLLOWER_THROTTLED_REPLICAS: follower}
                        for topic, (leader, follower) in self.record.topics.items()
                    }
                )
                self.record.topics.clear()
            except KafkaError as err:
                failures.append(f"topics {sorted(self.record.topics)}: {err.name}")
        for b in list(self.record.brokers):
            if alive is not None and b not in alive:
                failures.append(f"broker {b}: offline")
                continue
            try:
                self.port.alter_broker_configs({b: {LEADER_THROTTLE_RATE: None, FOLLOWER_THROTTLE_RATE: None}})
                self.record.brokers.remove(b)
            except KafkaError as err:
                failures.append(f"broker {b}: {err.name}")
        self._applied.clear()
        self._save()
        return failures

"""Replication throttles (KIP-73) limited to the moves in flight, and always taken back.

Rates go on the brokers a plan involves, as they come up (and ``replica.alter.log.dirs.io.max.bytes.per.second``
on the brokers that copy replicas between their own log directories); ``throttled.replicas`` lists only the
replicas of partitions being moved right now (source replicas as leader-throttled, added replicas as
follower-throttled), because a listed replica that is not moving would throttle ordinary follower
catch-up. The lists are changed entry by entry (APPEND and SUBTRACT, KIP-339), never set whole from a
copy, so entries another person adds during a run stay; a rate or a list that is no longer the one
we wrote is left alone. Every change is recorded *before* it is made, so whoever reads the record
after a crash can undo exactly what this executor did.

``kafka.throttles`` (set_throttles/remove_throttles) throttles a fixed set of moves in one go, as
kafka-reassign-partitions does; the executor's set of moves changes at every poll, hence this manager.
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
    LOG_DIR_THROTTLE_RATE,
    MAX_CONFIG_VALUE_BYTES,
    ConfigValue,
    KafkaError,
    KafkaPort,
    KafkaUnavailableError,
    ListChange,
)

ALL_REPLICAS = "*"
# Our entries in one topic's throttled-replicas list take at most this many bytes: half of what a config
# value can hold (MAX_CONFIG_VALUE_BYTES), the other half left to entries an operator lists by hand. A move
# that would pass it waits for moves of its topic to finish (ListBudget).
LIST_BUDGET_BYTES = MAX_CONFIG_VALUE_BYTES // 2


def _entries(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def wanted_entries(in_flight: Sequence[Task]) -> dict[str, dict[str, set[str]]]:
    """topic -> list config -> the entries the moves in flight need (as kafka-reassign-partitions sets them)."""
    out: dict[str, dict[str, set[str]]] = {}
    for task in in_flight:
        if not task.adding:
            continue  # a move between one broker's directories: throttled by the broker's own rate
        topic, p = task.tp.topic, task.tp.partition
        lists = out.setdefault(topic, {LEADER_THROTTLED_REPLICAS: set(), FOLLOWER_THROTTLED_REPLICAS: set()})
        lists[LEADER_THROTTLED_REPLICAS].update(f"{p}:{b}" for b in task.original)
        lists[FOLLOWER_THROTTLED_REPLICAS].update(f"{p}:{b}" for b in task.adding)
    return out


def _entry_bytes(entries: Iterable[str]) -> int:
    return sum(len(e) + 1 for e in entries)  # each with its comma


class ListBudget:
    """The bytes the moves in flight take in each topic's throttled-replicas lists, and whether a move's
    entries still fit within LIST_BUDGET_BYTES (a topic with thousands of partitions moving at once would
    need a list Kafka cannot take)."""

    def __init__(self, in_flight: Sequence[Task]) -> None:
        self.used: dict[tuple[str, str], int] = {}
        for task in in_flight:
            self.add(task)

    def fits(self, task: Task) -> bool:
        need = wanted_entries([task]).get(task.tp.topic, {})
        return all(
            self.used.get((task.tp.topic, key), 0) + _entry_bytes(e) <= LIST_BUDGET_BYTES for key, e in need.items()
        )

    def add(self, task: Task) -> None:
        for key, entries in wanted_entries([task]).get(task.tp.topic, {}).items():
            self.used[(task.tp.topic, key)] = self.used.get((task.tp.topic, key), 0) + _entry_bytes(entries)


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
        self._foreign: set[int] = set()  # brokers found with a rate of their own: never touched
        self._foreign_dirs: set[int] = set()  # the same for the rate of copies between directories
        # What the last clear() could not remove because the broker or the controller did not answer
        # (a timeout): worth trying again, unlike a broker that is down or a refusal.
        self.unanswered: list[str] = []

    @property
    def enabled(self) -> bool:
        return self.rate is not None

    def set_rates(self, brokers: Iterable[int]) -> None:
        """Put the rate on these (live) brokers, once each, except those that have a rate we did not set.
        Called at every poll: a broker that was down when the run began gets its rate when it returns."""
        self._set(brokers, (LEADER_THROTTLE_RATE, FOLLOWER_THROTTLE_RATE), self.record.brokers, self._foreign)

    def set_dir_rates(self, brokers: Iterable[int]) -> None:
        """The same for copies between a broker's log directories (``replica.alter.log.dirs.io.max.bytes.per.second``),
        on the brokers that copy a replica from one of their directories to another."""
        self._set(brokers, (LOG_DIR_THROTTLE_RATE,), self.record.dir_brokers, self._foreign_dirs)

    def _set(self, brokers: Iterable[int], keys: tuple[str, ...], ours: dict[int, str], foreign: set[int]) -> None:
        if self.rate is None:
            return
        fresh = sorted(set(brokers) - set(ours) - foreign)
        if not fresh:
            return
        # One broker per call: Kafka accepts a single BROKER resource per config request.
        configs = {b: self.port.broker_configs([b]).get(b, {}) for b in fresh}
        value = str(self.rate)
        mine = []
        for b in fresh:
            if any(configs[b].get(k) for k in keys):
                foreign.add(b)  # someone else's throttle: left exactly as it is
            else:
                ours[b] = value
                mine.append(b)
        self._save()
        for b in mine:
            self.port.alter_broker_configs({b: dict.fromkeys(keys, value)})

    def update_replicas(self, in_flight: Sequence[Task]) -> None:
        """Add the entries the moves in flight need and take out ours that no move needs any more."""
        if self.rate is None:
            return
        wanted = wanted_entries(in_flight)
        adding = {
            topic: {
                key: entries - set(self.record.topics.get(topic, {}).get(key, [])) for key, entries in lists.items()
            }
            for topic, lists in wanted.items()
        }
        adding = {t: {k: e for k, e in lists.items() if e} for t, lists in adding.items()}
        adding = {t: lists for t, lists in adding.items() if lists}
        if adding:
            self._append(adding)
        removing: dict[str, dict[str, ConfigValue]] = {}
        for topic, lists in self.record.topics.items():
            for key, ours in lists.items():
                done = sorted(set(ours) - wanted.get(topic, {}).get(key, set()))
                if done:
                    removing.setdefault(topic, {})[key] = ListChange(subtract=tuple(done))
        if removing:
            self._alter_topics(removing)
            for topic, changes in removing.items():
                for key, change in changes.items():
                    assert isinstance(change, ListChange)
                    left = [e for e in self.record.topics[topic][key] if e not in change.subtract]
                    self.record.topics[topic][key] = left
                    if key in self.record.created.get(topic, []):
                        self._set_retired(topic, key, self._retired(topic, key) | set(change.subtract))
            self._save()

    def _retired(self, topic: str, key: str) -> set[str]:
        """Our former entries of a list we created: a read served from older metadata may still show them."""
        return set(self.record.retired.get(topic, {}).get(key, []))

    def _set_retired(self, topic: str, key: str, entries: set[str]) -> None:
        self.record.retired.setdefault(topic, {})[key] = sorted(entries)

    def _append(self, adding: dict[str, dict[str, set[str]]]) -> None:
        """Record, then APPEND, the entries not listed yet (those already listed are someone else's)."""
        changes: dict[str, dict[str, ConfigValue]] = {}
        configs = self._configs_of_all(sorted(adding))
        for topic, lists in sorted(adding.items()):
            found = configs.get(topic)
            if found is None:
                continue  # deleted: its moves end as dead at the next poll
            for key, entries in lists.items():
                retired = self._retired(topic, key)
                listed = [e for e in _entries(found.get(key)) if e not in retired]
                if ALL_REPLICAS in listed:
                    continue  # every replica of the topic is throttled already
                new = sorted(entries - set(listed))
                if not new:
                    continue
                if not listed and key not in self.record.topics.get(topic, {}):
                    self.record.created.setdefault(topic, [])
                    if key not in self.record.created[topic]:
                        self.record.created[topic].append(key)
                if retired & set(new):
                    self._set_retired(topic, key, retired - set(new))
                self.record.topics.setdefault(topic, {}).setdefault(key, []).extend(new)
                changes.setdefault(topic, {})[key] = ListChange(append=tuple(new))
        if changes:
            self._save()  # recorded before the write, so a crash can always undo it
            self._alter_topics(changes)

    def _alter_topics(self, changes: dict[str, dict[str, ConfigValue]]) -> None:
        """Every topic in one request (hundreds of topics change at once on a dense cluster); per topic when
        one was deleted meanwhile, which has no throttle left to change."""
        try:
            self.port.alter_topic_configs(changes)
            return
        except KafkaError as err:
            if err.name != "UNKNOWN_TOPIC_OR_PARTITION":
                raise
        for topic, configs in changes.items():
            try:
                self.port.alter_topic_configs({topic: configs})
            except KafkaError as err:
                if err.name != "UNKNOWN_TOPIC_OR_PARTITION":
                    raise

    def clear(self) -> list[str]:
        """Remove every throttle this executor set (also those recorded by a crashed run).

        Returns what could not be removed (e.g. a rate on a broker that is down); those stay in
        the record so that a later run or `kafka-balancer stop` removes them. ``unanswered`` lists
        those of them that failed for want of an answer."""
        self.unanswered = []
        failures = self._clear_topics()
        failures += self._clear_rates()
        self._save()
        return failures

    def _clear_topics(self) -> list[str]:
        """Every topic's configs read in one request and undone in one: a dense cluster's run throttles
        hundreds of topics, and a read and a write per topic took 10 s at 300 topics (bench.real_scale).
        One topic at a time when that fails, so that each failure names its topic."""
        topics = sorted(set(self.record.topics) | set(self.record.legacy_topics))
        if not topics:
            return []
        try:
            found = self._configs_of_all(topics)
            self._alter_topics({t: undo for t in topics if t in found and (undo := self._undo(t, found[t]))})
        except KafkaError:
            return self._clear_each_topic(topics)
        for topic in topics:
            self._forget_topic(topic)  # undone, or deleted with the topic
        return []

    def _clear_each_topic(self, topics: list[str]) -> list[str]:
        failures: list[str] = []
        for topic in topics:
            try:
                found = self._configs_of(topic)
                if found is not None:
                    self.port.alter_topic_configs({topic: self._undo(topic, found)})
                self._forget_topic(topic)  # undone, or deleted with the topic
            except KafkaError as err:
                if err.name == "UNKNOWN_TOPIC_OR_PARTITION":
                    self._forget_topic(topic)
                else:
                    failures.append(f"topic {topic}: {err.name}")
                    if isinstance(err, KafkaUnavailableError):
                        self.unanswered.append(failures[-1])
        return failures

    def _configs_of_all(self, topics: list[str]) -> dict[str, dict[str, str]]:
        """The configs of the topics that still exist, in one request (per topic when one is gone)."""
        try:
            return self.port.topic_configs(topics)
        except KafkaError as err:
            if err.name != "UNKNOWN_TOPIC_OR_PARTITION":
                raise
        return {t: found for t in topics if (found := self._configs_of(t)) is not None}

    def _configs_of(self, topic: str) -> dict[str, str] | None:
        """A topic's configs, or None when it no longer exists (deleted during the run)."""
        try:
            return self.port.topic_configs([topic]).get(topic)
        except KafkaError as err:
            if err.name == "UNKNOWN_TOPIC_OR_PARTITION":
                return None
            raise

    def _undo(self, topic: str, found: dict[str, str]) -> dict[str, ConfigValue]:
        """The changes that take our entries out of a topic's lists: the whole list where it holds
        nothing but ours and we created it, else our entries only."""
        if topic in self.record.legacy_topics:
            leader, follower = self.record.legacy_topics[topic]
            return {LEADER_THROTTLED_REPLICAS: leader or None, FOLLOWER_THROTTLED_REPLICAS: follower or None}
        changes: dict[str, ConfigValue] = {}
        for key, ours in self.record.topics.get(topic, {}).items():
            listed = _entries(found.get(key))
            if key in self.record.created.get(topic, []) and set(listed) <= set(ours) | self._retired(topic, key):
                changes[key] = None
            elif ours:
                changes[key] = ListChange(subtract=tuple(ours))
        return changes

    def _forget_topic(self, topic: str) -> None:
        self.record.topics.pop(topic, None)
        self.record.created.pop(topic, None)
        self.record.retired.pop(topic, None)
        self.record.legacy_topics.pop(topic, None)

    def _clear_rates(self) -> list[str]:
        failures: list[str] = []
        alive: set[int] | None = None
        if self.record.brokers or self.record.dir_brokers:
            # A metadata read first: it tells which brokers are up (a config request to a down
            # broker only times out), and it makes the client learn of brokers that came back
            # (librdkafka forgets a broker that left the metadata until its next refresh).
            try:
                alive = alive_brokers(self.port.read_cluster(with_sizes=False))
            except KafkaError:
                alive = None
        for keys, ours in (
            ((LEADER_THROTTLE_RATE, FOLLOWER_THROTTLE_RATE), self.record.brokers),
            ((LOG_DIR_THROTTLE_RATE,), self.record.dir_brokers),
        ):
            failures += self._clear(keys, ours, alive)
        return failures

    def _clear(self, keys: tuple[str, ...], ours: dict[int, str], alive: set[int] | None) -> list[str]:
        failures: list[str] = []
        for b, rate in sorted(ours.items()):
            if alive is not None and b not in alive:
                failures.append(f"broker {b}: offline")
                self.unanswered.append(failures[-1])  # it may be back soon (restarting, or fenced while hung)
                continue
            try:
                found = self.port.broker_configs([b]).get(b, {})
                # A rate that is no longer the one we wrote was set by someone else since: theirs now.
                mine = [k for k in keys if found.get(k) in (rate, None) or not rate]
                if mine:
                    self.port.alter_broker_configs({b: dict.fromkeys(mine)})
                del ours[b]
            except KafkaError as err:
                failures.append(f"broker {b}: {err.name}")
                if isinstance(err, KafkaUnavailableError):
                    self.unanswered.append(failures[-1])
        return failures

"""The shared state of an emulated Kafka cluster: brokers, topics, partitions, groups, configs.

Every broker listener reads and changes this one object under ``state.lock``. Per-partition
numbers that change on every tick (log size, log-end offset, traffic rates) live in numpy arrays
indexed by ``PartitionState.row`` so that growing 200,000 partitions is one vector operation;
everything Kafka's metadata describes (replicas, ISR, leader, ongoing reassignment) lives in small
per-partition objects because it changes rarely and is read per request.
"""

from __future__ import annotations

import math
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kafka_balancer.kafka.port import CORDONED_LOG_DIRS, LOG_DIRS, MIN_INSYNC_REPLICAS, log_dirs_of
from kafka_balancer.model import DISK, NETWORK_IN, NETWORK_OUT, ClusterModel
from kafka_balancer.model.cluster import LogDir, all_cordoned
from kafka_balancer.sandbox.versions import KafkaFeatures

NO_LEADER = -1

FloatArray = npt.NDArray[np.float64]


@dataclass
class Reassignment:
    """An ongoing KIP-455 reassignment: the partition's replica set is ``target + removing``."""

    target: list[int]
    original: list[int]
    adding: list[int]
    removing: list[int]
    stuck: bool = False
    started_at: float = 0.0


class PartitionState:
    """Metadata of one partition. ``lagging`` holds the log size of replicas outside the ISR."""

    __slots__ = (
        "dirs",
        "elr",
        "future",
        "hw_epoch",
        "index",
        "isr",
        "lagging",
        "leader",
        "leader_epoch",
        "reassignment",
        "replicas",
        "row",
        "topic",
    )

    def __init__(self, topic: str, index: int, row: int, replicas: list[int], isr: list[int], leader: int):  # noqa: PLR0917
        self.topic = topic
        self.index = index
        self.row = row
        self.replicas = replicas
        self.isr = isr
        # Eligible leader replicas (KIP-966, on in Kafka 4.x): replicas that left the ISR while it was
        # below min.insync.replicas, so hold every acknowledged write; cleared once the ISR is back at it.
        self.elr: list[int] = []
        self.leader = leader
        self.leader_epoch = 0
        # The leader epoch whose leader knows its high watermark. A new leader learns it from its
        # followers' next fetch; until then real brokers answer ListOffsets with OFFSET_NOT_AVAILABLE.
        # The emulator answers so once after each leader change (apis_replicas.list_offsets).
        self.hw_epoch = 0
        self.reassignment: Reassignment | None = None
        self.lagging: dict[int, float] = {}
        # Each replica's log directory (broker -> path), and the replicas being moved to another
        # directory of their broker by AlterReplicaLogDirs (broker -> the future replica).
        self.dirs: dict[int, str] = {}
        self.future: dict[int, FutureReplica] = {}


@dataclass
class FutureReplica:
    """A replica's copy in another log directory of its broker (Kafka's future log), ``copied`` bytes so far."""

    path: str
    copied: float = 0.0


@dataclass
class TopicState:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionState]
    configs: dict[str, str] = field(default_factory=dict)


# A broker's log.dirs when the snapshot does not name them (one directory, as a default install).
DEFAULT_LOG_DIR = "/var/lib/kafka/data"


@dataclass
class BrokerState:
    id: int
    rack: str | None
    alive: bool
    port: int = 0
    network_in: float = math.nan  # bytes/s, NaN = unknown
    disk: float = math.nan  # bytes
    network_out: float = math.nan
    slow_rate: float | None = None  # fault injection: cap on this broker's replication bytes/s
    configs: dict[str, str] = field(default_factory=dict)  # dynamic per-broker configs
    log_dirs: list[str] = field(default_factory=lambda: [DEFAULT_LOG_DIR])  # its static log.dirs
    dir_bytes: dict[str, float] = field(default_factory=dict)  # size of each directory's volume, where known

    def volume_bytes(self, path: str) -> float:
        """The size of the volume ``path`` is on: as given, else the broker's disk split evenly (NaN: unknown)."""
        return self.dir_bytes.get(path, self.disk / len(self.log_dirs))

    def log_dir_entries(self) -> tuple[LogDir, ...]:
        """Its log directories, each cordoned when its ``cordoned.log.dirs`` says so (as a real broker reads it)."""
        return log_dirs_of({LOG_DIRS: ",".join(self.log_dirs), **self.configs})

    @property
    def takes_new_replicas(self) -> bool:
        """Up and not every log directory cordoned: Kafka's placement of new topics skips it otherwise."""
        return self.alive and not all_cordoned(self.log_dir_entries())


@dataclass(frozen=True)
class MemberSeed:
    """A consumer group member as a test seeds it."""

    member_id: str
    client_id: str
    host: str
    subscription: tuple[str, ...]
    assignment: dict[str, list[int]]


@dataclass(frozen=True)
class GroupSeed:
    """A consumer group as a test seeds it; ``offsets`` are the committed offsets."""

    group_id: str
    members: tuple[MemberSeed, ...] = ()
    assignor: str = "range"
    state: str = "Stable"
    protocol_type: str = "consumer"
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)


TickListener = Callable[["ClusterState"], None]


class ClusterState:
    """The emulated cluster. Callers hold ``lock`` for any read that must be consistent."""

    def __init__(self, cluster_id: str = "emulated-cluster"):
        self.lock = threading.RLock()
        self.cluster_id = cluster_id
        self.clock = 0.0  # emulated seconds since start
        self.version = 0  # bumped whenever metadata (leaders, replicas, ISR, topics) changes
        self.brokers: dict[int, BrokerState] = {}
        self.topics: dict[str, TopicState] = {}
        self.controller_id = -1
        # Cluster-wide dynamic broker defaults (the broker resource "", kafka-configs.sh --entity-default).
        self.broker_defaults: dict[str, str] = {}
        self.features = KafkaFeatures()  # the Kafka version answered as (EmulatorOptions.kafka_version)
        self.groups: dict[str, GroupSeed] = {}
        # Rows of partitions, growable; see PartitionState.row.
        self.size = np.zeros(0, dtype=np.float64)
        self.log_end = np.zeros(0, dtype=np.float64)
        self.bytes_in = np.zeros(0, dtype=np.float64)
        self.messages_in = np.zeros(0, dtype=np.float64)
        self.online = np.zeros(0, dtype=np.bool_)  # has a live leader: only then the log grows
        self.rows: list[PartitionState] = []
        self.catching_up: set[PartitionState] = set()  # partitions with a live replica outside the ISR
        self.reassigning: dict[tuple[str, int], PartitionState] = {}
        # Log directories asked for replicas a broker does not host yet (AlterReplicaLogDirs before the
        # reassignment that adds them): (topic, partition, broker) -> path, used when the replica arrives.
        self.preferred_dirs: dict[tuple[str, int, int], str] = {}
        self.dir_replicas: Counter[tuple[int, str]] = Counter()  # (broker, path) -> replicas in it
        self.moving_dirs: set[PartitionState] = set()  # partitions with a future replica (see log_dirs.py)
        self.requests: Counter[int] = Counter()  # api key -> requests served, all brokers
        self.requests_by_broker: Counter[tuple[int, int]] = Counter()  # (broker id, api key)
        # (broker id or None for any, api key) -> requests still to drop (connection closed)
        self.dropped: Counter[tuple[int | None, int]] = Counter()
        self.tick_listeners: list[TickListener] = []
        self.completed: list[tuple[str, int, float]] = []  # (topic, partition, clock) of finished moves
        # Encoded responses that only depend on metadata (e.g. Metadata for all topics), valid
        # while ``version`` is unchanged: encoding 200,000 partitions costs about a second.
        self.cache: dict[object, bytes] = {}
        self.cache_version = -1
        # Encoded Metadata entries per topic (topic -> {version: bytes}), dropped whenever one of
        # the topic's partitions changes: a move re-encodes 1 topic, not all of them.
        self.encoded_topics: dict[str, dict[int, bytes]] = {}

    def cached(self, key: object) -> bytes | None:
        if self.cache_version != self.version:
            self.cache.clear()
            self.cache_version = self.version
        return self.cache.get(key)

    # ----- loading ---------------------------------------------------------------------------
    @classmethod
    def from_model(cls, model: ClusterModel) -> ClusterState:
        state = cls(cluster_id=model.cluster_name or "emulated-cluster")
        for b in range(model.num_brokers):
            info = model.broker(b)
            state.brokers[info.id] = BrokerState(
                id=info.id,
                rack=info.rack,
                alive=info.alive,
                network_in=float(model.capacity[b, NETWORK_IN]),
                network_out=float(model.capacity[b, NETWORK_OUT]),
                disk=float(model.capacity[b, DISK]),
            )
            dirs = model.log_dirs(b)
            if dirs:
                state.brokers[info.id].log_dirs = [d.path for d in dirs]
                state.brokers[info.id].dir_bytes = {d.path: d.total_bytes for d in dirs if d.total_bytes is not None}
            if any(d.cordoned for d in dirs):
                state.brokers[info.id].configs[CORDONED_LOG_DIRS] = ",".join(d.path for d in dirs if d.cordoned)
        for settings in model.topic_settings():
            configs: dict[str, str] = {}
            if settings.min_insync_replicas is not None:
                configs["min.insync.replicas"] = str(settings.min_insync_replicas)
            if settings.unclean_leader_election is not None:
                configs["unclean.leader.election.enable"] = str(settings.unclean_leader_election).lower()
            state.topics[settings.name] = TopicState(settings.name, _topic_id(settings.name), [], configs)
        count = model.num_partitions
        state._grow(count)
        ids = model.broker_ids
        for p in range(count):
            row = model.replicas[p]
            present = row >= 0
            replicas = ids[row[present]].tolist()
            isr = ids[row[present & model.isr_mask[p]]].tolist()
            lead = int(model.leader[p])
            leader = NO_LEADER if lead < 0 else int(ids[lead])
            topic = model.topics[int(model.partition_topic[p])]
            part = PartitionState(topic, int(model.partition_id[p]), p, replicas, isr, leader)
            part.dirs = {b: d for b, d in zip(replicas, model.replica_log_dirs(p), strict=True) if d is not None}
            state.dir_replicas.update((b, d) for b, d in part.dirs.items())
            state.rows.append(part)
            state.topics[topic].partitions.append(part)
        state.size[:] = model.size_bytes
        state.bytes_in[:] = model.bytes_in
        state.messages_in[:] = model.messages_in
        # Offsets are not in the snapshot: derive them from the size at the partition's own
        # average message size, so that offsets and bytes stay consistent as both grow.
        with np.errstate(divide="ignore", invalid="ignore"):
            per_message = np.where(model.messages_in > 0, model.bytes_in / model.messages_in, 0.0)
            state.log_end[:] = np.where(per_message > 0, np.floor(model.size_bytes / per_message), 0.0)
        for topic_state in state.topics.values():
            topic_state.partitions.sort(key=lambda part: part.index)
        for part in state.rows:
            state.refresh_partition(part)
        state.controller_id = state.pick_controller()
        return state

    def _grow(self, extra: int) -> None:
        self.size = np.concatenate([self.size, np.zeros(extra)])
        self.log_end = np.concatenate([self.log_end, np.zeros(extra)])
        self.bytes_in = np.concatenate([self.bytes_in, np.zeros(extra)])
        self.messages_in = np.concatenate([self.messages_in, np.zeros(extra)])
        self.online = np.concatenate([self.online, np.zeros(extra, dtype=np.bool_)])

    # ----- lookups ---------------------------------------------------------------------------
    def partition(self, topic: str, index: int) -> PartitionState | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= index < len(t.partitions):
            return None
        part = t.partitions[index]
        return part if part.index == index else None

    def alive_ids(self) -> list[int]:
        return sorted(b.id for b in self.brokers.values() if b.alive)

    def pick_controller(self) -> int:
        alive = self.alive_ids()
        return alive[0] if alive else -1

    def replica_size(self, part: PartitionState, broker: int) -> float:
        lag = part.lagging.get(broker)
        return float(self.size[part.row]) if lag is None else lag

    def reassignments_per_broker(self) -> Counter[int]:
        """Ongoing reassignments touching each broker (adding or removing a replica there)."""
        out: Counter[int] = Counter()
        for part in self.reassigning.values():
            r = part.reassignment
            if r is not None:
                for b in set(r.adding) | set(r.removing):
                    out[b] += 1
        return out

    def replica_counts(self) -> Counter[int]:
        out: Counter[int] = Counter()
        for part in self.rows:
            out.update(part.replicas)
        return out

    # ----- partition bookkeeping -------------------------------------------------------------
    def refresh_partition(self, part: PartitionState) -> None:
        """Re-derive the caches that depend on a partition's leader, ISR and reassignment."""
        self.encoded_topics.pop(part.topic, None)
        self._place_replicas(part)
        self.online[part.row] = part.leader != NO_LEADER and self.brokers[part.leader].alive
        behind = [b for b in part.replicas if b not in part.isr and self.brokers[b].alive]
        for b in behind:
            part.lagging.setdefault(b, 0.0)
        for b in list(part.lagging):
            if b not in part.replicas or b in part.isr:
                del part.lagging[b]
        if any(b not in part.isr for b in part.replicas):
            self.catching_up.add(part)
        else:
            self.catching_up.discard(part)
        key = (part.topic, part.index)
        if part.reassignment is None:
            self.reassigning.pop(key, None)
        else:
            self.reassigning[key] = part

    def _place_replicas(self, part: PartitionState) -> None:
        """Give each new replica a log directory and forget those of replicas gone. Like Kafka: the
        directory AlterReplicaLogDirs asked for, else the uncordoned one holding the fewest replicas."""
        for b in [b for b in part.dirs if b not in part.replicas]:
            self.dir_replicas[(b, part.dirs.pop(b))] -= 1
            part.future.pop(b, None)
        if not part.future:
            self.moving_dirs.discard(part)
        for b in part.replicas:
            if b in part.dirs:
                continue
            broker = self.brokers[b]
            path = self.preferred_dirs.pop((part.topic, part.index, b), None)
            if path is None or path not in broker.log_dirs:
                open_dirs = [d.path for d in broker.log_dir_entries() if not d.cordoned] or broker.log_dirs
                path = min(open_dirs, key=lambda d: self.dir_replicas[(b, d)])
            part.dirs[b] = path
            self.dir_replicas[(b, path)] += 1

    def min_isr(self, topic: str) -> int:
        """The topic's effective min.insync.replicas: its own, else the cluster default, else 1."""
        configs = self.topics[topic].configs if topic in self.topics else {}
        return int(configs.get(MIN_INSYNC_REPLICAS) or self.broker_defaults.get(MIN_INSYNC_REPLICAS) or 1)

    def leave_isr(self, part: PartitionState, broker_id: int) -> None:
        """``broker_id`` drops out of the ISR; below min ISR it becomes an eligible leader replica (KIP-966)."""
        part.isr.remove(broker_id)
        if not self.features.eligible_leader_replicas:
            return
        if len(part.isr) < self.min_isr(part.topic) and broker_id not in part.elr:
            part.elr.append(broker_id)

    def join_isr(self, part: PartitionState, broker_id: int) -> None:
        """``broker_id`` caught up; at min ISR again the ELR is cleared (KIP-966)."""
        part.isr.append(broker_id)
        if broker_id in part.elr:
            part.elr.remove(broker_id)
        if len(part.isr) >= self.min_isr(part.topic):
            part.elr.clear()

    def elect_from_isr(self, part: PartitionState, prefer: Sequence[int] | None = None) -> None:
        """Make the first live ISR member (in replica order, or ``prefer`` order) the leader."""
        order = prefer if prefer is not None else part.replicas
        for b in order:
            if b in part.isr and self.brokers[b].alive:
                if b != part.leader:
                    part.leader = b
                    part.leader_epoch += 1
                return
        part.leader = NO_LEADER
        part.leader_epoch += 1

    def set_rates(self, rates: Iterable[tuple[str, int, float, float]]) -> None:
        """Set (topic, partition, bytes in/s, messages in/s): they drive size and offset growth."""
        with self.lock:
            for topic, index, bytes_in, messages_in in rates:
                part = self.partition(topic, index)
                if part is None:
                    raise KeyError(f"unknown partition {topic}-{index}")
                self.bytes_in[part.row] = bytes_in
                self.messages_in[part.row] = messages_in

    def add_topic(self, name: str, assignment: Sequence[Sequence[int]], configs: dict[str, str]) -> TopicState:
        start = len(self.rows)
        self._grow(len(assignment))
        topic = TopicState(name, _topic_id(name), [], dict(configs))
        for i, replicas in enumerate(assignment):
            part = PartitionState(name, i, start + i, list(replicas), list(replicas), NO_LEADER)
            self.rows.append(part)
            topic.partitions.append(part)
            self.elect_from_isr(part)
            part.hw_epoch = part.leader_epoch  # a new partition's leader knows its (empty) log
            self.refresh_partition(part)
        self.topics[name] = topic
        self.version += 1
        return topic

    def delete_topic(self, name: str) -> None:
        topic = self.topics.pop(name)
        self.encoded_topics.pop(name, None)
        for part in topic.partitions:
            # The row stays allocated (rows are never reused) but stops growing and copying.
            self.online[part.row] = False
            self.bytes_in[part.row] = 0.0
            self.messages_in[part.row] = 0.0
            self.catching_up.discard(part)
            self.reassigning.pop((part.topic, part.index), None)
            for b, path in part.dirs.items():
                self.dir_replicas[(b, path)] -= 1
            self.moving_dirs.discard(part)
        self.version += 1


def _topic_id(name: str) -> uuid.UUID:
    # Deterministic ids keep metadata responses stable across runs of the same snapshot.
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-balancer-emulator/{name}")

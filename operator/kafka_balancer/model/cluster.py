"""The cluster model: brokers, partitions and topic settings as read-only numpy arrays.

Replicas are stored in a padded matrix of *broker indices* (not ids) so that the planner can
work on whole arrays: ``replicas[p, k]`` is the index into ``broker_ids`` of the k-th replica of
partition ``p`` (the first is the preferred leader), ``-1`` past the partition's replication
factor. The ISR is a boolean mask over the same slots, because in a consistent cluster the ISR is
always a subset of the replicas.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import numpy as np
import numpy.typing as npt

NO_BROKER: Final = -1

# Column order of the capacity matrix and of per-partition load columns that mirror it.
RESOURCES: Final = ("disk", "network_in", "network_out", "cpu")
DISK, NETWORK_IN, NETWORK_OUT, CPU = range(4)

IntArray = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


_Array = TypeVar("_Array", bound="np.ndarray[Any, Any]")


def _frozen(array: _Array) -> _Array:
    array.flags.writeable = False
    return array


@dataclass(frozen=True)
class LogDir:
    """One log directory of a broker (``log.dirs``); ``cordoned`` when it is listed in the broker's
    ``cordoned.log.dirs`` (KIP-1066, Kafka 4.3+): it takes no new replica, it keeps what it holds.
    ``total_bytes`` and ``usable_bytes`` are the size and the free space of the volume it is on, as
    DescribeLogDirs v4+ reports them (KIP-827); None where not known."""

    path: str
    cordoned: bool = False
    total_bytes: float | None = None
    usable_bytes: float | None = None

    @property
    def used_bytes(self) -> float | None:
        """What the volume holds (its size less its free space), where both are known."""
        if self.total_bytes is None or self.usable_bytes is None:
            return None
        return max(0.0, self.total_bytes - self.usable_bytes)


def all_cordoned(log_dirs: tuple[LogDir, ...]) -> bool:
    """A broker is cordoned when every one of its (known) log directories is: Kafka then places no
    new replica on it. With some left uncordoned Kafka puts a new replica in one of those."""
    return bool(log_dirs) and all(d.cordoned for d in log_dirs)


@dataclass(frozen=True)
class BrokerInfo:
    """One broker as a plain record, for code that walks brokers one at a time."""

    id: int
    rack: str | None
    alive: bool
    disk_bytes: float | None = None
    network_in_bytes_per_sec: float | None = None
    network_out_bytes_per_sec: float | None = None
    cpu_cores: float | None = None
    log_dirs: tuple[LogDir, ...] = ()  # empty: not known

    @property
    def cordoned(self) -> bool:
        """Every log directory cordoned: the broker takes no new replica (Kafka places none there)."""
        return all_cordoned(self.log_dirs)


@dataclass(frozen=True)
class TopicSettings:
    """Durability settings of one topic that the planner and executor respect."""

    name: str
    min_insync_replicas: int | None = None
    unclean_leader_election: bool | None = None


@dataclass(frozen=True)
class PartitionInfo:
    """One partition as a plain record (ids, not indices), for tests and small tools."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int | None
    isr: tuple[int, ...]
    size_bytes: float = 0.0
    bytes_in_per_sec: float = 0.0
    bytes_out_per_sec: float = 0.0
    messages_in_per_sec: float = 0.0
    cpu_cores_leader: float | None = None


@dataclass(frozen=True, eq=False)
class ClusterModel:
    """An immutable, array-backed description of one Kafka cluster at one moment.

    Build it with :func:`kafka_balancer.model.build.build_cluster` (or from a snapshot), which
    validates and freezes the arrays; the constructor itself trusts its input.
    """

    # Brokers, sorted by id.
    broker_ids: IntArray
    broker_racks: tuple[str | None, ...]
    broker_alive: BoolArray
    capacity: FloatArray  # (B, 4) in RESOURCES order; NaN = unknown (unlimited)

    # Topics, sorted by name, with their settings (min ISR 0 = not set).
    topics: tuple[str, ...]
    topic_min_isr: IntArray
    topic_unclean_election: npt.NDArray[np.int8]  # 1 true, 0 false, -1 not set

    # Partitions, sorted by (topic, partition).
    partition_topic: IntArray  # index into topics
    partition_id: IntArray
    replicas: IntArray  # (P, max_rf) broker indices, NO_BROKER padded
    isr_mask: BoolArray  # (P, max_rf)
    leader: IntArray  # broker index, NO_BROKER when offline
    size_bytes: FloatArray
    bytes_in: FloatArray
    bytes_out: FloatArray
    messages_in: FloatArray
    cpu_leader: FloatArray  # NaN = not measured

    cluster_name: str | None = None
    captured_at: str | None = None
    # Per broker (in broker order) its log directories; empty where not known (a snapshot without
    # them, a broker that is down). ``()`` for the whole cluster when none are known.
    broker_log_dirs: tuple[tuple[LogDir, ...], ...] = ()
    # (P, max_rf) eligible leader replicas (KIP-966) over the replica slots, where the cluster reported
    # them (DescribeTopicPartitions); None when not read. Kafka keeps ELR empty while the ISR is at
    # or above min.insync.replicas.
    elr_mask: BoolArray | None = None
    # (P, max_rf) each replica's log directory, as an index into its broker's ``log_dirs``; -1 where
    # not known (DescribeLogDirs did not list it, a snapshot without them). None: none known at all.
    replica_dir: npt.NDArray[np.int16] | None = None
    # Tiered storage (KIP-405), where the cluster has it; None where nothing is tiered. Per partition the
    # bytes in remote storage and the leader's local bytes past its last tiered offset (``size_bytes``,
    # the local log, includes the segments already copied to remote storage but still kept locally).
    remote_bytes: FloatArray | None = None
    untiered_bytes: FloatArray | None = None
    # Per broker whether an empty follower starts at the last tiered offset (KIP-1023, Kafka 4.3+:
    # follower.fetch.last.tiered.offset.enable); None where no broker does.
    broker_fetch_last_tiered: BoolArray | None = None
    _index: dict[tuple[str, int], int] | None = field(default=None, repr=False, compare=False)

    # ----- sizes ---------------------------------------------------------------------------
    @property
    def num_brokers(self) -> int:
        return int(self.broker_ids.shape[0])

    @property
    def num_partitions(self) -> int:
        return int(self.partition_id.shape[0])

    @property
    def replication_factor(self) -> IntArray:
        rf: IntArray = (self.replicas != NO_BROKER).sum(axis=1).astype(np.int32)
        return rf

    @property
    def num_replicas(self) -> int:
        return int((self.replicas != NO_BROKER).sum())

    @property
    def copy_bytes(self) -> FloatArray:
        """The bytes a new replica of each partition copies from its leader: what moving it costs.

        Without tiered storage the whole log. With it (KIP-405) a new follower skips what is only in
        remote storage and copies the leader's local log, or, where every live broker fetches from the
        last tiered offset (KIP-1023), only the part not yet tiered. Where the brokers differ the local
        log is counted: a move onto a broker that does not skip would copy it."""
        flags = self.broker_fetch_last_tiered
        if self.untiered_bytes is None or flags is None or not flags[self.broker_alive].all():
            return self.size_bytes
        return self.untiered_bytes

    @property
    def copy_share(self) -> FloatArray:
        """Per partition the bytes a move copies per byte it takes off a disk (copy_bytes / size_bytes):
        1 without tiered storage, less where a new replica skips tiered segments. Among moves of the same
        effect the planner takes the cheaper ones first."""
        out: FloatArray = np.divide(
            self.copy_bytes, self.size_bytes, out=np.ones_like(self.size_bytes), where=self.size_bytes > 0
        )
        return out

    # ----- lookups -------------------------------------------------------------------------
    def broker_index(self, broker_id: int) -> int:
        pos = int(np.searchsorted(self.broker_ids, broker_id))
        if pos >= self.num_brokers or int(self.broker_ids[pos]) != broker_id:
            raise KeyError(f"unknown broker id {broker_id}")
        return pos

    def partition_index(self, topic: str, partition: int) -> int:
        index = self._index
        if index is None:
            index = {
                (self.topics[t], int(p)): i
                for i, (t, p) in enumerate(zip(self.partition_topic.tolist(), self.partition_id.tolist(), strict=True))
            }
            object.__setattr__(self, "_index", index)
        try:
            return index[(topic, partition)]
        except KeyError:
            raise KeyError(f"unknown partition {topic}-{partition}") from None

    def topic_name(self, p: int) -> str:
        return self.topics[int(self.partition_topic[p])]

    def log_dirs(self, b: int) -> tuple[LogDir, ...]:
        return self.broker_log_dirs[b] if self.broker_log_dirs else ()

    @property
    def broker_cordoned(self) -> BoolArray:
        """Brokers whose every log directory is cordoned (KIP-1066): no new replica may land there."""
        out: BoolArray = np.array(
            [all_cordoned(self.log_dirs(b)) for b in range(self.num_brokers)],
            dtype=np.bool_,
        )
        return out

    def replica_ids(self, p: int) -> tuple[int, ...]:
        row = self.replicas[p]
        return tuple(int(self.broker_ids[b]) for b in row[row != NO_BROKER])

    def isr_ids(self, p: int) -> tuple[int, ...]:
        row = self.replicas[p]
        mask = (row != NO_BROKER) & self.isr_mask[p]
        return tuple(int(self.broker_ids[b]) for b in row[mask])

    def elr_ids(self, p: int) -> tuple[int, ...] | None:
        """The partition's eligible leader replicas, or None when the cluster did not report them."""
        if self.elr_mask is None:
            return None
        row = self.replicas[p]
        mask = (row != NO_BROKER) & self.elr_mask[p]
        return tuple(int(self.broker_ids[b]) for b in row[mask])

    def replica_log_dirs(self, p: int) -> tuple[str | None, ...]:
        """Each replica's log directory path (in replica order), None where not known."""
        row = self.replicas[p]
        out: list[str | None] = []
        for k, b in enumerate(row[row != NO_BROKER].tolist()):
            d = -1 if self.replica_dir is None else int(self.replica_dir[p, k])
            out.append(self.log_dirs(b)[d].path if d >= 0 else None)
        return tuple(out)

    def replica_log_dir(self, p: int, broker_id: int) -> str | None:
        """The log directory of ``broker_id``'s replica of partition ``p``, None where not known."""
        replicas = self.replica_ids(p)
        return self.replica_log_dirs(p)[replicas.index(broker_id)] if broker_id in replicas else None

    def leader_id(self, p: int) -> int | None:
        b = int(self.leader[p])
        return None if b == NO_BROKER else int(self.broker_ids[b])

    def broker(self, b: int) -> BrokerInfo:
        cap = [None if np.isnan(c) else float(c) for c in self.capacity[b]]
        return BrokerInfo(
            id=int(self.broker_ids[b]),
            rack=self.broker_racks[b],
            alive=bool(self.broker_alive[b]),
            disk_bytes=cap[DISK],
            network_in_bytes_per_sec=cap[NETWORK_IN],
            network_out_bytes_per_sec=cap[NETWORK_OUT],
            cpu_cores=cap[CPU],
            log_dirs=self.log_dirs(b),
        )

    def brokers(self) -> list[BrokerInfo]:
        return [self.broker(b) for b in range(self.num_brokers)]

    def partition(self, p: int) -> PartitionInfo:
        cpu = float(self.cpu_leader[p])
        return PartitionInfo(
            topic=self.topic_name(p),
            partition=int(self.partition_id[p]),
            replicas=self.replica_ids(p),
            leader=self.leader_id(p),
            isr=self.isr_ids(p),
            size_bytes=float(self.size_bytes[p]),
            bytes_in_per_sec=float(self.bytes_in[p]),
            bytes_out_per_sec=float(self.bytes_out[p]),
            messages_in_per_sec=float(self.messages_in[p]),
            cpu_cores_leader=None if np.isnan(cpu) else cpu,
        )

    def partitions(self) -> list[PartitionInfo]:
        return [self.partition(p) for p in range(self.num_partitions)]

    def topic_settings(self) -> list[TopicSettings]:
        out = []
        for t, name in enumerate(self.topics):
            min_isr = int(self.topic_min_isr[t])
            unclean = int(self.topic_unclean_election[t])
            out.append(
                TopicSettings(
                    name=name,
                    min_insync_replicas=min_isr or None,
                    unclean_leader_election=None if unclean < 0 else bool(unclean),
                )
            )
        return out

    def racks(self) -> tuple[str | None, ...]:
        return self.broker_racks

    def nbytes(self) -> int:
        """Memory held by the arrays (the planner's working set)."""
        arrays = (
            self.broker_ids, self.broker_alive, self.capacity, self.topic_min_isr,
            self.topic_unclean_election, self.partition_topic, self.partition_id, self.replicas,
            self.isr_mask, self.leader, self.size_bytes, self.bytes_in, self.bytes_out,
            self.messages_in, self.cpu_leader,
        )  # fmt: skip
        optional = (self.replica_dir, self.elr_mask, self.remote_bytes, self.untiered_bytes)
        extra = sum(a.nbytes for a in optional if a is not None)
        return int(sum(a.nbytes for a in arrays) + extra)

    def with_replica_dirs(self, replica_dir: npt.NDArray[np.int16]) -> ClusterModel:
        """A copy with each replica in another of its broker's log directories (indices as ``replica_dir``)."""
        if replica_dir.shape != self.replicas.shape:
            raise ValueError(
                f"replica_dir must have the shape {self.replicas.shape} of replicas, got {replica_dir.shape}"
            )
        return dataclasses.replace(self, replica_dir=_frozen(np.array(replica_dir, dtype=np.int16)))

    def with_placement(self, replicas: IntArray, leader: IntArray) -> ClusterModel:
        """A copy with new replica placement and leaders; the ISR becomes every live replica.

        Used to evaluate a plan: after a reassignment completes, all new replicas are in sync.
        """
        if replicas.shape[0] != self.num_partitions:
            raise ValueError("replicas must have one row per partition")
        replicas = np.ascontiguousarray(replicas, dtype=np.int32)
        replica_dir = None
        if self.replica_dir is not None:
            # A replica keeps its directory where its broker keeps the partition; a new one's is not known.
            replica_dir = np.full(replicas.shape, -1, dtype=np.int16)
            for k in range(replicas.shape[1]):
                for j in range(self.replicas.shape[1]):
                    same = (replicas[:, k] == self.replicas[:, j]) & (replicas[:, k] != NO_BROKER)
                    replica_dir[same, k] = self.replica_dir[same, j]
        alive = np.concatenate([self.broker_alive, np.array([False])])
        isr = (replicas != NO_BROKER) & alive[replicas]
        return ClusterModel(
            broker_ids=self.broker_ids,
            broker_racks=self.broker_racks,
            broker_alive=self.broker_alive,
            capacity=self.capacity,
            topics=self.topics,
            topic_min_isr=self.topic_min_isr,
            topic_unclean_election=self.topic_unclean_election,
            partition_topic=self.partition_topic,
            partition_id=self.partition_id,
            replicas=_frozen(replicas),
            isr_mask=_frozen(isr),
            leader=_frozen(np.ascontiguousarray(leader, dtype=np.int32)),
            size_bytes=self.size_bytes,
            bytes_in=self.bytes_in,
            bytes_out=self.bytes_out,
            messages_in=self.messages_in,
            cpu_leader=self.cpu_leader,
            cluster_name=self.cluster_name,
            captured_at=self.captured_at,
            broker_log_dirs=self.broker_log_dirs,
            replica_dir=None if replica_dir is None else _frozen(replica_dir),
            remote_bytes=self.remote_bytes,
            untiered_bytes=self.untiered_bytes,
            broker_fetch_last_tiered=self.broker_fetch_last_tiered,
        )

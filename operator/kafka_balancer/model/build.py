"""Build a validated :class:`ClusterModel` one broker and one partition at a time.

Both the snapshot reader and the Kafka adapter feed this builder, so every way into the model
goes through the same checks and the same error messages.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, ClusterModel, LogDir, _frozen
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.limits import check_amount, check_ids, check_int32, check_topic_name


def _mark(where: str, field: str, members: Sequence[int], replicas: Sequence[int], slots: BoolArray) -> None:
    """Set the replica slots of ``members`` (an ISR or ELR, which must be replicas) in ``slots``."""
    slot = {b: k for k, b in enumerate(replicas)}
    for b in members:
        if b not in slot:
            raise ModelError(f"{where}: field '{field}' names broker {b!r}, which is not a replica {list(replicas)!r}")
        slots[slot[b]] = True


def _check_dirs(where: str, replicas: Sequence[int], dirs: Sequence[str | None]) -> bool:
    """One path (or None) per replica; True when any is named."""
    if len(dirs) != len(replicas) or not all(d is None or (isinstance(d, str) and d) for d in dirs):
        raise ModelError(
            f"{where}: field 'logDirs' must give one path (or null) per replica {list(replicas)!r}, got {list(dirs)!r}"
        )
    return any(d is not None for d in dirs)


def _place(
    where: str,
    replicas: Sequence[int],
    dirs: Sequence[str | None],
    dir_index: dict[int, dict[str, int]],
    slots: npt.NDArray[np.int16],
) -> None:
    """Set each replica's log directory (an index into its broker's log directories) in ``slots``."""
    for k, (b, path) in enumerate(zip(replicas, dirs, strict=True)):
        if path is None:
            continue
        known = dir_index.get(b, {})
        if path not in known:
            raise ModelError(
                f"{where}: field 'logDirs' names {path!r} for broker {b}, which is not one of its log "
                f"directories {sorted(known)!r}"
            )
        slots[k] = known[path]


class ClusterBuilder:
    """Collects brokers, partitions and topic settings; :meth:`build` validates and freezes."""

    def __init__(self, *, cluster_name: str | None = None, captured_at: str | None = None):
        self.cluster_name = cluster_name
        self.captured_at = captured_at
        self._brokers: dict[int, tuple[str | None, bool, tuple[float, float, float, float]]] = {}
        self._log_dirs: dict[int, tuple[LogDir, ...]] = {}
        self._topic_settings: dict[str, tuple[int, int]] = {}
        self._seen: set[tuple[str, int]] = set()
        self._topic_names: set[str] = set()
        self._topic: list[str] = []
        self._partition: list[int] = []
        self._replicas: list[Sequence[int]] = []
        self._isr: list[Sequence[int] | None] = []
        self._elr: dict[int, Sequence[int]] = {}  # by insertion position, where given
        self._dirs: dict[int, Sequence[str | None]] = {}  # by insertion position, where given
        self._tiered: dict[int, tuple[float, float]] = {}  # (remote, untiered) bytes by insertion position
        self._fetch_last_tiered: set[int] = set()  # brokers that fetch from the last tiered offset
        self._leader: list[int | None] = []
        self._loads: list[tuple[float, float, float, float, float]] = []

    # ----- brokers and topics --------------------------------------------------------------
    def add_broker(
        self,
        broker_id: int,
        *,
        rack: str | None = None,
        alive: bool = True,
        disk_bytes: float | None = None,
        network_in_bytes_per_sec: float | None = None,
        network_out_bytes_per_sec: float | None = None,
        cpu_cores: float | None = None,
        log_dirs: Sequence[LogDir] = (),
        fetch_last_tiered: bool = False,
    ) -> None:
        """``fetch_last_tiered``: an empty follower on it starts at the last tiered offset (KIP-1023)."""
        check_int32(broker_id, "brokers", "id")
        where = f"broker {broker_id}"
        if broker_id in self._brokers:
            raise ModelError(f"{where}: duplicate broker id {broker_id}")
        caps = []
        for name, value in (
            ("capacity.diskBytes", disk_bytes),
            ("capacity.networkInBytesPerSec", network_in_bytes_per_sec),
            ("capacity.networkOutBytesPerSec", network_out_bytes_per_sec),
            ("capacity.cpuCores", cpu_cores),
        ):
            if value is None:
                caps.append(math.nan)
            else:
                number = check_amount(value, where, name)
                if number <= 0:
                    raise ModelError(f"{where}: field '{name}' must be > 0, got {value!r}")
                caps.append(number)
        paths = [d.path for d in log_dirs]
        if any(not isinstance(p, str) or not p for p in paths) or len(set(paths)) != len(paths):
            raise ModelError(f"{where}: field 'logDirs' must name distinct non-empty paths, got {paths!r}")
        self._brokers[broker_id] = (rack, bool(alive), (caps[0], caps[1], caps[2], caps[3]))
        if fetch_last_tiered:
            self._fetch_last_tiered.add(broker_id)
        if log_dirs:
            self._log_dirs[broker_id] = tuple(log_dirs)

    def set_topic(
        self,
        name: str,
        *,
        min_insync_replicas: int | None = None,
        unclean_leader_election: bool | None = None,
    ) -> None:
        check_topic_name(name, "topics", "name")
        if name in self._topic_settings:
            raise ModelError(f"topics: topic {name!r} is listed twice")
        if min_insync_replicas is not None:
            check_int32(min_insync_replicas, f"topic '{name}'", "minInsyncReplicas", minimum=1)
        unclean = -1 if unclean_leader_election is None else int(bool(unclean_leader_election))
        self._topic_settings[name] = (min_insync_replicas or 0, unclean)

    # ----- partitions ----------------------------------------------------------------------
    def add_partition(
        self,
        topic: str,
        partition: int,
        replicas: Sequence[int],
        *,
        leader: int | None = None,
        leader_given: bool = False,
        isr: Sequence[int] | None = None,
        elr: Sequence[int] | None = None,
        size_bytes: float = 0.0,
        bytes_in_per_sec: float = 0.0,
        bytes_out_per_sec: float = 0.0,
        messages_in_per_sec: float = 0.0,
        cpu_cores_leader: float | None = None,
        log_dirs: Sequence[str | None] | None = None,
        remote_bytes: float | None = None,
        untiered_bytes: float | None = None,
    ) -> None:
        """Add a partition; ``leader_given`` tells an explicit ``None`` (offline) from absent.
        ``log_dirs``: each replica's log directory (in replica order), None where not known.
        Tiered storage: ``remote_bytes`` in remote storage, ``untiered_bytes`` of the local log (``size_bytes``)
        past the last tiered offset (default: all of it)."""
        if topic not in self._topic_names:  # checked once per topic, not once per partition
            self._topic_names.add(check_topic_name(topic, "partitions"))
        check_int32(partition, f"topic '{topic}'", "partition")
        where = f"partition {topic}-{partition}"
        key = (topic, partition)
        if key in self._seen:
            raise ModelError(f"{where}: duplicate partition")
        if not replicas:
            raise ModelError(f"{where}: field 'replicas' must not be empty, got {list(replicas)!r}")
        check_ids(replicas, where, "replicas")
        if isr is not None:
            check_ids(isr, where, "isr")
        if leader is not None:
            check_ids([leader], where, "leader")
        if isr is not None and not isr and leader is not None:
            raise ModelError(
                f"{where}: field 'isr' is empty but field 'leader' is {leader}: Kafka's leader is always in the ISR"
            )
        if len(set(replicas)) != len(replicas):
            raise ModelError(f"{where}: field 'replicas' has a duplicate broker, got {list(replicas)!r}")
        if isr is not None and len(set(isr)) != len(isr):
            raise ModelError(f"{where}: field 'isr' has a duplicate broker, got {list(isr)!r}")
        loads = (
            check_amount(size_bytes, where, "sizeBytes"),
            check_amount(bytes_in_per_sec, where, "bytesInPerSec"),
            check_amount(bytes_out_per_sec, where, "bytesOutPerSec"),
            check_amount(messages_in_per_sec, where, "messagesInPerSec"),
            math.nan if cpu_cores_leader is None else check_amount(cpu_cores_leader, where, "cpuCoresLeader"),
        )
        if remote_bytes is not None or untiered_bytes is not None:
            self._keep_tiered(where, loads[0], remote_bytes, untiered_bytes)
        self._seen.add(key)
        self._topic.append(topic)
        self._partition.append(partition)
        self._replicas.append(replicas)
        self._keep_per_replica(where, replicas, elr, log_dirs)
        self._isr.append(isr)
        self._leader.append(leader if leader_given or leader is not None else replicas[0])
        self._loads.append(loads)

    def _keep_per_replica(
        self, where: str, replicas: Sequence[int], elr: Sequence[int] | None, dirs: Sequence[str | None] | None
    ) -> None:
        """The ELR and log directories given for the partition being added (checked at build)."""
        if elr is not None:
            self._elr[len(self._isr)] = elr
        if dirs is not None and _check_dirs(where, replicas, dirs):
            self._dirs[len(self._isr)] = dirs

    def _keep_tiered(self, where: str, size: float, remote: float | None, untiered: float | None) -> None:
        remote = 0.0 if remote is None else check_amount(remote, where, "remoteBytes")
        untiered = size if untiered is None else check_amount(untiered, where, "untieredBytes")
        if untiered > size:
            raise ModelError(
                f"{where}: field 'untieredBytes' ({untiered:g}) must not exceed field 'sizeBytes' ({size:g}), "
                "the local log it is part of"
            )
        self._tiered[len(self._isr)] = (remote, untiered)

    def _tiering(
        self, order: list[int], sizes: npt.NDArray[np.float64], ids: list[int]
    ) -> tuple[npt.NDArray[np.float64] | None, npt.NDArray[np.float64] | None, BoolArray | None]:
        """The model's tiered-storage arrays (remote, untiered, broker flags; None where nothing is
        tiered), partition rows in ``order``."""
        if not self._tiered and not self._fetch_last_tiered:
            return None, None, None
        remote = np.zeros(len(order), dtype=np.float64)
        untiered = np.array(sizes, dtype=np.float64)
        for row, i in enumerate(order):
            if i in self._tiered:
                remote[row], untiered[row] = self._tiered[i]
        flags = np.array([b in self._fetch_last_tiered for b in ids], dtype=np.bool_)
        return _frozen(remote), _frozen(untiered), _frozen(flags) if flags.any() else None

    # ----- build ---------------------------------------------------------------------------
    def build(self) -> ClusterModel:
        if not self._brokers:
            raise ModelError("brokers: a cluster needs at least one broker")
        ids = sorted(self._brokers)
        broker_ids = np.array(ids, dtype=np.int32)
        position = {b: i for i, b in enumerate(ids)}
        racks = tuple(self._brokers[b][0] for b in ids)
        alive = np.array([self._brokers[b][1] for b in ids], dtype=np.bool_)
        capacity = np.array([self._brokers[b][2] for b in ids], dtype=np.float64).reshape(-1, 4)

        topics = tuple(sorted(set(self._topic) | set(self._topic_settings)))
        topic_pos = {t: i for i, t in enumerate(topics)}
        min_isr = np.zeros(len(topics), dtype=np.int32)
        unclean = np.full(len(topics), -1, dtype=np.int8)
        for name, (m, u) in self._topic_settings.items():
            min_isr[topic_pos[name]] = m
            unclean[topic_pos[name]] = u

        count = len(self._topic)
        order = sorted(range(count), key=lambda i: (self._topic[i], self._partition[i]))
        max_rf = max((len(r) for r in self._replicas), default=1)
        replicas = np.full((count, max_rf), NO_BROKER, dtype=np.int32)
        isr_mask = np.zeros((count, max_rf), dtype=np.bool_)
        elr_mask = np.zeros((count, max_rf), dtype=np.bool_)
        leader = np.full(count, NO_BROKER, dtype=np.int32)
        replica_dir = np.full((count, max_rf), -1, dtype=np.int16) if self._dirs else None
        dir_index = {b: {d.path: k for k, d in enumerate(dirs)} for b, dirs in self._log_dirs.items()}
        partition_topic = np.empty(count, dtype=np.int32)
        partition_id = np.empty(count, dtype=np.int32)
        loads = np.empty((count, 5), dtype=np.float64)
        for row, i in enumerate(order):
            topic, part = self._topic[i], self._partition[i]
            reps = self._replicas[i]
            try:
                indices = [position[b] for b in reps]
            except KeyError as err:
                raise ModelError(
                    f"partition {topic}-{part}: field 'replicas' names unknown broker {err.args[0]!r}"
                    f" (known brokers: {ids})"
                ) from None
            replicas[row, : len(indices)] = indices
            where = f"partition {topic}-{part}"
            isr = self._isr[i]
            _mark(where, "isr", reps if isr is None else isr, reps, isr_mask[row])
            _mark(where, "elr", self._elr.get(i, ()), reps, elr_mask[row])
            if replica_dir is not None and i in self._dirs:
                _place(where, reps, self._dirs[i], dir_index, replica_dir[row])
            lead = self._leader[i]
            if lead is not None:
                if lead not in position or lead not in reps:
                    raise ModelError(
                        f"partition {topic}-{part}: field 'leader' must be one of the replicas "
                        f"{list(reps)!r}, got {lead!r}"
                    )
                leader[row] = position[lead]
            partition_topic[row] = topic_pos[topic]
            partition_id[row] = part
            loads[row] = self._loads[i]

        remote, untiered, fetch_last_tiered = self._tiering(order, loads[:, 0], ids)
        return ClusterModel(
            broker_ids=_frozen(broker_ids),
            broker_racks=racks,
            broker_alive=_frozen(alive),
            capacity=_frozen(capacity),
            topics=topics,
            topic_min_isr=_frozen(min_isr),
            topic_unclean_election=_frozen(unclean),
            partition_topic=_frozen(partition_topic),
            partition_id=_frozen(partition_id),
            replicas=_frozen(replicas),
            isr_mask=_frozen(isr_mask),
            leader=_frozen(leader),
            size_bytes=_frozen(np.ascontiguousarray(loads[:, 0])),
            bytes_in=_frozen(np.ascontiguousarray(loads[:, 1])),
            bytes_out=_frozen(np.ascontiguousarray(loads[:, 2])),
            messages_in=_frozen(np.ascontiguousarray(loads[:, 3])),
            cpu_leader=_frozen(np.ascontiguousarray(loads[:, 4])),
            cluster_name=self.cluster_name,
            captured_at=self.captured_at,
            broker_log_dirs=tuple(self._log_dirs.get(b, ()) for b in ids) if self._log_dirs else (),
            elr_mask=_frozen(elr_mask) if self._elr else None,
            replica_dir=None if replica_dir is None else _frozen(replica_dir),
            remote_bytes=remote,
            untiered_bytes=untiered,
            broker_fetch_last_tiered=fetch_last_tiered,
        )

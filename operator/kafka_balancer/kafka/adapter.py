"""KafkaAdapter: the KafkaPort over confluent-kafka (primary) and kafka-python 3.x.

confluent-kafka (librdkafka) does metadata, configs, offsets, groups and elections.
kafka-python does what confluent-kafka lacks: AlterPartitionReassignments,
ListPartitionReassignments and DescribeLogDirs. Its client is opened on first use.
Every error Kafka returns becomes a :class:`KafkaError` named as Kafka names it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import kafka.errors as kp_errors
from confluent_kafka import ConsumerGroupTopicPartitions, ElectionType, KafkaException
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient

# The admin package re-exports these without __all__; import them from where they are defined so
# that mypy --strict (no implicit re-export) sees them.
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin._listoffsets import OffsetSpec
from kafka import TopicPartition as KpTopicPartition
from kafka import TopicPartitionReplica as KpTopicPartitionReplica
from kafka.admin import KafkaAdminClient
from kafka.admin import OffsetSpec as KpOffsetSpec

from kafka_balancer.kafka import client_log, metadata_check
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.errors import TRANSIENT_PARTITION_ERRORS, UNAVAILABLE_ERRORS, error_name
from kafka_balancer.kafka.lacking import Feature, say_lacking
from kafka_balancer.kafka.port import (
    CORDONED_LOG_DIRS,
    DEFAULT_ELECTION_BATCH,
    FETCH_LAST_TIERED_OFFSET,
    MAX_CONFIG_VALUE_BYTES,
    MIN_INSYNC_REPLICAS,
    REMOTE_STORAGE_ENABLE,
    UNCLEAN_LEADER_ELECTION,
    BrokerEndpoint,
    ClusterDescription,
    ConfigValue,
    ConsumerGroupInfo,
    ConsumerGroupMember,
    KafkaError,
    KafkaUnavailableError,
    ListChange,
    OngoingReassignment,
    PortClosedError,
    ReplicaLogDir,
    TopicPartition,
    log_dirs_of,
)
from kafka_balancer.kafka.tiering import TieredBytes, TieredOffsets, tiered_bytes
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.model.cluster import LogDir

log = logging.getLogger(__name__)
_LIBRDKAFKA_LOG = client_log.limited_logger()

T = TypeVar("T")

# librdkafka's own (negative) error codes that mean "could not talk to the cluster".
_UNAVAILABLE = {"_TRANSPORT", "_TIMED_OUT", "_ALL_BROKERS_DOWN", "_AUTHENTICATION", "_RESOLVE", "_SSL"}
# librdkafka errors that mean this client cannot log in (wrong credentials, TLS trust), by Kafka's name.
_LOGIN_ERRORS = {"_AUTHENTICATION": "SASL_AUTHENTICATION_FAILED", "_SSL": "_SSL"}
_POLL_SLICE_S = 0.1
_REFRESH_AFTER_S = 0.5
# Every broker refused or dropped its connection this long: the request fails now, not at its timeout (a
# cluster that refuses connections is reported in seconds, and waited for by those who wait).
ALL_DOWN_GRACE_S = 2.0
_TRANSPORT_ERRORS = {"_TRANSPORT", "_ALL_BROKERS_DOWN"}


def _from_confluent(err: Any, partition: TopicPartition | None = None) -> KafkaError:
    """A confluent_kafka.KafkaError (or KafkaException wrapping one) as our KafkaError."""
    inner = err.args[0] if isinstance(err, KafkaException) and err.args else err
    code = inner.code() if hasattr(inner, "code") else -1
    name = error_name(code) if code >= 0 else (inner.name() if hasattr(inner, "name") else "UNKNOWN")
    message = inner.str() if hasattr(inner, "str") else str(inner)
    cls = KafkaUnavailableError if name in _UNAVAILABLE or name in UNAVAILABLE_ERRORS else KafkaError
    return cls(name, message, partition)


# kafka-python's errors without a Kafka error code that mean "could not talk to the cluster".
_KP_UNAVAILABLE = (
    kp_errors.KafkaTimeoutError,
    kp_errors.KafkaConnectionError,
    kp_errors.NodeNotReadyError,
    kp_errors.MetadataEmptyBrokerList,
    kp_errors.UnknownBrokerIdError,
)


def _from_kafka_python(err: Any, partition: TopicPartition | None = None) -> KafkaError:
    code = getattr(err, "errno", None)
    if isinstance(code, int):
        name = error_name(code)
        cls = KafkaUnavailableError if name in UNAVAILABLE_ERRORS else KafkaError
        return cls(name, str(err), partition)
    if isinstance(err, _KP_UNAVAILABLE):
        return KafkaUnavailableError(type(err).__name__, str(err), partition)
    return KafkaError(type(err).__name__, str(err), partition)


def _set_entries(key: str, value: ConfigValue) -> list[Any]:
    """SET, DELETE and a ListChange's APPEND."""
    if isinstance(value, ListChange):
        if not value.append:
            return []
        return [ConfigEntry(key, ",".join(value.append), incremental_operation=AlterConfigOpType.APPEND)]
    op = AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
    return [ConfigEntry(key, value if value is not None else "", incremental_operation=op)]


def _subtract_entries(key: str, value: ConfigValue) -> list[Any]:
    """A ListChange's SUBTRACT."""
    if isinstance(value, ListChange) and value.subtract:
        return [ConfigEntry(key, ",".join(value.subtract), incremental_operation=AlterConfigOpType.SUBTRACT)]
    return []


def _check_value_sizes(changes: Mapping[str, Mapping[str, ConfigValue]]) -> None:
    """Refuse, before anything is sent, a value Kafka cannot read (MAX_CONFIG_VALUE_BYTES): the broker
    would close the connection, which librdkafka reports as a lost broker, not as what was wrong."""
    for name, configs in changes.items():
        for key, value in configs.items():
            parts = (value.append, value.subtract) if isinstance(value, ListChange) else ((value or "",),)
            for entries in parts:
                size = len(",".join(entries).encode())
                if size > MAX_CONFIG_VALUE_BYTES:
                    raise KafkaError(
                        "INVALID_CONFIG",
                        f"{key} of {name}: a value of {size} bytes, more than the {MAX_CONFIG_VALUE_BYTES} "
                        "Kafka's protocol takes (nothing was sent)",
                    )


def _group_state(state: Any) -> str:
    """Kafka's spelling of a group state (``PreparingRebalance``), from librdkafka's enum name."""
    name = str(getattr(state, "name", state))
    return "".join(word.capitalize() for word in name.split("_"))


def _dir_of(described: _LogDirs, tp: TopicPartition, broker: int, dirs: Sequence[LogDir]) -> str | None:
    """A replica's directory: its broker's only one, or where DescribeLogDirs listed it (if in log.dirs)."""
    if len(dirs) == 1:
        return dirs[0].path
    found = described.replicas.get((tp, broker))
    return found.path if found is not None and any(d.path == found.path for d in dirs) else None


def _size_requests(
    metadata: Any, topics: Iterable[str], every_replica: Iterable[int] | None = None
) -> dict[int, dict[str, list[int]]]:
    """Which partitions to ask each live broker about: every replica it hosts (on the brokers of
    ``every_replica``, all when None), else only the partitions it leads, and every replica of a
    leaderless partition."""
    live = set(metadata.brokers)
    everything = None if every_replica is None else set(every_replica)
    wanted: dict[int, dict[str, list[int]]] = {}
    for name in topics:
        for index, p in metadata.topics[name].partitions.items():
            hosts = p.replicas
            if everything is not None and p.leader >= 0:
                hosts = [b for b in p.replicas if b == p.leader or b in everything]
            for broker in hosts:
                if broker in live:
                    wanted.setdefault(broker, {}).setdefault(name, []).append(index)
    return wanted


@dataclass
class _LogDirs:
    """What DescribeLogDirs told: each replica's directory, each directory's (total, usable) bytes (-1: not known)."""

    replicas: dict[tuple[TopicPartition, int], ReplicaLogDir] = field(default_factory=dict)
    volumes: dict[int, dict[str, tuple[int, int]]] = field(default_factory=dict)


def _with_volumes(dirs: Iterable[LogDir], volumes: Mapping[str, tuple[int, int]]) -> tuple[LogDir, ...]:
    """A broker's configured log directories with the volume sizes DescribeLogDirs gave (and any
    directory it reports that the configs did not name, in path order)."""
    out = []
    for d in dirs:
        total, usable = volumes.get(d.path, (-1, -1))
        out.append(
            LogDir(d.path, d.cordoned, float(total) if total >= 0 else None, float(usable) if usable >= 0 else None)
        )
    named = {d.path for d in out}
    for path, (total, usable) in sorted(volumes.items()):
        if path not in named:
            out.append(
                LogDir(path, False, float(total) if total >= 0 else None, float(usable) if usable >= 0 else None)
            )
    return tuple(out)


class KafkaAdapter:
    """Implements :class:`kafka_balancer.kafka.port.KafkaPort`."""

    def __init__(self, spec: ConnectionSpec):
        self.spec = spec
        # librdkafka retries a failed login until the request times out; its error callback says
        # at once that credentials or TLS are wrong, and _result turns that into the error.
        self._login_error: tuple[str, str] | None = None  # (Kafka error name, message)
        self._lost_broker = False  # librdkafka reported a broken connection since the last refresh
        self._all_down_since: float | None = None  # librdkafka reported every broker down, and no answer came since
        config = spec.confluent_config()
        # Through a weak reference: librdkafka's handle must not keep an unclosed adapter alive.
        me = weakref.ref(self)

        def on_error(err: Any) -> None:
            adapter = me()
            if adapter is not None:
                adapter._on_error(err)

        config["error_cb"] = on_error
        # librdkafka's own log lines (a refused connection, every few ms) go to Python logging, rate-limited
        # (kafka.client_log), not straight to stderr: the errors that matter reach the caller as KafkaErrors.
        config["logger"] = _LIBRDKAFKA_LOG
        self._admin_client: AdminClient | None = AdminClient(config)
        self._kp: KafkaAdminClient | None = None
        self._timeout = spec.request_timeout_s

    def __repr__(self) -> str:
        return f"KafkaAdapter({self.spec})"

    # ----- plumbing --------------------------------------------------------------------------
    @property
    def _admin(self) -> AdminClient:
        if self._admin_client is None:
            raise PortClosedError("CLOSED", f"adapter for {self.spec} is closed")
        return self._admin_client

    def _on_error(self, err: Any) -> None:
        name = err.name() if hasattr(err, "name") else ""
        if name in _LOGIN_ERRORS:
            self._login_error = (_LOGIN_ERRORS[name], f"{err.str()} ({self.spec})")
        else:
            if name in _TRANSPORT_ERRORS:
                self._lost_broker = True
            if name == "_ALL_BROKERS_DOWN" and self._all_down_since is None:
                self._all_down_since = time.monotonic()
            log.debug("librdkafka: %s", err)

    def _check_login(self) -> None:
        """Raise if librdkafka has reported that this client cannot log in."""
        self._admin.poll(0)  # serves the error callback
        if self._login_error is not None:
            raise KafkaUnavailableError(*self._login_error)

    def _result(self, future: Any, partition: TopicPartition | None = None) -> Any:
        started = time.monotonic()
        deadline = started + self._timeout
        refreshed = False
        while True:
            try:
                answer = future.result(timeout=min(_POLL_SLICE_S, max(0.0, deadline - time.monotonic())))
            except KafkaException as err:
                raise _from_confluent(err, partition) from err
            except TimeoutError as err:  # concurrent.futures timeout: the request is still pending
                self._check_login()
                now = time.monotonic()
                if now >= deadline:
                    raise KafkaUnavailableError("REQUEST_TIMED_OUT", str(self.spec), partition) from err
                # librdkafka says so once, when the last connection goes; an answer since clears it.
                down = self._all_down_since
                if down is not None and now - max(down, started) >= ALL_DOWN_GRACE_S:
                    raise KafkaUnavailableError(
                        "_ALL_BROKERS_DOWN", f"no broker of {self.spec} accepts a connection", partition
                    ) from err
                if not refreshed and self._lost_broker and down is None and now - started >= _REFRESH_AFTER_S:
                    # A broker went away and the request still waits, typically for the controller
                    # after a failover: librdkafka learns the new one only from metadata, which it
                    # refreshes every few minutes on its own. One Metadata request lets it go on.
                    refreshed = True
                    self._lost_broker = False
                    with contextlib.suppress(KafkaException):
                        self._admin.list_topics(timeout=max(0.1, deadline - now))
            else:
                self._all_down_since = None
                return answer

    def _read(self, read: Callable[[], T]) -> T:
        """Run an idempotent read, once more if the broker answering it went away mid-request.

        librdkafka fails the request in flight on a connection that closes (a broker stopping or
        restarting) instead of sending it to another broker; by the second try it knows that
        broker is down. Writes are never re-sent: they may have taken effect."""
        try:
            return read()
        except KafkaUnavailableError as err:
            if err.name != "_TRANSPORT":
                raise
            log.info("re-sending a read after a lost connection: %s", err)
            return read()

    def _kafka_python(self) -> KafkaAdminClient:
        if self._kp is None:
            # kafka-python reports a failed login only as a bootstrap timeout; librdkafka names it.
            # Ask through librdkafka first (one DescribeCluster) so a bad password fails at once.
            self.describe_cluster()
            try:
                self._kp = KafkaAdminClient(**self.spec.kafka_python_config())
            except kp_errors.KafkaError as err:
                raise _from_kafka_python(err) from err
        return self._kp

    def _kp_call(self, fn: Callable[[KafkaAdminClient], T]) -> T:
        try:
            try:
                return fn(self._kafka_python())
            except (kp_errors.UnknownBrokerIdError, kp_errors.KafkaConnectionError):
                # A broker that restarted, joined or stopped since kafka-python's last metadata: it
                # keeps no way to refresh on demand, so start it again from bootstrap and retry once
                # (a request sent to a broker stopped a moment before was refused, 4 of 30 runs of
                # test_eligible_leader_replicas_follow_the_isr_below_min_isr on a loaded machine).
                self._close_kafka_python()
                return fn(self._kafka_python())
        except kp_errors.KafkaError as err:
            raise _from_kafka_python(err) from err

    def _close_kafka_python(self) -> None:
        if self._kp is not None:
            self._kp.close()
            self._kp = None

    # ----- read ------------------------------------------------------------------------------
    def describe_cluster(self) -> ClusterDescription:
        result = self._read(lambda: self._result(self._admin.describe_cluster()))
        where = f"DescribeCluster of {self.spec.bootstrap_servers}"
        metadata_check.check_cluster_id(result.cluster_id, where)
        metadata_check.check_brokers(result.nodes, where)
        controller = result.controller.id if result.controller is not None else None
        brokers = tuple(
            sorted(
                (BrokerEndpoint(n.id, n.host, n.port, n.rack) for n in result.nodes),
                key=lambda b: b.id,
            )
        )
        return ClusterDescription(result.cluster_id, controller, brokers)

    def _metadata(self) -> Any:
        """librdkafka's metadata of every topic, checked (metadata_check) before any of it is used."""
        self._check_login()
        try:
            metadata = self._admin.list_topics(timeout=self._timeout)
        except KafkaException as err:
            self._check_login()
            raise _from_confluent(err) from err
        where = f"Metadata of {self.spec.bootstrap_servers}"
        metadata_check.check_cluster_id(metadata.cluster_id, where)
        metadata_check.check_brokers(metadata.brokers.values(), where)
        for name, topic in metadata.topics.items():
            metadata_check.check_topic(name, topic.partitions, where)
        return metadata

    def read_cluster(self, *, with_sizes: bool = True) -> ClusterModel:
        description = self.describe_cluster()
        metadata = self._metadata()
        topics = sorted(t for t in metadata.topics if not t.startswith("__"))
        configs = self._describe_configs(ConfigResource.Type.TOPIC, topics)
        live = {b.id: b for b in description.brokers}
        elr = self._eligible_leaders(metadata, configs)
        # Where the data lives goes with its size: the log directories, their cordons (KIP-1066) and volumes.
        brokers = self.broker_configs(sorted(live)) if with_sizes else {}
        configured = {b: log_dirs_of(c) for b, c in brokers.items()}
        if brokers and not any(CORDONED_LOG_DIRS in c for c in brokers.values()):
            say_lacking(self.spec.bootstrap_servers, Feature.CORDONS)  # Kafka < 4.3: no directory is cordoned
        # A partition's size is its leader's log; where each replica lives matters only on brokers with
        # several directories (JBOD): those are asked about every replica they host, the others only
        # about the partitions they lead (a third of the DescribeLogDirs work at replication factor 3).
        jbod = {b for b, dirs in configured.items() if len(dirs) > 1}
        described = self._describe_log_dirs(_size_requests(metadata, topics, jbod)) if with_sizes else _LogDirs()
        sizes = {key: r.size for key, r in described.replicas.items()}
        log_dirs = {b: _with_volumes(dirs, described.volumes.get(b, {})) for b, dirs in configured.items()}
        tiered = self._tiered_topics(metadata, configs, sizes) if with_sizes else {}

        builder = ClusterBuilder(cluster_name=description.cluster_id)
        referenced: set[int] = set()
        for name in topics:
            for p in metadata.topics[name].partitions.values():
                referenced.update(p.replicas)
        for broker_id in sorted(set(live) | referenced):
            # A broker that hosts replicas but is not in the metadata is down (Kafka lists live brokers only).
            endpoint = live.get(broker_id)
            builder.add_broker(
                broker_id,
                rack=endpoint.rack if endpoint else None,
                alive=endpoint is not None,
                log_dirs=log_dirs.get(broker_id, ()),
                fetch_last_tiered=brokers.get(broker_id, {}).get(FETCH_LAST_TIERED_OFFSET) == "true",
            )
        for name in topics:
            entries = configs.get(name, {})
            min_isr = entries.get(MIN_INSYNC_REPLICAS)
            unclean = entries.get(UNCLEAN_LEADER_ELECTION)
            # Effective values, wherever they are set (the topic, a cluster-wide broker default, the
            # brokers' server.properties, Kafka's default): a broker default of min.insync.replicas=2
            # protects a topic exactly as the topic's own setting does.
            builder.set_topic(
                name,
                min_insync_replicas=int(min_isr.value) if min_isr is not None and min_isr.value else None,
                unclean_leader_election=unclean.value == "true" if unclean is not None and unclean.value else None,
            )
            for index, p in sorted(metadata.topics[name].partitions.items()):
                tp = TopicPartition(name, index)
                leader = p.leader if p.leader >= 0 else None
                # The partition's size is its leader's log; offline partitions take their largest replica.
                if leader is not None and (tp, leader) in sizes:
                    size = sizes[(tp, leader)]
                else:
                    size = max((sizes.get((tp, b), 0) for b in p.replicas), default=0)
                split = tiered.get(tp)
                builder.add_partition(
                    name,
                    index,
                    list(p.replicas),
                    remote_bytes=None if split is None else split.remote,
                    untiered_bytes=None if split is None else min(split.untiered, float(size)),
                    leader=leader,
                    leader_given=True,
                    isr=list(p.isrs),
                    # Kafka keeps ELR empty where the ISR is at or above min ISR: only those below were read.
                    elr=None if elr is None else [b for b in elr.get(tp, ()) if b in p.replicas],
                    size_bytes=float(size),
                    log_dirs=[_dir_of(described, tp, b, log_dirs.get(b, ())) for b in p.replicas]
                    if with_sizes
                    else None,
                )
        return builder.build()

    def _tiered_topics(
        self, metadata: Any, configs: Mapping[str, Mapping[str, Any]], sizes: Mapping[tuple[TopicPartition, int], int]
    ) -> dict[TopicPartition, TieredBytes]:
        """Remote and untiered bytes of every partition of a topic with remote storage (ListOffsets
        earliest, earliest-local, latest-tiered and latest, see kafka.tiering), priced by its leader's log."""
        leaders = {
            TopicPartition(name, index): p.leader
            for name in sorted(configs)
            if (entry := configs[name].get(REMOTE_STORAGE_ENABLE)) is not None and entry.value == "true"
            for index, p in metadata.topics[name].partitions.items()
            if p.leader >= 0
        }
        if not leaders:
            return {}
        specs = (KpOffsetSpec.EARLIEST, KpOffsetSpec.EARLIEST_LOCAL, KpOffsetSpec.LATEST_TIERED, KpOffsetSpec.LATEST)
        wanted = [KpTopicPartition(tp.topic, tp.partition) for tp in sorted(leaders)]
        found = [self._kp_call(lambda kp: kp.list_partition_offsets(dict.fromkeys(wanted, spec))) for spec in specs]  # noqa: B023
        out = {}
        for kp_tp in wanted:
            tp = TopicPartition(kp_tp.topic, kp_tp.partition)
            offsets = TieredOffsets(*(int(f[kp_tp].offset) for f in found))
            out[tp] = tiered_bytes(float(sizes.get((tp, leaders[tp]), 0)), offsets)
        return out

    def _eligible_leaders(
        self, metadata: Any, configs: Mapping[str, Mapping[str, Any]]
    ) -> dict[TopicPartition, list[int]] | None:
        """Eligible leader replicas (KIP-966) of the topics with a partition at or below its min ISR
        or offline, by DescribeTopicPartitions (API 75, which librdkafka does not expose); None when
        no partition is there, or the cluster predates the API (Kafka < 3.8, said once: kafka.lacking)."""
        wanted = []
        for name, entries in sorted(configs.items()):
            min_isr = entries.get(MIN_INSYNC_REPLICAS)
            floor = int(min_isr.value) if min_isr is not None and min_isr.value else 1
            if any(len(p.isrs) <= floor or p.leader < 0 for p in metadata.topics[name].partitions.values()):
                wanted.append(name)
        if not wanted:
            return None
        out: dict[TopicPartition, list[int]] = {}
        cursor = None
        while True:
            try:
                page = self._kp_call(lambda kp: kp.describe_topic_partitions(wanted, cursor=cursor))  # noqa: B023
            except KafkaError as err:
                if err.name in ("UNSUPPORTED_VERSION", "IncompatibleBrokerVersion"):
                    say_lacking(self.spec.bootstrap_servers, Feature.DESCRIBE_TOPIC_PARTITIONS)
                    return None
                raise
            for topic in page["topics"]:
                for p in topic["partitions"]:
                    out[TopicPartition(topic["name"], p["partition_index"])] = list(p["eligible_leader_replicas"] or [])
            cursor = page["next_cursor"]
            if cursor is None:
                return out

    def replica_sizes(self) -> dict[tuple[TopicPartition, int], int]:
        metadata = self._metadata()
        return self._log_dir_sizes(_size_requests(metadata, list(metadata.topics)))

    def _log_dir_sizes(self, wanted: Mapping[int, Mapping[str, list[int]]]) -> dict[tuple[TopicPartition, int], int]:
        return {key: r.size for key, r in self._describe_log_dirs(wanted).replicas.items()}

    def replica_log_dirs(
        self, replicas: Iterable[tuple[TopicPartition, int]]
    ) -> dict[tuple[TopicPartition, int], ReplicaLogDir]:
        asked = set(replicas)
        if not asked:
            return {}
        live = {b.id for b in self.describe_cluster().brokers}
        wanted: dict[int, dict[str, list[int]]] = {}
        for tp, b in sorted(asked):
            if b in live:
                wanted.setdefault(b, {}).setdefault(tp.topic, []).append(tp.partition)
        found = self._describe_log_dirs(wanted).replicas
        return {key: found[key] for key in asked if key in found}

    def _describe_log_dirs(self, wanted: Mapping[int, Mapping[str, list[int]]]) -> _LogDirs:
        """DescribeLogDirs to each broker for just the partitions asked of it: each replica's directory
        and size (and future replica, see ReplicaLogDir), and each directory's volume size and free space.

        Naming the partitions matters at scale: without them kafka-python first fetches (and
        decodes, in Python) the whole metadata and then sends every partition of the cluster to
        every broker.
        """
        out = _LogDirs()
        for broker, topics in sorted(wanted.items()):
            if not topics:
                continue
            per_broker = self._kp_call(lambda kp: kp.describe_log_dirs(dict(topics), brokers=[broker]))  # noqa: B023
            for entry in per_broker:
                b = int(entry["broker"])
                current: dict[tuple[TopicPartition, int], tuple[str, int]] = {}
                future: dict[tuple[TopicPartition, int], tuple[str, int, int]] = {}
                for log_dir in entry["log_dirs"]:
                    if log_dir.get("error_code", 0):
                        continue  # an offline directory (KAFKA_STORAGE_ERROR): nothing in it is readable
                    path = log_dir["log_dir"]
                    out.volumes.setdefault(b, {})[path] = (
                        log_dir.get("total_bytes", -1),
                        log_dir.get("usable_bytes", -1),
                    )
                    for topic in log_dir["topics"]:
                        for p in topic["partitions"]:
                            key = (TopicPartition(topic["name"], p["partition_index"]), b)
                            if p.get("is_future_key"):
                                future[key] = (path, int(p["partition_size"]), int(p["offset_lag"]))
                            else:
                                current[key] = (path, int(p["partition_size"]))
                for key, (path, size) in current.items():
                    moving = future.get(key)
                    out.replicas[key] = (
                        ReplicaLogDir(path, size)
                        if moving is None
                        else ReplicaLogDir(path, size, moving[0], moving[1], moving[2])
                    )
        return out

    def log_end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        wanted = {CkTopicPartition(tp.topic, tp.partition): latest for tp in partitions}
        if not wanted:
            return {}

        def read() -> dict[TopicPartition, int]:
            out: dict[TopicPartition, int] = {}
            for ck, future in self._admin.list_offsets(wanted).items():
                tp = TopicPartition(ck.topic, ck.partition)
                offset = int(self._result(future, tp).offset)
                if offset < 0:
                    # librdkafka answers OFFSET_INVALID (-1001), not an error, when the connection
                    # to the leader drops mid-request: a lost answer, not an offset.
                    raise KafkaUnavailableError("_TRANSPORT", f"no log end offset (librdkafka gave {offset})", tp)
                out[tp] = offset
            return out

        return self._read(functools.partial(self._settled, read))

    def _settled(self, read: Callable[[], T]) -> T:
        """Run a per-partition read again while it fails with a transient error (leadership moving).

        librdkafka sends the leader epoch of its cached metadata, which it refreshes only every few
        minutes: after an election the broker fences that epoch (FENCED_LEADER_EPOCH) until the
        client learns the new one, so each retry first refreshes the metadata."""
        deadline = time.monotonic() + self._timeout
        pause = 0.05
        while True:
            try:
                return read()
            except KafkaError as err:
                if err.name not in TRANSIENT_PARTITION_ERRORS or time.monotonic() + pause > deadline:
                    raise
                log.info("reading again after a transient error: %s", err)
                time.sleep(pause)
                pause = min(1.0, pause * 2)
                with contextlib.suppress(KafkaException):
                    self._admin.list_topics(timeout=max(0.1, deadline - time.monotonic()))

    def _describe_configs(self, rtype: Any, names: Iterable[str]) -> dict[str, dict[str, Any]]:
        resources = [ConfigResource(rtype, str(n)) for n in names]
        batches = self._batches(rtype, resources)
        out: dict[str, dict[str, Any]] = {}
        for batch in batches:
            if batch:
                out.update(self._read(functools.partial(self._configs_of, batch)))
        return out

    def _configs_of(self, batch: list[Any]) -> dict[str, dict[str, Any]]:
        return {res.name: self._result(future) for res, future in self._admin.describe_configs(batch).items()}

    def _batches(self, rtype: Any, resources: list[Any]) -> list[list[Any]]:
        """Group config resources into calls: librdkafka takes one BROKER resource per call
        (each goes to its own broker), topics all in one.

        Before a broker-addressed call, DescribeCluster refreshes librdkafka's broker list: a
        broker that restarted since the last metadata is otherwise unknown to librdkafka and the
        call waits out its whole timeout. A broker not in the cluster fails at once, by name.
        """
        if rtype != ConfigResource.Type.BROKER:
            return [resources]
        if resources:
            live = {b.id for b in self.describe_cluster().brokers}
            down = sorted(int(r.name) for r in resources if int(r.name) not in live)
            if down:
                raise KafkaUnavailableError(
                    "BROKER_NOT_AVAILABLE", f"broker(s) {down} not in the live brokers {sorted(live)} of {self.spec}"
                )
        return [[r] for r in resources]

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        """Every config of each topic with its effective value (defaults included)."""
        raw = self._describe_configs(ConfigResource.Type.TOPIC, topics)
        return {t: {k: e.value for k, e in entries.items() if e.value is not None} for t, entries in raw.items()}

    def broker_configs(self, broker_ids: Iterable[int]) -> dict[int, dict[str, str]]:
        raw = self._describe_configs(ConfigResource.Type.BROKER, [str(b) for b in broker_ids])
        return {int(b): {k: e.value for k, e in entries.items() if e.value is not None} for b, entries in raw.items()}

    def list_reassignments(self) -> dict[TopicPartition, OngoingReassignment]:
        raw = self._kp_call(lambda kp: kp.list_partition_reassignments())
        return {
            TopicPartition(tp.topic, tp.partition): OngoingReassignment(
                replicas=tuple(r["replicas"]),
                adding=tuple(r["adding_replicas"]),
                removing=tuple(r["removing_replicas"]),
            )
            for tp, r in raw.items()
        }

    def consumer_groups(self) -> list[ConsumerGroupInfo]:
        return self._read(self._consumer_groups)

    def _consumer_groups(self) -> list[ConsumerGroupInfo]:
        listing = self._result(self._admin.list_consumer_groups())
        if listing.errors:
            # A broker that did not answer may coordinate groups: a partial list would read as
            # groups gone and their committed offsets as consumption going backwards.
            raise _from_confluent(listing.errors[0])
        group_ids = sorted(g.group_id for g in listing.valid)
        if not group_ids:
            return []
        described = {g: self._result(f) for g, f in self._admin.describe_consumer_groups(group_ids).items()}
        # librdkafka does not expose the members' subscriptions; kafka-python decodes them.
        raw = self._kp_call(lambda kp: kp.describe_groups(group_ids))
        subscriptions: dict[tuple[str, str], tuple[str, ...]] = {}
        for group_id, info in raw.items():
            for m in info.get("members", []):
                meta = m.get("member_metadata")
                topics = getattr(meta, "topics", None) if not isinstance(meta, dict) else meta.get("topics")
                subscriptions[(group_id, m["member_id"])] = tuple(topics or ())
        committed: dict[str, dict[TopicPartition, int]] = {}
        for group_id in group_ids:
            request = [ConsumerGroupTopicPartitions(group_id)]
            for _, future in self._admin.list_consumer_group_offsets(request).items():
                result = self._result(future)
                committed[group_id] = {
                    TopicPartition(tp.topic, tp.partition): int(tp.offset)
                    for tp in result.topic_partitions
                    if tp.offset >= 0
                }
        all_tps = {tp for offsets in committed.values() for tp in offsets}
        log_end = self.log_end_offsets(sorted(all_tps))
        groups = []
        for group_id in group_ids:
            d = described[group_id]
            members = []
            for m in d.members:
                assignment: dict[str, list[int]] = {}
                for tp in m.assignment.topic_partitions if m.assignment else []:
                    assignment.setdefault(tp.topic, []).append(tp.partition)
                members.append(
                    ConsumerGroupMember(
                        member_id=m.member_id,
                        client_id=m.client_id,
                        host=m.host,
                        subscription=subscriptions.get((group_id, m.member_id), tuple(sorted(assignment))),
                        assignment={t: tuple(sorted(ps)) for t, ps in sorted(assignment.items())},
                    )
                )
            offsets = committed.get(group_id, {})
            groups.append(
                ConsumerGroupInfo(
                    group_id=group_id,
                    state=_group_state(d.state),
                    protocol_type="consumer" if not d.is_simple_consumer_group else "",
                    assignor=d.partition_assignor or "",
                    members=tuple(members),
                    committed=offsets,
                    log_end={tp: log_end[tp] for tp in offsets if tp in log_end},
                )
            )
        return groups

    # ----- act -------------------------------------------------------------------------------
    def alter_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, KafkaError | None]:
        out: dict[TopicPartition, KafkaError | None] = {}
        request = {}
        for tp, r in targets.items():
            if r is not None and not r:
                # kafka-python refuses an empty list before sending; Kafka would answer this.
                out[tp] = KafkaError("INVALID_REPLICA_ASSIGNMENT", "empty replica list", tp)
            else:
                request[KpTopicPartition(tp.topic, tp.partition)] = None if r is None else [int(b) for b in r]
        if not request:
            return out
        raw = self._kp_call(lambda kp: kp.alter_partition_reassignments(request))
        for kp_tp, err in raw.items():
            tp = TopicPartition(kp_tp.topic, kp_tp.partition)
            out[tp] = None if err is None else KafkaError(error_name(err.errno), err.description, tp)
        for tp in targets:
            out.setdefault(tp, KafkaError("UNKNOWN_SERVER_ERROR", "no result for this partition", tp))
        return out

    def alter_replica_log_dirs(
        self, moves: Mapping[tuple[TopicPartition, int], str]
    ) -> dict[tuple[TopicPartition, int], KafkaError | None]:
        """Through kafka-python (librdkafka has no AlterReplicaLogDirs), one request per broker. A replica
        on a broker that is down gets BROKER_NOT_AVAILABLE (kafka-python would fail the whole call), so a
        caller asks again once the broker is back."""
        if not moves:
            return {}
        live = {b.id for b in self.describe_cluster().brokers}
        out: dict[tuple[TopicPartition, int], KafkaError | None] = {
            (tp, b): KafkaError("BROKER_NOT_AVAILABLE", f"broker {b} is not among the live brokers {sorted(live)}", tp)
            for (tp, b) in moves
            if b not in live
        }
        request = {
            KpTopicPartitionReplica(tp.topic, tp.partition, b): path for (tp, b), path in moves.items() if b in live
        }
        raw = self._kp_call(lambda kp: kp.alter_replica_log_dirs(request)) if request else {}
        for tpr, err in raw.items():
            tp = TopicPartition(tpr.topic, tpr.partition)
            out[(tp, tpr.broker_id)] = (
                None if err is kp_errors.NoError else KafkaError(error_name(err.errno), err.description, tp)
            )
        for key in moves:
            out.setdefault(key, KafkaError("UNKNOWN_SERVER_ERROR", "no result for this replica", key[0]))
        return out

    def elect_preferred_leaders(
        self, partitions: Sequence[TopicPartition], *, batch_size: int = DEFAULT_ELECTION_BATCH
    ) -> dict[TopicPartition, KafkaError | None]:
        if batch_size < 1:
            raise ValueError(f"election: field 'electionBatchSize' must be >= 1, got {batch_size!r}")
        out: dict[TopicPartition, KafkaError | None] = {}
        for start in range(0, len(partitions), batch_size):
            batch = [CkTopicPartition(tp.topic, tp.partition) for tp in partitions[start : start + batch_size]]
            # No keyword timeouts: confluent-kafka 2.16.1 raises SystemError with request_timeout=.
            result = self._result(self._admin.elect_leaders(ElectionType.PREFERRED, batch))
            for ck, err in result.items():
                tp = TopicPartition(ck.topic, ck.partition)
                if err is None or error_name(err.code()) == "ELECTION_NOT_NEEDED":
                    out[tp] = None
                else:
                    out[tp] = _from_confluent(err, tp)
        return out

    def _alter(self, rtype: Any, changes: Mapping[str, Mapping[str, ConfigValue]]) -> None:
        # Kafka refuses two operations on one config key in a request: a ListChange's SUBTRACT goes
        # in a second request, after its APPEND (an entry being replaced is never missing meanwhile).
        _check_value_sizes(changes)
        for phase in (_set_entries, _subtract_entries):
            resources = []
            for name, configs in changes.items():
                entries = [entry for key, value in configs.items() for entry in phase(key, value)]
                if entries:
                    resources.append(ConfigResource(rtype, name, incremental_configs=entries))
            for batch in self._batches(rtype, resources):
                if batch:
                    for _, future in self._admin.incremental_alter_configs(batch).items():
                        self._result(future)

    def alter_broker_configs(self, changes: Mapping[int, Mapping[str, str | None]]) -> None:
        self._alter(ConfigResource.Type.BROKER, {str(b): c for b, c in changes.items()})

    def alter_topic_configs(self, changes: Mapping[str, Mapping[str, ConfigValue]]) -> None:
        self._alter(ConfigResource.Type.TOPIC, changes)

    def close(self) -> None:
        self._close_kafka_python()
        # librdkafka has no close(): dropping the last reference destroys the handle and joins
        # its threads now, rather than whenever the garbage collector gets to it.
        self._admin_client = None

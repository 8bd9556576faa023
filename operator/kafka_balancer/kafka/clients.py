"""The two client libraries' connections to one cluster, and how a request through them is waited for.

confluent-kafka (librdkafka) does metadata, configs, offsets, groups and elections. kafka-python does
what confluent-kafka lacks (AlterPartitionReassignments, ListPartitionReassignments, DescribeLogDirs and
more); its client is opened on first use. Every error either returns becomes a :class:`KafkaError`
named as Kafka names it (:func:`from_confluent`, :func:`from_kafka_python`).
"""

from __future__ import annotations

import contextlib
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import kafka.errors as kp_errors
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient

from kafka_balancer.kafka import client_log, metadata_check
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.errors import TRANSIENT_PARTITION_ERRORS, UNAVAILABLE_ERRORS, error_name
from kafka_balancer.kafka.port import (
    BrokerEndpoint,
    ClusterDescription,
    KafkaError,
    KafkaUnavailableError,
    PortClosedError,
    TopicPartition,
)

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


def from_confluent(err: Any, partition: TopicPartition | None = None) -> KafkaError:
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


def from_kafka_python(err: Any, partition: TopicPartition | None = None) -> KafkaError:
    """A kafka-python error as our KafkaError."""
    code = getattr(err, "errno", None)
    if isinstance(code, int):
        name = error_name(code)
        cls = KafkaUnavailableError if name in UNAVAILABLE_ERRORS else KafkaError
        return cls(name, str(err), partition)
    if isinstance(err, _KP_UNAVAILABLE):
        return KafkaUnavailableError(type(err).__name__, str(err), partition)
    return KafkaError(type(err).__name__, str(err), partition)


class Clients:
    """The clients of one cluster: librdkafka's AdminClient from the start, kafka-python's on first use."""

    def __init__(self, spec: ConnectionSpec):
        self.spec = spec
        self.timeout = spec.request_timeout_s
        # librdkafka retries a failed login until the request times out; its error callback says
        # at once that credentials or TLS are wrong, and result() turns that into the error.
        self._login_error: tuple[str, str] | None = None  # (Kafka error name, message)
        self._lost_broker = False  # librdkafka reported a broken connection since the last refresh
        self._all_down_since: float | None = None  # librdkafka reported every broker down, and no answer came since
        config = spec.confluent_config()
        # Through a weak reference: librdkafka's handle must not keep unclosed clients alive.
        me = weakref.ref(self)

        def on_error(err: Any) -> None:
            clients = me()
            if clients is not None:
                clients._on_error(err)

        config["error_cb"] = on_error
        # librdkafka's own log lines (a refused connection, every few ms) go to Python logging, rate-limited
        # (kafka.client_log), not straight to stderr: the errors that matter reach the caller as KafkaErrors.
        config["logger"] = _LIBRDKAFKA_LOG
        self._admin_client: AdminClient | None = AdminClient(config)
        self._kp: KafkaAdminClient | None = None

    @property
    def admin(self) -> AdminClient:
        """librdkafka's client; PortClosedError once closed."""
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

    def check_login(self) -> None:
        """Raise if librdkafka has reported that this client cannot log in."""
        self.admin.poll(0)  # serves the error callback
        if self._login_error is not None:
            raise KafkaUnavailableError(*self._login_error)

    def result(self, future: Any, partition: TopicPartition | None = None) -> Any:
        """The answer of a librdkafka request, or the KafkaError it failed with (see ALL_DOWN_GRACE_S)."""
        started = time.monotonic()
        deadline = started + self.timeout
        refreshed = False
        while True:
            try:
                answer = future.result(timeout=min(_POLL_SLICE_S, max(0.0, deadline - time.monotonic())))
            except KafkaException as err:
                raise from_confluent(err, partition) from err
            except TimeoutError as err:  # concurrent.futures timeout: the request is still pending
                self.check_login()
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
                        self.admin.list_topics(timeout=max(0.1, deadline - now))
            else:
                self._all_down_since = None
                return answer

    def read(self, read: Callable[[], T]) -> T:
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

    def settled(self, read: Callable[[], T]) -> T:
        """Run a per-partition read again while it fails with a transient error (leadership moving).

        librdkafka sends the leader epoch of its cached metadata, which it refreshes only every few
        minutes: after an election the broker fences that epoch (FENCED_LEADER_EPOCH) until the
        client learns the new one, so each retry first refreshes the metadata."""
        deadline = time.monotonic() + self.timeout
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
                    self.admin.list_topics(timeout=max(0.1, deadline - time.monotonic()))

    def _kafka_python(self) -> KafkaAdminClient:
        if self._kp is None:
            # kafka-python reports a failed login only as a bootstrap timeout; librdkafka names it.
            # Ask through librdkafka first (one DescribeCluster) so a bad password fails at once.
            self.describe_cluster()
            try:
                self._kp = KafkaAdminClient(**self.spec.kafka_python_config())
            except kp_errors.KafkaError as err:
                raise from_kafka_python(err) from err
        return self._kp

    def kp_call(self, fn: Callable[[KafkaAdminClient], T]) -> T:
        """``fn`` on kafka-python's client (opened on first use); its errors as KafkaErrors."""
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
            raise from_kafka_python(err) from err

    def _close_kafka_python(self) -> None:
        if self._kp is not None:
            self._kp.close()
            self._kp = None

    def describe_cluster(self) -> ClusterDescription:
        """DescribeCluster, checked (metadata_check) before any of it is used."""
        result = self.read(lambda: self.result(self.admin.describe_cluster()))
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

    def live_brokers(self) -> set[int]:
        """The ids of the brokers DescribeCluster lists (Kafka lists live brokers only)."""
        return {b.id for b in self.describe_cluster().brokers}

    def metadata(self) -> Any:
        """librdkafka's metadata of every topic, checked (metadata_check) before any of it is used."""
        self.check_login()
        try:
            metadata = self.admin.list_topics(timeout=self.timeout)
        except KafkaException as err:
            self.check_login()
            raise from_confluent(err) from err
        where = f"Metadata of {self.spec.bootstrap_servers}"
        metadata_check.check_cluster_id(metadata.cluster_id, where)
        metadata_check.check_brokers(metadata.brokers.values(), where)
        for name, topic in metadata.topics.items():
            metadata_check.check_topic(name, topic.partitions, where)
        return metadata

    def close(self) -> None:
        self._close_kafka_python()
        # librdkafka has no close(): dropping the last reference destroys the handle and joins
        # its threads now, rather than whenever the garbage collector gets to it.
        self._admin_client = None

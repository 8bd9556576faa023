"""A server that speaks Kafka and answers Metadata and DescribeCluster with what a hostile (or broken)
cluster might say: the emulator's brokers on 127.0.0.1 with those two answers rewritten.

    with hostile_server("partition-index-int32-max") as server:
        run(["kafka-balancer", "sample", "--bootstrap-servers", server.bootstrap_servers, ...])

Every shape in :data:`SHAPES` is legal on the wire (INT32 ids, any string): only what they say is
wrong. The rest of the protocol (ListOffsets, DescribeLogDirs, configs, groups) is the emulator's, so
a client that trusts the metadata goes on and asks the brokers about what it was told.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from kafka.protocol.metadata.metadata import MetadataResponse
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.clients import Clients
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.model import ClusterBuilder
from kafka_balancer.sandbox import EmulatedCluster, apis_cluster
from kafka_balancer.sandbox.protocol import Api, Call

INT32_MAX = 2**31 - 1
METADATA, DESCRIBE_CLUSTER = 3, 60

Topics = list[Any]  # MetadataResponse.MetadataResponseTopic
Brokers = list[Any]  # MetadataResponse.MetadataResponseBroker


def _partition(topics: Topics, index: int) -> Any:
    return topics[0].partitions[index]


def _index(value: int) -> Callable[[Topics, Brokers], None]:
    def shape(topics: Topics, _brokers: Brokers) -> None:
        _partition(topics, 1).partition_index = value

    return shape


def _replicas(replicas: list[int], isr: list[int] | None = None, leader: int | None = None) -> Any:
    def shape(topics: Topics, _brokers: Brokers) -> None:
        p = _partition(topics, 1)
        p.replica_nodes = replicas
        p.isr_nodes = replicas if isr is None else isr
        p.leader_id = replicas[0] if leader is None and replicas else (-1 if leader is None else leader)

    return shape


def _duplicate_partition(topics: Topics, _brokers: Brokers) -> None:
    _partition(topics, 1).partition_index = _partition(topics, 0).partition_index


def _negative_broker(topics: Topics, brokers: Brokers) -> None:
    brokers[2].node_id = -7
    for p in topics[0].partitions:
        p.replica_nodes = [-7 if b == 3 else b for b in p.replica_nodes]
        p.isr_nodes = [-7 if b == 3 else b for b in p.isr_nodes]
        p.leader_id = -7 if p.leader_id == 3 else p.leader_id


def _duplicate_broker(_topics: Topics, brokers: Brokers) -> None:
    brokers[2].node_id = brokers[1].node_id


def _port_out_of_range(_topics: Topics, brokers: Brokers) -> None:
    brokers[2].port += 65536  # the same port modulo 2**16: a client that truncates connects anyway


def _host(host: str) -> Callable[[Topics, Brokers], None]:
    def shape(_topics: Topics, brokers: Brokers) -> None:
        brokers[2].host = host

    return shape


def _illegal_topic_name(topics: Topics, _brokers: Brokers) -> None:
    topics[0].name = "../t\nx"


def _duplicate_topic(topics: Topics, _brokers: Brokers) -> None:
    topics.append(topics[0])


# name -> how the answer is rewritten (topic "t" has partitions 0 and 1 on brokers 1, 2, 3).
SHAPES: dict[str, Callable[[Topics, Brokers], None]] = {
    "partition-index-int32-max": _index(INT32_MAX),
    "partition-index-negative": _index(-1),
    "partition-index-gap": _index(5),
    "broker-id-negative": _negative_broker,
    "broker-id-duplicate": _duplicate_broker,
    "broker-port-out-of-range": _port_out_of_range,
    "broker-host-not-printable": _host("127.0.0.1\nx"),
    "replica-duplicate": _replicas([1, 1, 2]),
    "replica-negative": _replicas([1, -3, 2]),
    "replicas-empty": _replicas([], isr=[], leader=1),
    "leader-not-a-replica": _replicas([1, 2], isr=[1, 2], leader=3),
    "isr-not-replicas": _replicas([1, 2], isr=[1, 2, 3]),
    "topic-name-illegal": _illegal_topic_name,
}
# Not hostile as such. Entries listed twice: librdkafka keeps one of each (its metadata is keyed by
# topic and by partition), so what is used is consistent. A replica on a broker the metadata does not
# list: Kafka lists live brokers only, so that broker is down (here the largest id there can be).
EXTRA_SHAPES: dict[str, Callable[[Topics, Brokers], None]] = {
    "topic-duplicate": _duplicate_topic,
    "partition-index-duplicate": _duplicate_partition,
    "replica-on-unlisted-broker": _replicas([2, 1, INT32_MAX], isr=[2, 1]),
}


def _model() -> Any:
    builder = ClusterBuilder(cluster_name="hostile")
    for b in (1, 2, 3):
        builder.add_broker(b, rack=None)
    builder.set_topic("t")
    builder.add_partition("t", 0, [1, 2, 3], size_bytes=1000.0)
    builder.add_partition("t", 1, [2, 3, 1], size_bytes=1000.0)
    return builder.build()


def _answers(cluster: EmulatedCluster, shape: Callable[[Topics, Brokers], None]) -> tuple[Any, Any]:
    """Metadata and DescribeCluster handlers that build the emulator's answer, then rewrite it."""

    def rewritten(call: Call) -> tuple[Topics, Brokers]:
        state = call.state
        topics = [apis_cluster._md_topic(state, t) for t in sorted(state.topics.values(), key=lambda t: t.name)]
        brokers = apis_cluster._md_brokers(state, call.host)
        shape(topics, brokers)
        return topics, brokers

    def metadata(call: Call) -> Any:
        topics, brokers = rewritten(call)
        wanted = call.body.topics
        if wanted:  # the topics asked for by name (an unknown name is left out: the client retries)
            names = {t.name for t in wanted}
            topics = [t for t in topics if t.name in names]
        return MetadataResponse(
            version=call.version,
            throttle_time_ms=0,
            brokers=brokers,
            cluster_id=call.state.cluster_id,
            controller_id=call.state.controller_id,
            topics=topics,
            authorized_operations=None,
            error_code=0,
        )

    def describe_cluster(call: Call) -> Any:
        _, brokers = rewritten(call)
        return apis_cluster.describe_cluster_response(call, [(b.node_id, b.host, b.port, b.rack) for b in brokers])

    return metadata, describe_cluster


@contextlib.contextmanager
def hostile_server(name: str) -> Iterator[EmulatedCluster]:
    """The emulator answering Metadata and DescribeCluster in the shape ``name`` (of SHAPES or EXTRA_SHAPES)."""
    shape = {**SHAPES, **EXTRA_SHAPES}[name]
    with EmulatedCluster.start(_model()) as cluster:
        router = cluster._router
        metadata, describe = _answers(cluster, shape)
        for key, handler in ((METADATA, metadata), (DESCRIBE_CLUSTER, describe)):
            api = router.apis[key]
            router.register(Api(key, api.request, api.response, api.min_version, api.max_version, handler))
        yield cluster


@contextlib.contextmanager
def unanswering_clusters(count: int) -> Iterator[list[str]]:
    """``count`` one-broker clusters (their bootstrap servers) that accept connections and answer
    ApiVersions but never Metadata, as a hung broker does: a client waits out its whole request timeout.
    On leaving, the held requests are answered and the clusters closed."""
    builder = ClusterBuilder(cluster_name="unanswering")
    builder.add_broker(1, rack=None)
    release = threading.Event()
    with contextlib.ExitStack() as stack:
        servers = []
        for _ in range(count):
            cluster = stack.enter_context(EmulatedCluster.start(builder.build()))
            router = cluster._router
            api = router.apis[METADATA]

            def held(call: Call, answer: Callable[[Call], Any] = api.handler) -> Any:
                release.wait()
                return answer(call)

            router.register(Api(METADATA, api.request, api.response, api.min_version, api.max_version, held))
            servers.append(cluster.bootstrap_servers)
        stack.callback(release.set)  # first thing on leaving: the held handlers return, the brokers close
        yield servers


class UncheckedClients(Clients):
    """The clients as they were before kafka.metadata_check: librdkafka's metadata used as it comes."""

    def metadata(self) -> Any:
        return self.admin.list_topics(timeout=self.timeout)


class UncheckedAdapter(KafkaAdapter):
    """The adapter over UncheckedClients (a test stand-in for a hazard the checks do not know yet, to
    show what the worker process contains)."""

    def __init__(self, spec: ConnectionSpec):
        super().__init__(spec, opened=UncheckedClients)

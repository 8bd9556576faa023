"""SASL logins through the adapter: ConnectionSpec's credentials reach both real clients.

The emulator's brokers require SASL (PLAIN or SCRAM, verified server side as Kafka does), so a
read through librdkafka (DescribeCluster, Metadata, configs) and through kafka-python
(DescribeLogDirs, ListPartitionReassignments) only works when each client logged in.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from bounds import NEVER_S, fails_at_once
from emulator_fixtures import six_broker_model
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import KafkaUnavailableError
from kafka_balancer.sandbox import EmulatedCluster

Start = Callable[..., EmulatedCluster]
PASSWORD = "c0rrect-h0rse"
SASL_AUTHENTICATE = 36
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def _spec(cluster: EmulatedCluster, mechanism: str, password: str) -> ConnectionSpec:
    return ConnectionSpec(
        cluster.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        username="balancer",
        password=password,
        request_timeout_s=NEVER_S,
    )


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_both_clients_log_in_with_the_spec_credentials(emulator: Start, mechanism: str) -> None:
    model = six_broker_model(topics={"orders": 6})
    cluster = emulator(model, sasl_users={"balancer": PASSWORD, "other": "x"})
    adapter = KafkaAdapter(_spec(cluster, mechanism, PASSWORD))
    try:
        read = adapter.read_cluster()  # librdkafka, then kafka-python for DescribeLogDirs
        assert read.num_partitions == model.num_partitions
        assert (read.size_bytes == model.size_bytes).all()
        assert adapter.list_reassignments() == {}
    finally:
        adapter.close()
    assert cluster.request_count(SASL_AUTHENTICATE) >= 2  # at least one login per client


@fails_at_once
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_wrong_password_fails_at_once_by_name_without_showing_it(emulator: Start, mechanism: str) -> None:
    cluster = emulator(six_broker_model(), sasl_users={"balancer": PASSWORD})
    adapter = KafkaAdapter(_spec(cluster, mechanism, "wrong-" + PASSWORD))
    try:
        for call in (adapter.describe_cluster, adapter.list_reassignments, adapter.replica_sizes):
            with pytest.raises(KafkaUnavailableError) as failed:
                call()
            assert failed.value.name == "SASL_AUTHENTICATION_FAILED"
            assert PASSWORD not in str(failed.value)
    finally:
        adapter.close()


def test_a_mechanism_the_brokers_do_not_enable_is_refused(emulator: Start) -> None:
    cluster = emulator(six_broker_model(), sasl_users={"balancer": PASSWORD}, sasl_mechanisms=("SCRAM-SHA-512",))
    adapter = KafkaAdapter(_spec(cluster, "PLAIN", PASSWORD))
    try:
        with pytest.raises(KafkaUnavailableError) as failed:
            adapter.describe_cluster()
        assert "SCRAM-SHA-512" in str(failed.value)  # librdkafka lists what the broker offers
    finally:
        adapter.close()

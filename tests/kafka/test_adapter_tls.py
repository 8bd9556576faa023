"""TLS through the adapter: ConnectionSpec's CA file reaches both real clients.

The emulator's brokers serve TLS with a certificate for 127.0.0.1 issued by a throwaway CA
(trustme); both clients verify it (and the host name) against ``ca_path``.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from pathlib import Path

import pytest
import trustme
from bounds import NEVER_S, fails_at_once
from emulator_fixtures import six_broker_model
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import KafkaUnavailableError
from kafka_balancer.sandbox import EmulatedCluster

Start = Callable[..., EmulatedCluster]


@pytest.fixture
def broker_tls(tmp_path: Path) -> tuple[ssl.SSLContext, Path]:
    """The brokers' server context, and the CA file a client must trust."""
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    return context, ca_file


@pytest.mark.parametrize(
    ("protocol", "mechanism"), [("SSL", None), ("SASL_SSL", "SCRAM-SHA-512"), ("SASL_SSL", "PLAIN")]
)
def test_both_clients_verify_the_brokers_against_the_ca_file(
    emulator: Start, broker_tls: tuple[ssl.SSLContext, Path], protocol: str, mechanism: str | None
) -> None:
    context, ca_file = broker_tls
    sasl = {"sasl_users": {"balancer": "pw"}} if mechanism else {}
    model = six_broker_model(topics={"orders": 6})
    cluster = emulator(model, tls=context, **sasl)
    credentials = {"username": "balancer", "password": "pw"} if mechanism else {}
    spec = ConnectionSpec(
        cluster.bootstrap_servers,
        security_protocol=protocol,
        sasl_mechanism=mechanism,
        ca_path=str(ca_file),
        request_timeout_s=10,
        **credentials,
    )
    adapter = KafkaAdapter(spec)
    try:
        read = adapter.read_cluster()  # librdkafka, then kafka-python for DescribeLogDirs
        assert read.num_partitions == model.num_partitions
        assert (read.size_bytes == model.size_bytes).all()
        assert adapter.list_reassignments() == {}
    finally:
        adapter.close()


@fails_at_once
def test_an_untrusted_broker_certificate_fails_at_once(
    emulator: Start, broker_tls: tuple[ssl.SSLContext, Path], tmp_path: Path
) -> None:
    context, _ = broker_tls
    stranger = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(stranger))
    cluster = emulator(six_broker_model(), tls=context)
    adapter = KafkaAdapter(
        ConnectionSpec(
            cluster.bootstrap_servers, security_protocol="SSL", ca_path=str(stranger), request_timeout_s=NEVER_S
        )
    )
    try:
        with pytest.raises(KafkaUnavailableError) as failed:
            adapter.read_cluster()
        assert failed.value.name == "_SSL"
        assert "certificate verify failed" in str(failed.value)
    finally:
        adapter.close()

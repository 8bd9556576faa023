"""ConnectionSpec: validation names the field and value; both clients' configs; secrets never shown."""

from __future__ import annotations

import logging

import pytest
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.model.policy.balance_policy import ClusterConnection

SECRET = "s3cr3t-Pa55"


def test_sasl_ssl_maps_to_both_clients() -> None:
    spec = ConnectionSpec(
        "k1:9093,k2:9093",
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        username="balancer",
        password=SECRET,
        ca_path="/etc/kafka/ca.crt",
    )
    ck = spec.confluent_config()
    assert ck["bootstrap.servers"] == "k1:9093,k2:9093"
    assert ck["security.protocol"] == "sasl_ssl"
    assert ck["sasl.mechanism"] == "SCRAM-SHA-512"
    assert (ck["sasl.username"], ck["sasl.password"]) == ("balancer", SECRET)
    assert ck["ssl.ca.location"] == "/etc/kafka/ca.crt"
    kp = spec.kafka_python_config()
    assert kp["bootstrap_servers"] == ["k1:9093", "k2:9093"]
    assert kp["security_protocol"] == "SASL_SSL"
    assert kp["sasl_mechanism"] == "SCRAM-SHA-512"
    assert (kp["sasl_plain_username"], kp["sasl_plain_password"]) == ("balancer", SECRET)
    assert kp["ssl_cafile"] == "/etc/kafka/ca.crt"


def test_secrets_never_appear_in_repr_str_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    spec = ConnectionSpec(
        "k1:9092", security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", username="u", password=SECRET
    )
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("test").info("connecting to %s (%r)", spec, spec)
    for text in (repr(spec), str(spec), caplog.text):
        assert SECRET not in text
    assert "k1:9092" in str(spec)
    assert "SASL_PLAINTEXT" in str(spec)


@pytest.mark.parametrize(
    ("kwargs", "field", "value"),
    [
        ({"bootstrap_servers": ""}, "bootstrapServers", "''"),
        ({"bootstrap_servers": "k:1", "security_protocol": "TLS"}, "securityProtocol", "'TLS'"),
        (
            {"bootstrap_servers": "k:1", "security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"},
            "saslMechanism",
            "'GSSAPI'",
        ),
        ({"bootstrap_servers": "k:1", "sasl_mechanism": "PLAIN"}, "saslMechanism", "'PLAIN'"),
        (
            {"bootstrap_servers": "k:1", "security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN"},
            "credentialsSecret",
            "None",
        ),
        ({"bootstrap_servers": "k:1", "request_timeout_s": 0}, "requestTimeoutSeconds", "0"),
        # librdkafka refuses a socket timeout above 300 s: named here, not an internal error when connecting.
        ({"bootstrap_servers": "k:1", "request_timeout_s": 400}, "requestTimeoutSeconds", "at most 300"),
    ],
)
def test_bad_settings_name_the_field_and_value(kwargs: dict[str, str], field: str, value: str) -> None:
    with pytest.raises(ValueError, match=field) as err:
        ConnectionSpec(**kwargs)  # type: ignore[arg-type]
    assert value in str(err.value)


def test_from_policy_cluster_spec() -> None:
    cluster = ClusterConnection.model_validate(
        {
            "bootstrapServers": "kafka:9092",
            "securityProtocol": "SASL_SSL",
            "saslMechanism": "SCRAM-SHA-256",
            "credentialsSecret": {"name": "kafka-creds"},
        }
    )
    spec = ConnectionSpec.from_cluster(cluster, username="u", password=SECRET, ca_path="/ca")
    assert spec.confluent_config()["sasl.mechanism"] == "SCRAM-SHA-256"
    assert SECRET not in repr(spec)

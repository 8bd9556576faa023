"""How to reach a Kafka cluster: one spec, mapped to the configs of both client libraries.

Secrets (the password) never appear in ``repr``/``str`` or in log lines: the spec prints the
bootstrap servers, protocol, mechanism and user only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from kafka_balancer.model.policy.balance_policy import ClusterConnection

SECURITY_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# librdkafka refuses a socket.timeout.ms above 300,000.
MAX_REQUEST_TIMEOUT_S: Final = 300.0


@dataclass(frozen=True)
class ConnectionSpec:
    bootstrap_servers: str
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_path: str | None = None
    client_id: str = "kafka-balancer"
    request_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if not self.bootstrap_servers or not self.bootstrap_servers.strip():
            raise ValueError(f"connection: field 'bootstrapServers' must not be empty, got {self.bootstrap_servers!r}")
        if self.security_protocol not in SECURITY_PROTOCOLS:
            raise ValueError(
                f"connection: field 'securityProtocol' must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                f"got {self.security_protocol!r}"
            )
        sasl = self.security_protocol.startswith("SASL_")
        if sasl:
            if self.sasl_mechanism not in SASL_MECHANISMS:
                raise ValueError(
                    f"connection: field 'saslMechanism' must be one of {', '.join(SASL_MECHANISMS)} "
                    f"with {self.security_protocol}, got {self.sasl_mechanism!r}"
                )
            if not self.username or self.password is None:
                raise ValueError(
                    f"connection: {self.security_protocol} needs a username and a password "
                    f"(field 'credentialsSecret'), got username {self.username!r}"
                )
        elif self.sasl_mechanism is not None:
            raise ValueError(
                f"connection: field 'saslMechanism' needs a SASL securityProtocol, got {self.sasl_mechanism!r} "
                f"with {self.security_protocol}"
            )
        if not 0 < self.request_timeout_s <= MAX_REQUEST_TIMEOUT_S:
            raise ValueError(
                f"connection: field 'requestTimeoutSeconds' must be > 0 and at most {MAX_REQUEST_TIMEOUT_S:g} "
                f"(librdkafka's limit), got {self.request_timeout_s!r}"
            )

    @classmethod
    def from_cluster(
        cls,
        cluster: ClusterConnection,
        *,
        username: str | None = None,
        password: str | None = None,
        ca_path: str | None = None,
    ) -> ConnectionSpec:
        """From a BalancePolicy's ``spec.cluster``; the caller reads the credentials secret."""
        return cls(
            bootstrap_servers=cluster.bootstrap_servers,
            security_protocol=cluster.security_protocol,
            sasl_mechanism=cluster.sasl_mechanism,
            username=username,
            password=password,
            ca_path=ca_path,
        )

    def __str__(self) -> str:
        user = f" user={self.username}" if self.username else ""
        mech = f" {self.sasl_mechanism}" if self.sasl_mechanism else ""
        return f"kafka://{self.bootstrap_servers} ({self.security_protocol}{mech}{user})"

    def confluent_config(self) -> dict[str, Any]:
        """librdkafka properties for confluent_kafka.admin.AdminClient."""
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": self.security_protocol.lower(),
            "client.id": self.client_id,
            "socket.timeout.ms": int(self.request_timeout_s * 1000),
        }
        if self.sasl_mechanism is not None:
            config["sasl.mechanism"] = self.sasl_mechanism
            config["sasl.username"] = self.username
            config["sasl.password"] = self.password
        if self.ca_path is not None:
            config["ssl.ca.location"] = self.ca_path
        return config

    def kafka_python_config(self) -> dict[str, Any]:
        """Keyword arguments for kafka.admin.KafkaAdminClient."""
        config: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap_servers.split(","),
            "security_protocol": self.security_protocol,
            "client_id": self.client_id,
            "request_timeout_ms": int(self.request_timeout_s * 1000),
            "bootstrap_timeout_ms": int(self.request_timeout_s * 1000),
        }
        if self.sasl_mechanism is not None:
            config["sasl_mechanism"] = self.sasl_mechanism
            config["sasl_plain_username"] = self.username
            config["sasl_plain_password"] = self.password
        if self.ca_path is not None:
            config["ssl_cafile"] = self.ca_path
        return config

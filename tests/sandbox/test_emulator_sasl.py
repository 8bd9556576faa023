"""The emulator's SASL listener at the wire level (the adapter's logins are in tests/kafka)."""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from typing import Any

from emulator_fixtures import six_broker_model
from kafka.protocol.metadata.metadata import MetadataRequest
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafka_balancer.sandbox import EmulatedCluster
from raw_client import send_raw

Start = Callable[..., EmulatedCluster]
UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED = 33, 34, 58


def _frame(request: Any, version: int, correlation_id: int) -> bytes:
    request.with_header(correlation_id=correlation_id, client_id="raw-test")
    return bytes(request.encode(version=version, header=True, framed=True))


def _exchange(conn: socket.socket, request: Any, response: Any, version: int, correlation_id: int) -> Any:
    """One request on an open connection (SASL state is per connection); response header v0."""
    conn.sendall(_frame(request, version, correlation_id))
    (size,) = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))
    payload = conn.recv(size, socket.MSG_WAITALL)
    assert struct.unpack_from(">i", payload)[0] == correlation_id
    return response.decode(payload[4:], version=version)


def test_requests_before_login_close_the_connection(emulator: Start) -> None:
    cluster = emulator(six_broker_model(), sasl_users={"u": "p"})
    frame = _frame(MetadataRequest(topics=None, allow_auto_topic_creation=False), 12, 1)
    assert send_raw(cluster.port_of(1), frame) == b""


def test_plain_login_then_requests_are_served_on_that_connection(emulator: Start) -> None:
    cluster = emulator(six_broker_model(), sasl_users={"u": "p"}, sasl_mechanisms=("PLAIN",))
    with socket.create_connection(("127.0.0.1", cluster.port_of(2)), timeout=10) as conn:
        early = _exchange(conn, SaslAuthenticateRequest(auth_bytes=b"\0u\0p"), SaslAuthenticateResponse, 1, 1)
        assert early.error_code == ILLEGAL_SASL_STATE  # no handshake yet
        refused = _exchange(conn, SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), SaslHandshakeResponse, 1, 2)
        assert (refused.error_code, refused.mechanisms) == (UNSUPPORTED_SASL_MECHANISM, ["PLAIN"])
        hello = _exchange(conn, SaslHandshakeRequest(mechanism="PLAIN"), SaslHandshakeResponse, 1, 3)
        assert hello.error_code == 0
        bad = _exchange(conn, SaslAuthenticateRequest(auth_bytes=b"\0u\0nope"), SaslAuthenticateResponse, 1, 4)
        assert bad.error_code == SASL_AUTHENTICATION_FAILED
        assert "nope" not in (bad.error_message or "")
        assert conn.recv(1) == b""  # Kafka closes the connection after a failed login
    with socket.create_connection(("127.0.0.1", cluster.port_of(2)), timeout=10) as conn:
        _exchange(conn, SaslHandshakeRequest(mechanism="PLAIN"), SaslHandshakeResponse, 1, 5)
        ok = _exchange(conn, SaslAuthenticateRequest(auth_bytes=b"\0u\0p"), SaslAuthenticateResponse, 1, 6)
        assert ok.error_code == 0
        conn.sendall(_frame(MetadataRequest(topics=None, allow_auto_topic_creation=False), 1, 7))
        (size,) = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))
        assert size > 8  # a Metadata response, not a closed connection

"""A minimal Kafka wire client for emulator tests that must pick the broker a request goes to
(real admin clients route controller requests to the controller on their own)."""

from __future__ import annotations

import socket
import struct
from typing import Any


def send(port: int, request: Any, version: int, *, correlation_id: int = 7) -> Any:
    request.with_header(correlation_id=correlation_id, client_id="raw-test")
    frame = request.encode(version=version, header=True, framed=True)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(frame)
        size = struct.unpack(">i", _read(conn, 4))[0]
        payload = _read(conn, size)
    response_class = type(request).__name__.replace("Request", "Response")
    module = __import__(type(request).__module__, fromlist=[response_class])
    response = getattr(module, response_class)
    flexible = response.flexible_version_q(version) and response_class != "ApiVersionsResponse"
    (corr,) = struct.unpack_from(">i", payload, 0)
    assert corr == correlation_id
    return response.decode(payload[4 + (1 if flexible else 0) :], version=version)


def set_cluster_default(bootstrap: str, key: str, value: str | None) -> None:
    """A cluster-wide broker default (kafka-configs.sh --entity-type brokers --entity-default):
    IncrementalAlterConfigs on the broker resource "" (None deletes it), sent to the first bootstrap
    broker as is (both admin clients refuse that resource name)."""
    from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest

    alterable = IncrementalAlterConfigsRequest.AlterConfigsResource.AlterableConfig
    op = 1 if value is None else 0  # DELETE, SET
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource(
        resource_type=4, resource_name="", configs=[alterable(name=key, config_operation=op, value=value)]
    )
    port = int(bootstrap.split(",", maxsplit=1)[0].rsplit(":", 1)[1])
    answer = send(port, IncrementalAlterConfigsRequest(resources=[resource], validate_only=False), 0)
    error = answer.responses[0]
    if error.error_code != 0:
        raise AssertionError(f"setting the cluster default {key}={value}: {error.error_code} {error.error_message}")


def send_raw(port: int, frame: bytes) -> bytes:
    """Send bytes, return what comes back before the broker closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(frame)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _read(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data

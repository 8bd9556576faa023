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

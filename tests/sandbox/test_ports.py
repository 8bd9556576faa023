"""Ports for servers that bind later are picked below the ephemeral range, where port-0 binds never land."""

from __future__ import annotations

import socket
from pathlib import Path

from kafka_balancer.sandbox.ports import free_port, free_port_range


def _ephemeral_low() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_a_free_port_is_below_the_ephemeral_range_and_bindable() -> None:
    port = free_port()
    assert 10_000 <= port < _ephemeral_low()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_a_free_range_is_consecutive_and_bindable() -> None:
    base = free_port_range(4)
    socks = [socket.socket() for _ in range(4)]
    try:
        for offset, sock in enumerate(socks):
            sock.bind(("127.0.0.1", base + offset))
    finally:
        for sock in socks:
            sock.close()
    assert base + 4 <= _ephemeral_low()

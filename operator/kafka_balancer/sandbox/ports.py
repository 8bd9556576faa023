"""Free loopback ports for servers that are told their port and bind it a moment later.

A port found by binding port 0 lies in the kernel's ephemeral range, where every outgoing connection
and every server bound to port 0 (the emulated brokers, a client) takes its port too: one of them can
take it before the server binds, and the server fails with EADDRINUSE. These helpers pick ports below
that range instead, free at the time of the call.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

MAX_PORT = 65535
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000


def _ephemeral_low() -> int:
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default


def _all_free(host: str, ports: range) -> bool:
    socks: list[socket.socket] = []
    try:
        for port in ports:
            sock = socket.socket()
            socks.append(sock)
            sock.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        for sock in socks:
            sock.close()


def free_port_range(count: int = 1, host: str = "127.0.0.1") -> int:
    """The first of ``count`` consecutive ports that are free now, below the ephemeral range."""
    top = max(_ephemeral_low() - count, _LOWEST + 1)
    chooser = random.SystemRandom()  # independent processes must not pick the same sequence
    for _ in range(200):
        base = chooser.randrange(_LOWEST, top)
        if _all_free(host, range(base, base + count)):
            return base
    raise OSError(f"no {count} consecutive free ports on {host} between {_LOWEST} and {top}")


def free_port(host: str = "127.0.0.1") -> int:
    """A port that is free now, below the ephemeral range."""
    return free_port_range(1, host)


def check_port_range(base: int, count: int, what: str = "port base", *, lowest: int = 1) -> None:
    """``count`` consecutive ports from ``base`` must lie in ``lowest..65535`` (bind() overflows beyond)."""
    if not lowest <= base <= MAX_PORT or base + count - 1 > MAX_PORT:
        raise ValueError(
            f"{what} {base}: {count} port(s) from it need {base}..{base + count - 1}, outside {lowest}..{MAX_PORT}"
        )

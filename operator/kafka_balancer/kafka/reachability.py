"""Whether a cluster's bootstrap servers accept a TCP connection at all, asked before a Kafka client is.

A Kafka client for a cluster nobody listens at spends its whole request timeout (30 s by default)
retrying before it says so, and holds a thread and a worker process while it does. The operator asks
this first, on its event loop: a refused connection answers at once, an address nobody answers within
``timeout_s`` (Kafka's own ``socket.connection.setup.timeout.ms`` is 10 s), and neither needs a thread. A
server that accepts the connection is left to the Kafka client: only it can tell a broker from a port that
accepts and stays silent. Nothing is sent: no request, no credentials.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket


def _addresses(bootstrap_servers: str) -> list[tuple[str, int]]:
    """``host:port`` pairs of a comma-separated list (the spec's pattern guarantees the form)."""
    pairs = []
    for item in bootstrap_servers.split(","):
        host, _, port = item.strip().rpartition(":")
        pairs.append((host, int(port)))
    return pairs


async def _connect(host: str, port: int, timeout_s: float) -> None:
    _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


def _why(host: str, port: int, err: BaseException) -> str:
    if isinstance(err, TimeoutError):
        return f"{host}:{port}: no answer to a TCP connection within the timeout"
    if isinstance(err, OSError) and err.errno is not None and not isinstance(err, socket.gaierror):
        return f"{host}:{port}: {os.strerror(err.errno)}"  # "Connection refused", not asyncio's wording
    return f"{host}:{port}: {err}"  # no such host, a port out of range


async def unreachable(bootstrap_servers: str, timeout_s: float) -> str | None:
    """None as soon as any of the servers accepts a TCP connection (all are tried at once, each for up to
    ``timeout_s``); otherwise why none did, server by server in the order given."""
    addresses = _addresses(bootstrap_servers)
    pending = {asyncio.ensure_future(_connect(host, port, timeout_s)): i for i, (host, port) in enumerate(addresses)}
    reasons: dict[int, str] = {}
    try:
        while pending:
            done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for attempt in done:
                index = pending.pop(attempt)
                err = attempt.exception()
                if err is None:
                    return None
                reasons[index] = _why(*addresses[index], err)
    finally:
        for attempt in pending:
            attempt.cancel()
    return "; ".join(reasons[i] for i in sorted(reasons))

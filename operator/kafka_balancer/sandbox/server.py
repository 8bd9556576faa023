"""TCP listeners: one per broker on 127.0.0.1, one thread per connection.

Kafka's framing is a 4-byte big-endian size then the request; responses go back in order on the
same connection. Stopping a broker closes its listener and every open connection, so clients see
what they would see when a real broker dies (connection reset, then refused).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import struct
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Session:
    """What the protocol remembers about one connection: its SASL progress."""

    __slots__ = ("authenticated", "close_after_reply", "sasl")

    def __init__(self) -> None:
        self.authenticated = False
        self.sasl: object | None = None  # the mechanism exchange in progress
        self.close_after_reply = False  # e.g. after a failed login, as Kafka does


Handler = Callable[[int, bytes, Session], bytes | None]
"""(broker id, request frame, connection session) -> response frame, or None to close the connection."""

_MAX_FRAME = 100 * 1024 * 1024
_HANDSHAKE_TIMEOUT_S = 10.0


def _read_exact(conn: socket.socket, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = conn.recv(min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


class BrokerListener:
    """Serves one broker's port until :meth:`close`."""

    def __init__(
        self,
        broker_id: int,
        handler: Handler,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: ssl.SSLContext | None = None,
    ):
        self.broker_id = broker_id
        self._handler = handler
        self._tls = tls
        self._sock = socket.create_server((host, port), reuse_port=False, backlog=128)
        self.host = host
        self.port: int = self._sock.getsockname()[1]
        self._conns: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._accept = threading.Thread(target=self._accept_loop, name=f"broker-{broker_id}-accept", daemon=True)
        self._accept.start()

    def _accept_loop(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # listener closed
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            thread = threading.Thread(
                target=self._serve, args=(conn,), name=f"broker-{self.broker_id}-conn", daemon=True
            )
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self._conns.add(conn)
                self._threads.add(thread)
            thread.start()

    def _serve(self, raw: socket.socket) -> None:
        conn = raw
        try:
            if self._tls is not None:
                conn = self._tls.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
                with self._lock:
                    # The wrapped socket owns the descriptor now: close() must shut that one down.
                    self._conns.discard(raw)
                    self._conns.add(conn)
                    if self._closed:
                        return
                conn.settimeout(_HANDSHAKE_TIMEOUT_S)
                conn.do_handshake()
                conn.settimeout(None)
            self._requests(conn)
        except OSError:
            return  # peer went away, failed the TLS handshake, or the broker was stopped
        finally:
            with self._lock:
                self._conns.discard(raw)
                self._conns.discard(conn)
                self._threads.discard(threading.current_thread())
            conn.close()

    def _requests(self, conn: socket.socket) -> None:
        session = Session()
        while True:
            head = _read_exact(conn, 4)
            if head is None:
                return
            (size,) = struct.unpack(">i", head)
            if not 0 < size <= _MAX_FRAME:
                log.warning("broker %d: bad frame size %d, closing connection", self.broker_id, size)
                return
            payload = _read_exact(conn, size)
            if payload is None:
                return
            reply = self._handler(self.broker_id, payload, session)
            if reply is None:
                return  # the request cannot be answered: close, as Kafka does
            conn.sendall(reply)
            if session.close_after_reply:
                return

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns = list(self._conns)
            threads = list(self._threads)
        # shutdown() wakes the accept() and recv() calls blocked in other threads.
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._accept.join(timeout=5)
        for thread in threads:
            thread.join(timeout=5)

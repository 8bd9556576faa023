"""The Kafka port in a worker process: nothing a cluster answers can take the calling process down.

The operator talks to clusters named by whoever may edit a BalancePolicy. librdkafka is C: an answer
it mishandles (:mod:`kafka_balancer.kafka.metadata_check` refuses the ones known) kills the process
it runs in with SIGSEGV, and with it every tenant's executions. So the operator makes its Kafka calls
through :class:`IsolatedPort`: each port has a worker process (forked from a server that has the client
libraries imported already: milliseconds, not an interpreter start) holding the real adapter, and
each call is a message to it and its answer back.

- A worker that dies mid-call (a signal, an abort in C) fails that call with
  :class:`KafkaClientCrashedError`, naming the signal and the call; the next call starts a new worker.
- A call that gets no answer within ``call_timeout_s`` (by default ten request timeouts: a call is
  several requests, and a server that answers each just in time must not hold the caller for ever)
  has its worker killed and fails with REQUEST_TIMED_OUT. Both are :class:`KafkaUnavailableError`:
  callers wait and retry as for a cluster that is down.
- Closing the port ends its worker; a worker also ends the moment its caller does, even mid-call.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import select
import signal
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, Final, cast

from kafka_balancer.kafka import client_log
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import KafkaPort, KafkaUnavailableError, PortClosedError

log = logging.getLogger(__name__)
_CLIENT_LOG = client_log.limited_logger()

PortFactory = Callable[[ConnectionSpec], KafkaPort]

# Forked from a server process that imported the client libraries once (a worker starts in milliseconds).
_CONTEXT: Final = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["kafka_balancer.kafka.adapter", "kafka_balancer.kafka.isolated"])
_CLOSE_WAIT_S: Final = 5.0
MIN_CALL_TIMEOUT_S: Final = 60.0


class KafkaClientCrashedError(KafkaUnavailableError):
    """The worker process holding the Kafka client died during a call."""

    def __init__(self, message: str, name: str = "CLIENT_CRASHED", partition: Any = None):
        super().__init__(name, message, partition)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message, self.name, self.partition))


def _exit_with(caller: int) -> None:
    """End this worker the moment the process it serves ends, even in the middle of a call.

    Its parent is the fork server, which lives as long as any worker does (each holds the server's
    lifeline), so the parent's death signal never comes; and a worker inside a call to a silent cluster
    reads its pipe's end of file only when the call gives up, ten request timeouts later. So a thread
    waits on the caller's pidfd (readable when it exits) and ends the process there; nothing is left to
    answer, and the kernel closes its connections."""

    def watch(fd: int) -> None:
        select.select([fd], [], [])
        os._exit(0)

    try:
        fd = os.pidfd_open(caller)
    except ProcessLookupError:
        os._exit(0)  # gone already
    threading.Thread(target=watch, args=(fd,), name="caller-watch", daemon=True).start()


def _sendable(err: BaseException) -> BaseException:
    """The error as it can cross the pipe: as it is when it pickles, else its type and text."""
    import pickle  # noqa: PLC0415 - only on the error path

    try:
        pickle.dumps(err)
    except Exception:  # any reason at all: the text still says what happened
        return RuntimeError(f"{type(err).__name__}: {err}")
    return err


def _serve(conn: Connection, factory: PortFactory, spec: ConnectionSpec, caller: int) -> None:
    """The worker: one port, calls in order until told to stop or the caller goes away."""
    _exit_with(caller)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides when this worker ends
    lines = client_log.collect_here()  # librdkafka's lines go back with each answer (kafka.client_log)
    port = factory(spec)
    try:
        while True:
            try:
                request = conn.recv()
            except (EOFError, OSError):
                return
            if request is None:
                return
            method, args, kwargs = request
            try:
                answer: tuple[str, Any, Any] = ("ok", getattr(port, method)(*args, **kwargs), lines.take())
            except Exception as err:  # every error goes back to the caller, who raises it
                answer = ("err", _sendable(err), lines.take())
            try:
                conn.send(answer)
            except (OSError, ValueError):
                return
            except Exception as err:  # an answer that does not pickle: say so rather than hang the caller
                conn.send(("err", RuntimeError(f"{method}: the answer cannot be sent back: {err}"), []))
    finally:
        port.close()


def _signal_name(code: int | None) -> str:
    if code is None:
        return "an unknown cause"
    if code < 0:
        with contextlib.suppress(ValueError):
            return signal.Signals(-code).name
        return f"signal {-code}"
    return f"exit status {code}"


class IsolatedPort:
    """A :class:`~kafka_balancer.kafka.port.KafkaPort` whose calls run in a worker process (see the module)."""

    def __init__(
        self,
        spec: ConnectionSpec,
        factory: PortFactory = KafkaAdapter,
        *,
        call_timeout_s: float | None = None,
    ) -> None:
        self.spec = spec
        self._factory = factory
        self.call_timeout_s = call_timeout_s or max(MIN_CALL_TIMEOUT_S, 10 * spec.request_timeout_s)
        self._lock = threading.Lock()  # one call at a time: the worker answers in order
        self._process: Any = None  # multiprocessing's forkserver Process
        self._conn: Connection | None = None
        self._closed = False
        self.workers_started = 0

    def __repr__(self) -> str:
        return f"IsolatedPort({self.spec})"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not callable(getattr(KafkaPort, name, None)):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._call(name, args, kwargs)

        return call

    def _start(self) -> Connection:
        mine, theirs = _CONTEXT.Pipe()
        process = _CONTEXT.Process(
            target=_serve, args=(theirs, self._factory, self.spec, os.getpid()), name="kafka-client", daemon=True
        )
        process.start()
        theirs.close()
        self._process, self._conn = process, mine
        self.workers_started += 1
        return mine

    def _call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with self._lock:
            if self._closed:
                raise PortClosedError("CLOSED", f"{self} is closed")
            conn = self._conn if self._conn is not None and self._process.is_alive() else self._start()
            try:
                conn.send((method, args, kwargs))
                answered = conn.poll(self.call_timeout_s)
                if not answered:
                    self._end(kill=True)
                    raise KafkaUnavailableError(
                        "REQUEST_TIMED_OUT",
                        f"{method}: no answer within {self.call_timeout_s:g} s from {self.spec}; "
                        "its worker was stopped",
                    )
                kind, value, logged = conn.recv()
            except (EOFError, OSError) as err:
                code = self._end(kill=True)
                log.error("the Kafka client process died (%s) during %s on %s", _signal_name(code), method, self.spec)
                raise KafkaClientCrashedError(
                    f"the Kafka client process died ({_signal_name(code)}) during {method} on {self.spec}"
                ) from err
        for level, line in logged:
            _CLIENT_LOG.log(level, "%s", line)
        if kind == "err":
            raise value
        return value

    def _end(self, *, kill: bool) -> int | None:
        """Stop the worker (at once with ``kill``); its exit code."""
        process, conn = self._process, self._conn
        self._process, self._conn = None, None
        if process is None:
            return None
        if conn is not None and not kill:
            with contextlib.suppress(OSError, ValueError):
                conn.send(None)
            process.join(_CLOSE_WAIT_S)
        if process.is_alive():
            process.kill()
        process.join(_CLOSE_WAIT_S)
        if conn is not None:
            conn.close()
        code: int | None = process.exitcode
        return code

    def close(self) -> None:
        """End the worker at once (a call under way then fails). Nothing in it is worth waiting for: its
        clients hold no writes, and librdkafka's own teardown waits on brokers that do not answer."""
        self._closed = True
        if self._lock.acquire(blocking=False):
            try:
                self._end(kill=True)
            finally:
                self._lock.release()
        elif self._process is not None:
            with contextlib.suppress(Exception):
                self._process.kill()


def isolated(spec: ConnectionSpec) -> KafkaPort:
    """An isolated port for ``spec``, typed as the port it stands for."""
    return cast(KafkaPort, IsolatedPort(spec))

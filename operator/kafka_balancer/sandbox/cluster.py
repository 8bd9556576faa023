"""EmulatedCluster: brokers listening on 127.0.0.1, one shared state, a clock, fault injection.

    with EmulatedCluster.start(model, time_scale=0) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        ...
        cluster.advance(30)          # manual clock: 30 emulated seconds, in ticks

``time_scale=0`` (the default for tests) runs no clock thread: emulated time moves only when the
test calls :meth:`advance`, so results do not depend on machine speed. ``time_scale=N > 0`` runs a
clock thread that advances emulated time N times faster than the wall clock.
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from kafka_balancer.model import ClusterModel
from kafka_balancer.sandbox import operations
from kafka_balancer.sandbox.apis import build_router
from kafka_balancer.sandbox.apis_cluster import coordinator_for
from kafka_balancer.sandbox.ports import check_port_range
from kafka_balancer.sandbox.replication import ReplicationOptions, tick
from kafka_balancer.sandbox.sasl import MECHANISMS, SaslServer
from kafka_balancer.sandbox.server import BrokerListener
from kafka_balancer.sandbox.state import ClusterState, GroupSeed, PartitionState, TickListener
from kafka_balancer.sandbox.versions import KafkaFeatures

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmulatorOptions:
    time_scale: float = 0.0  # 0 = manual clock (advance()); N = N emulated seconds per real second
    tick_seconds: float = 0.1  # emulated seconds per tick: the resolution of copy times
    host: str = "127.0.0.1"
    port_base: int | None = None  # None = a free ephemeral port per broker
    replication: ReplicationOptions = field(default_factory=ReplicationOptions)
    # user -> password: brokers then require SASL (a SASL_PLAINTEXT listener) with these mechanisms.
    sasl_users: Mapping[str, str] | None = field(default=None, repr=False)
    sasl_mechanisms: tuple[str, ...] = MECHANISMS
    # A server-side context: brokers then speak TLS (SSL, or SASL_SSL together with sasl_users).
    tls: ssl.SSLContext | None = None
    # The Kafka version answered as, where the product can tell versions apart (sandbox.versions); None:
    # the newest the product supports.
    kafka_version: str | None = None

    def __post_init__(self) -> None:
        if not self.time_scale >= 0:
            raise ValueError(f"emulator: field 'time_scale' must be >= 0, got {self.time_scale!r}")
        if not self.tick_seconds > 0:
            raise ValueError(f"emulator: field 'tick_seconds' must be > 0, got {self.tick_seconds!r}")
        if self.port_base is not None and not 0 < self.port_base < 65536:
            raise ValueError(f"emulator: field 'port_base' must be a TCP port, got {self.port_base!r}")


class EmulatedCluster:
    def __init__(self, model: ClusterModel, options: EmulatorOptions | None = None):
        self.options = options or EmulatorOptions()
        if self.options.port_base is not None:
            check_port_range(self.options.port_base, model.num_brokers, "port base")
        self.state = ClusterState.from_model(model)
        self.state.features = KafkaFeatures(self.options.kafka_version)
        users = self.options.sasl_users
        sasl = SaslServer(users, self.options.sasl_mechanisms) if users is not None else None
        self._router = build_router(self.state, self.options.host, sasl)
        self._listeners: dict[int, BrokerListener] = {}
        self._stop = threading.Event()
        self._clock: threading.Thread | None = None

    # ----- lifecycle -------------------------------------------------------------------------
    @classmethod
    @contextmanager
    def start(
        cls, model: ClusterModel, *, time_scale: float = 0.0, options: EmulatorOptions | None = None
    ) -> Iterator[EmulatedCluster]:
        opts = options or EmulatorOptions(time_scale=time_scale)
        cluster = cls(model, opts)
        cluster.open()
        try:
            yield cluster
        finally:
            cluster.close()

    def open(self) -> None:
        try:
            for i, broker_id in enumerate(sorted(self.state.brokers)):
                broker = self.state.brokers[broker_id]
                port = 0 if self.options.port_base is None else self.options.port_base + i
                if broker.alive:
                    self._listen(broker_id, port)
                else:
                    # A broker the snapshot marks dead still owns its port (for a later restart).
                    broker.port = port
        except OSError:
            self.close()  # a port was taken: release the ones already bound
            raise
        if self.options.time_scale > 0:
            self._clock = threading.Thread(target=self._run_clock, name="emulator-clock", daemon=True)
            self._clock.start()

    def close(self) -> None:
        self._stop.set()
        if self._clock is not None:
            self._clock.join(timeout=10)
        for listener in list(self._listeners.values()):
            listener.close()
        self._listeners.clear()

    def __enter__(self) -> EmulatedCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _listen(self, broker_id: int, port: int) -> None:
        listener = BrokerListener(broker_id, self._router.handle, self.options.host, port, self.options.tls)
        self.state.brokers[broker_id].port = listener.port
        self._listeners[broker_id] = listener

    # ----- addresses -------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """host:port of every live broker, comma separated, ascending broker id."""
        with self.state.lock:
            return ",".join(f"{self.options.host}:{b.port}" for _, b in sorted(self.state.brokers.items()) if b.alive)

    def port_of(self, broker_id: int) -> int:
        return self.state.brokers[broker_id].port

    # ----- clock -----------------------------------------------------------------------------
    def now(self) -> float:
        """Emulated seconds since start."""
        with self.state.lock:
            return self.state.clock

    def sleep(self, seconds: float) -> None:
        """With the manual clock, code that sleeps on the emulator's time: ``now``/``sleep`` make the
        cluster a clock for the executor, so a throttled copy of gigabytes takes only the CPU time of
        its ticks and the executor and the copies share one time."""
        self.advance(seconds)

    def advance(self, seconds: float) -> None:
        """Run ``seconds`` of emulated time in ticks of ``tick_seconds`` (manual clock)."""
        step = self.options.tick_seconds
        remaining = seconds
        while remaining > 1e-12:
            dt = min(step, remaining)
            self._tick(dt)
            remaining -= dt

    def run_until(
        self, predicate: Callable[[ClusterState], bool], *, timeout: float, step: float | None = None
    ) -> float:
        """Advance until ``predicate(state)`` holds; return the emulated time it took.

        Raises TimeoutError after ``timeout`` emulated seconds."""
        step = step or self.options.tick_seconds
        start = self.state.clock
        while True:
            with self.state.lock:
                if predicate(self.state):
                    return self.state.clock - start
                if self.state.clock - start >= timeout:
                    raise TimeoutError(f"condition not met after {timeout} emulated seconds")
            self._tick(step)

    def _tick(self, dt: float) -> None:
        with self.state.lock:
            tick(self.state, dt, self.options.replication)
            for listener in list(self.state.tick_listeners):
                listener(self.state)

    def _run_clock(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(0.01):
            now = time.monotonic()
            emulated = (now - last) * self.options.time_scale
            last = now
            # Sub-step long intervals so copy times keep their resolution; cap the number of
            # sub-steps so a very high time scale cannot starve the listeners of the lock.
            steps = max(1, min(50, round(emulated / self.options.tick_seconds)))
            for _ in range(steps):
                self._tick(emulated / steps)

    def on_tick(self, listener: TickListener) -> None:
        """Call ``listener(state)`` after every tick, with the state lock held."""
        with self.state.lock:
            self.state.tick_listeners.append(listener)

    # ----- faults ----------------------------------------------------------------------------
    def stop_broker(self, broker_id: int) -> None:
        """The broker dies: its port closes (connections reset), leaderships move, ISRs shrink."""
        with self.state.lock:
            operations.stop_broker(self.state, broker_id)
            listener = self._listeners.pop(broker_id, None)
        if listener is not None:
            listener.close()

    def start_broker(self, broker_id: int) -> None:
        """The broker comes back on its old port; its replicas catch up and rejoin the ISR."""
        with self.state.lock:
            if self.state.brokers[broker_id].alive:
                return
            self._listen(broker_id, self.state.brokers[broker_id].port)
            operations.start_broker(self.state, broker_id)

    def slow_broker(self, broker_id: int, bytes_per_sec: float | None) -> None:
        """Cap this broker's replication (as leader and as follower); None removes the cap."""
        with self.state.lock:
            self.state.brokers[broker_id].slow_rate = bytes_per_sec

    def stick_reassignment(self, topic: str, partition: int, stuck: bool = True) -> None:
        """Make the ongoing reassignment of a partition stop copying (it never completes)."""
        with self.state.lock:
            part = self._partition(topic, partition)
            if part.reassignment is None:
                raise ValueError(f"no reassignment in progress for {topic}-{partition}")
            part.reassignment.stuck = stuck

    def drop_requests(self, api_key: int, count: int = 1, broker_id: int | None = None) -> None:
        """The next ``count`` requests of this API (to this broker, or to any) close their
        connection unanswered, as when the broker dies mid-request (whether it acted is unknown)."""
        with self.state.lock:
            self.state.dropped[(broker_id, api_key)] += count

    def group_coordinator(self, group_id: str) -> int:
        """The broker that FindCoordinator names for this group."""
        with self.state.lock:
            return coordinator_for(self.state, group_id)

    # ----- load and groups -------------------------------------------------------------------
    def set_rates(self, rates: Sequence[tuple[str, int, float, float]]) -> None:
        """(topic, partition, bytes in/s, messages in/s): drive log growth and offsets."""
        self.state.set_rates(rates)

    def seed_group(self, group: GroupSeed) -> None:
        with self.state.lock:
            for member in group.members:
                for topic, parts in member.assignment.items():
                    for p in parts:
                        self._partition(topic, p)
            self.state.groups[group.group_id] = group

    # ----- inspection ------------------------------------------------------------------------
    def request_count(self, api_key: int, broker_id: int | None = None) -> int:
        with self.state.lock:
            if broker_id is None:
                return self.state.requests[api_key]
            return self.state.requests_by_broker[(broker_id, api_key)]

    def partition_view(self, topic: str, partition: int) -> tuple[list[int], list[int], int]:
        """(replicas, isr, leader) as the emulator holds them."""
        with self.state.lock:
            part = self._partition(topic, partition)
            return list(part.replicas), list(part.isr), part.leader

    def replica_bytes(self, topic: str, partition: int, broker_id: int) -> float:
        with self.state.lock:
            return self.state.replica_size(self._partition(topic, partition), broker_id)

    def _partition(self, topic: str, partition: int) -> PartitionState:
        part = self.state.partition(topic, partition)
        if part is None:
            raise KeyError(f"unknown partition {topic}-{partition}")
        return part

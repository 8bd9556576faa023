"""An unexpected error (a bug in our code or a library: neither a Kafka error nor a signal) injected at one
point of an execution run: before one of its calls to Kafka (through the port) or one save of its record.

    points = Points(fail_at=7)               # the 8th point raises InjectedError, once; None: a clean run
    port = FaultyPort(adapter, points)
    store = FaultyStore(points)
    Executor(port, plan, store, ...).run()
    points.seen                              # every point passed, in order: (state, call)

A point is named by the execution state the record was last saved with and the call (a port method,
or ``save`` with the state saved), so that runs whose polls repeat a different number of times (real
time) still have the same distinct points.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka_balancer.executor import MemoryExecutionStore
from kafka_balancer.kafka.port import KafkaPort

Point = tuple[str, str]  # (the record's state as last saved, the call)


class InjectedError(RuntimeError):
    """The injected fault: an ordinary exception, as a bug raises (a KafkaError is handled elsewhere)."""


@dataclass
class Points:
    fail_at: int | None = None  # raise before this point (0-based); once
    first_of: Point | None = None  # or before the first point so named; once
    seen: list[Point] = field(default_factory=list)
    state: str = "-"  # the record's state as last saved
    throttled: bool = False  # the record as last saved lists throttle rates set on brokers
    raised: Point | None = None
    raised_throttled: bool = False  # throttles were recorded as set when the fault was raised

    def pass_(self, call: str) -> None:
        point = (self.state, call)
        due = len(self.seen) == self.fail_at or (point == self.first_of and self.raised is None)
        self.seen.append(point)
        if due and self.raised is None:
            self.raised, self.raised_throttled = point, self.throttled
            raise InjectedError(f"injected before {call} in state {self.state} (point {len(self.seen) - 1})")


class InterceptedPort:
    """A KafkaPort whose every call but ``close`` first goes through ``before(name, args)``, which may
    record it or raise in its place."""

    def __init__(self, port: KafkaPort, before: Callable[[str, tuple[Any, ...]], None]) -> None:
        self._port = port
        self._before = before

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._port, name)
        if not callable(target) or name == "close":
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            self._before(name, args)
            return target(*args, **kwargs)

        return call


class FaultyPort(InterceptedPort):
    """A KafkaPort whose calls pass the points first."""

    def __init__(self, port: KafkaPort, points: Points) -> None:
        super().__init__(port, lambda name, _args: points.pass_(name))


class FaultyStore(MemoryExecutionStore):
    """A record store whose saves pass the points first."""

    def __init__(self, points: Points) -> None:
        super().__init__()
        self.points = points

    def save(self, record: dict[str, Any]) -> None:
        self.points.pass_(f"save {record['state']}")
        super().save(record)
        self.points.state = str(record["state"])
        self.points.throttled = bool(record["throttles"]["brokers"])

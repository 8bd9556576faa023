"""Waiting out a cluster that cannot answer now: bounded, and said in the progress.

A KRaft controller that is down or moving, or one broker that hangs, makes Kafka's admin requests fail
for a while: the client times out, or the broker answers REQUEST_TIMED_OUT (the adapter raises both as
KafkaUnavailableError). Nothing is wrong with the execution then, so it waits, as it waits for a broker
that is down: it keeps its state, says in its progress what it waits for and since when, and goes on
when the cluster answers again. Only when nothing has answered for ``limit_seconds`` does the wait end,
with the error: the record is left as it is (moves in flight, throttles) for the same command, or the
next operator, to resume. A port its owner closed (PortClosedError) is never waited for.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from kafka_balancer.executor.options import Clock
from kafka_balancer.kafka.port import KafkaUnavailableError, PortClosedError

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Waiting:
    """What the execution waits for: ``what`` (a step), the last error, and since when (the clock's time)."""

    what: str
    error: str
    since: float

    def describe(self, now: float) -> str:
        return f"waiting {now - self.since:.0f} s for the cluster ({self.what}): {self.error}"


class Patience:
    """Tracks one stretch of unavailability at a time; see the module."""

    def __init__(self, clock: Clock, limit_seconds: float, retry_seconds: float, on_wait: Callable[[], None]) -> None:
        self.clock = clock
        self.limit_seconds = limit_seconds
        self.retry_seconds = retry_seconds
        self.on_wait = on_wait  # called at each failed attempt (the executor shows its progress)
        self.waiting: Waiting | None = None

    def failed(self, what: str, err: KafkaUnavailableError) -> None:
        """One more failed attempt; re-raises ``err`` once nothing answered for ``limit_seconds``."""
        if isinstance(err, PortClosedError):
            raise err
        now = self.clock.now()
        since = self.waiting.since if self.waiting is not None else now
        self.waiting = Waiting(what, str(err), since)
        if now - since >= self.limit_seconds:
            log.error("gave up after %.0f s without an answer from the cluster (%s): %s", now - since, what, err)
            raise err
        log.warning("%s; trying again", self.waiting.describe(now))
        self.on_wait()

    def answered(self) -> None:
        if self.waiting is not None:
            log.info("the cluster answers again after %.0f s", self.clock.now() - self.waiting.since)
        self.waiting = None

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()``, tried again every ``retry_seconds`` while the cluster cannot answer (bounded)."""
        while True:
            try:
                result = fn()
            except KafkaUnavailableError as err:
                self.failed(what, err)
                self.clock.sleep(self.retry_seconds)
                continue
            self.answered()
            return result

    def describe(self) -> str:
        return "" if self.waiting is None else self.waiting.describe(self.clock.now())

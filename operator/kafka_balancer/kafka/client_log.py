"""librdkafka's own log lines, rate-limited and summarised.

librdkafka logs every refused or dropped connection, per broker, every few hundred milliseconds, at
ERROR: an operator with a thousand policies naming clusters that do not answer wrote 18 MB of them in
14 minutes. What they say also reaches the caller as the KafkaError of the request that failed. So
each kind of line (its text with the numbers taken out: addresses, ports, milliseconds) is logged once
per ``window_seconds``; the repeats are counted, and the next line of that kind says how many were
left out. The operator's Kafka worker processes (kafka.isolated) hand their lines to the operator
process, which logs them through this one limiter.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Final

LOGGER_NAME: Final = "kafka_balancer.kafka.librdkafka"
WINDOW_SECONDS: Final = 60.0
_NUMBERS = re.compile(r"\d+")


def kind_of(message: str) -> str:
    """A line's kind: its text with every number taken out."""
    return _NUMBERS.sub("#", message)


class RateLimit(logging.Filter):
    """Lets the first line of each kind through per window; the next one after it carries the count left out."""

    def __init__(self, window_seconds: float = WINDOW_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.window_seconds = window_seconds
        self.clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[float, int]] = {}  # kind -> (window start, lines left out since)

    def forget(self) -> None:
        """Start afresh: every kind is logged again at its next line."""
        with self._lock:
            self._seen.clear()

    def filter(self, record: logging.LogRecord) -> bool:
        kind = kind_of(record.getMessage())
        now = self.clock()
        with self._lock:
            started, left_out = self._seen.get(kind, (None, 0))
            if started is not None and now - started < self.window_seconds:
                self._seen[kind] = (started, left_out + 1)
                return False
            self._seen[kind] = (now, 0)
            if len(self._seen) > 10_000:  # bounded: forget the kinds whose window is over
                self._seen = {k: v for k, v in self._seen.items() if now - v[0] < self.window_seconds}
        if left_out:
            record.msg = f"{record.getMessage()} ({left_out} more like it in the last {self.window_seconds:g} s)"
            record.args = ()
        return True


class Collect(logging.Handler):
    """In a Kafka worker process: keep the lines (at most ``limit`` between two answers) for the caller."""

    def __init__(self, limit: int = 200) -> None:
        super().__init__()
        self.limit = limit
        self.lines: list[tuple[int, str]] = []
        self.dropped = 0

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.lines) < self.limit:
            self.lines.append((record.levelno, record.getMessage()))
        else:
            self.dropped += 1

    def take(self) -> list[tuple[int, str]]:
        lines, self.lines = self.lines, []
        if self.dropped:
            lines.append((logging.WARNING, f"{self.dropped} librdkafka lines left out in a Kafka worker process"))
            self.dropped = 0
        return lines


def limited_logger() -> logging.Logger:
    """The logger librdkafka's lines go to, with the rate limit on (once per process)."""
    logger = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(f, RateLimit) for f in logger.filters):
        logger.addFilter(RateLimit())
    return logger


def collect_here() -> Collect:
    """In a worker process: librdkafka's lines are collected for the caller instead of printed here."""
    logger = logging.getLogger(LOGGER_NAME)
    for f in list(logger.filters):
        if isinstance(f, RateLimit):
            logger.removeFilter(f)  # the caller's limiter sees every line
    handler = Collect()
    logger.handlers[:] = [handler]
    logger.propagate = False
    return handler

"""How an execution runs: limits, throttle, timeouts, and the clock it measures them with."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Protocol

from kafka_balancer.executor.scheduler import DEFAULT_MOVES_PER_BROKER, DEFAULT_MOVES_TOTAL, Limits
from kafka_balancer.kafka.port import DEFAULT_ELECTION_BATCH
from kafka_balancer.model import ModelError
from kafka_balancer.model.limits import LONG_MAX
from kafka_balancer.model.policy.balance_policy import Execution


class Clock(Protocol):
    """Time as the executor sees it. Tests pass the emulator's scaled clock so a 30-minute
    ``stuckAfter`` and a throttled copy take seconds of wall time."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass(frozen=True)
class ExecutorOptions:
    throttle_bytes_per_sec: int | None = None  # None: no throttle is set
    limits: Limits = field(default_factory=Limits)
    strategy: str = "helpful-first"
    stuck_after_seconds: float = 1800.0
    cancel_stuck: bool = False
    # Bytes this execution may copy (moves done + in flight); None = no limit. Moves that do not
    # fit are left for the next run (the execution ends Stopped, saying so). The first move of an
    # execution always starts, even if larger, so that a run always makes progress.
    max_bytes_per_run: int | None = None
    # A pending move blocked by cluster health (under-replicated, at min ISR) this long is given up
    # (dead) so that the run can end and report it; None waits for the cluster to recover.
    blocked_after_seconds: float | None = None
    election_batch_size: int = DEFAULT_ELECTION_BATCH
    # Elections are retried this many times: a preferred leader may need a moment to join the ISR.
    election_attempts: int = 5
    # How long the execution waits for a cluster that cannot answer (its controller down, a broker hung,
    # requests timing out) before it gives up, resumable (executor.patience): the wait is shown in its progress.
    unavailable_timeout_seconds: float = 600.0
    poll_interval_seconds: float = 1.0
    # Copy progress (DescribeLogDirs on every broker) is measured at most this often: it costs
    # far more than the poll itself on a large cluster, and only feeds progress and stuck checks.
    measure_interval_seconds: float = 5.0
    dry_run: bool = False

    def __post_init__(self) -> None:
        if self.throttle_bytes_per_sec is not None and self.throttle_bytes_per_sec < 1:
            raise ModelError(f"execution: field 'throttleBytesPerSec' must be >= 1, got {self.throttle_bytes_per_sec}")
        if self.max_bytes_per_run is not None and self.max_bytes_per_run < 1:
            raise ModelError(f"execution: field 'maxBytesPerRun' must be >= 1, got {self.max_bytes_per_run}")
        if self.election_batch_size < 1:
            raise ModelError(f"execution: field 'electionBatchSize' must be >= 1, got {self.election_batch_size}")
        seconds = {
            "stuckAfterSeconds": (self.stuck_after_seconds, False),
            "pollIntervalSeconds": (self.poll_interval_seconds, False),
            "measureIntervalSeconds": (self.measure_interval_seconds, True),
            "blockedAfterSeconds": (self.blocked_after_seconds, False),
            "unavailableTimeoutSeconds": (self.unavailable_timeout_seconds, False),
        }
        for name, (value, zero_ok) in seconds.items():
            # NaN passes every comparison: a sleep(nan) would crash mid-run, after moves started.
            if value is not None and (not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok)):
                bound = ">= 0" if zero_ok else "> 0"
                raise ModelError(f"execution: field '{name}' must be a finite number {bound}, got {value}")

    @classmethod
    def from_spec(cls, spec: Execution) -> ExecutorOptions:
        """Options from a BalancePolicy's ``spec.execution`` (what the operator passes); adjust
        the rest (poll interval, dry run) with :func:`dataclasses.replace`."""
        return cls(
            throttle_bytes_per_sec=spec.throttle_bytes_per_sec,
            limits=Limits(
                per_broker=spec.concurrent_moves_per_broker or DEFAULT_MOVES_PER_BROKER,
                total=spec.concurrent_moves_total or DEFAULT_MOVES_TOTAL,
            ),
            stuck_after_seconds=float(spec.stuck_after_seconds),
            cancel_stuck=spec.cancel_stuck,
            max_bytes_per_run=spec.max_bytes_per_run,
            election_batch_size=spec.election_batch_size,
        )


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "t": 1000**4,
    "tb": 1000**4,
    "tib": 1024**4,
}


def parse_rate(text: str) -> int:
    """``50MiB/s``, ``20MB/s``, ``1048576`` -> bytes per second."""
    return _parse_bytes(text.strip().lower().removesuffix("/s"), text, "--throttle", "a rate like 50MiB/s")


def parse_size(text: str) -> int:
    """``500GB``, ``1.5TiB``, ``1048576`` -> bytes."""
    return _parse_bytes(text.strip().lower(), text, "--max-bytes-per-run", "a size like 500GB")


def _parse_bytes(raw: str, text: str, option: str, example: str) -> int:
    raw = raw.strip()
    number = raw.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = raw[len(number) :].strip()
    try:
        value = float(number)
    except ValueError:
        raise ModelError(f"{option}: not {example}, got {text!r}") from None
    if unit not in _UNITS:
        raise ModelError(f"{option}: unknown unit {unit!r} in {text!r} (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)")
    scaled = value * _UNITS[unit]
    if not (math.isfinite(scaled) and 1 <= scaled <= LONG_MAX):
        # Kafka's throttle rates are LONG broker configs: a larger value is refused by the broker.
        raise ModelError(f"{option}: must be between 1 byte and {LONG_MAX} bytes (Kafka's LONG), got {text!r}")
    return int(scaled)

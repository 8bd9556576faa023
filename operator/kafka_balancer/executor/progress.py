"""Progress of an execution, as the operator's status, the metrics and the CLI's bar show it."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kafka_balancer.executor.state import ExecutionState, TaskState
from kafka_balancer.executor.tasks import Task

# The rate is measured over this trailing window of the executor's clock.
RATE_WINDOW_SECONDS = 60.0


@dataclass(frozen=True)
class BrokerProgress:
    broker: int
    moves_in_flight: int
    bytes_in_moved: float  # bytes copied onto this broker so far
    bytes_in_total: float  # bytes the plan copies onto it


@dataclass(frozen=True)
class Progress:
    state: ExecutionState
    partitions_total: int
    partitions_done: int
    partitions_in_progress: int
    partitions_dead: int
    partitions_aborted: int
    bytes_total: float
    bytes_moved: float
    leaders_total: int
    leaders_done: int
    rate_bytes_per_sec: float
    eta_seconds: float | None
    elapsed_seconds: float
    brokers: tuple[BrokerProgress, ...] = ()
    # "topic-partition" of moves with no progress for stuckAfter, and of moves held back, with why.
    stuck: tuple[str, ...] = ()
    blocked: dict[str, str] = field(default_factory=dict)
    # What the execution waits for while the cluster cannot answer (executor.patience), "" when it does.
    waiting: str = ""
    # "topic-partition" of moves another tool re-targeted while in flight: theirs, never cancelled.
    taken_over: tuple[str, ...] = ()

    @property
    def fraction(self) -> float:
        """0..1, by bytes when there are bytes to move, else by partitions and leaders."""
        if self.bytes_total > 0:
            return min(1.0, self.bytes_moved / self.bytes_total)
        total = self.partitions_total + self.leaders_total
        return 1.0 if total == 0 else (self.partitions_done + self.leaders_done) / total

    def to_dict(self) -> dict[str, Any]:
        """camelCase JSON for the BalancePolicy status and the CLI's ``--json``."""
        raw = asdict(self)
        raw["state"] = self.state.value
        raw["brokers"] = [
            {"broker": b.broker, "movesInFlight": b.moves_in_flight, "bytesInMoved": b.bytes_in_moved,
             "bytesInTotal": b.bytes_in_total}
            for b in self.brokers
        ]  # fmt: skip
        return {_camel(k): v for k, v in raw.items()}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


class RateMeter:
    """Bytes per second over a trailing window, from cumulative byte counts."""

    def __init__(self, window: float = RATE_WINDOW_SECONDS) -> None:
        self.window = window
        self._points: deque[tuple[float, float]] = deque()

    def add(self, now: float, total_bytes: float) -> None:
        self._points.append((now, total_bytes))
        while len(self._points) > 2 and now - self._points[1][0] >= self.window:
            self._points.popleft()

    def rate(self) -> float:
        if len(self._points) < 2:
            return 0.0
        (t0, b0), (t1, b1) = self._points[0], self._points[-1]
        return max(0.0, (b1 - b0) / (t1 - t0)) if t1 > t0 else 0.0


def broker_progress(
    tasks: Sequence[Task],
    states: Sequence[TaskState],
    in_flight: Mapping[int, Task],
    copied: Mapping[int, float],
) -> tuple[BrokerProgress, ...]:
    """Per broker: moves in flight touching it, bytes received so far (completed moves, plus the
    measured part of moves in flight, split evenly over their receiving replicas) and in total. A
    replica copied between two directories of a broker counts as received by that broker."""
    received: dict[int, list[float]] = {}
    flight: dict[int, int] = {}
    for t in tasks:
        if not t.copies:
            continue
        for b in _receivers(t):
            entry = received.setdefault(b, [0.0, 0.0])
            size = t.added_copy if b in t.adding else t.size_bytes  # else a copy between its directories
            entry[1] += size
            if states[t.index] is TaskState.COMPLETED:
                entry[0] += size
    for i, t in in_flight.items():
        for b in t.brokers:
            flight[b] = flight.get(b, 0) + 1
        receivers = _receivers(t)
        if receivers:
            share = copied.get(i, 0.0) / len(receivers)
            for b in receivers:
                received.setdefault(b, [0.0, 0.0])[0] += share
    return tuple(
        BrokerProgress(b, flight.get(b, 0), *received.get(b, [0.0, 0.0])) for b in sorted(set(received) | set(flight))
    )


def _receivers(task: Task) -> list[int]:
    return [*task.adding, *(d.broker for d in task.between_dirs)]


def eta(remaining_bytes: float, rate: float) -> float | None:
    if remaining_bytes <= 0:
        return 0.0
    return remaining_bytes / rate if rate > 0 else None

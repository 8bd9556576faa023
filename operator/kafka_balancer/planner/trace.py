"""A plan's trace: what each stage did, so that a person can see where a plan's moves and bytes come from.

``plan(model, options, trace=Trace())`` records, for every stage of the pipeline (and every step
inside the distribution stage: each goal's turn, each finishing pass), its time, the replica moves
and bytes of the plan after it and what it added, and the goals out of band after it (hard goals
not held first). Recording costs a pass over the placement and every goal per step, so it is off
unless asked for (``kafka-balancer plan --trace``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kafka_balancer.planner.base.measures import goal_violation, hard_goal_status
from kafka_balancer.planner.base.state import State, arrived_replicas


@dataclass(frozen=True)
class TraceStep:
    """One stage (``depth`` 0) or a step inside one (``depth`` 1) and the plan right after it."""

    name: str
    depth: int
    seconds: float
    moves: int  # replicas the plan adds on brokers that did not hold their partition
    bytes: float  # what copying those replicas moves
    moves_added: int  # by this stage (negative where it undid moves)
    bytes_added: float
    goals_out: tuple[str, ...]  # hard goals not held, then distribution goals out of band

    def to_dict(self) -> dict[str, object]:
        return {
            "stage": self.name,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "moves": self.moves,
            "bytes": self.bytes,
            "movesAdded": self.moves_added,
            "bytesAdded": self.bytes_added,
            "goalsOutOfBand": list(self.goals_out),
        }


def plan_size(st: State) -> tuple[int, float]:
    """(replica moves, bytes) of the working placement against the model's."""
    per_partition = arrived_replicas(st.rep, st.model.replicas).sum(axis=1)
    return int(per_partition.sum()), float((st.model.copy_bytes * per_partition).sum())


class Trace:
    """The steps of one plan, in the order they started (only the plan's last run is kept: a plan
    that re-runs with more goals guarded records that run)."""

    def __init__(self) -> None:
        self.steps: list[TraceStep] = []
        self._depth = 0

    def clear(self) -> None:
        self.steps.clear()
        self._depth = 0

    @contextmanager
    def step(self, st: State, name: str) -> Iterator[None]:
        """Record the step run inside this block (nested blocks are its inner steps)."""
        position, depth = len(self.steps), self._depth
        moves, size = plan_size(st)
        started = time.perf_counter()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
        seconds = time.perf_counter() - started
        after_moves, after_size = plan_size(st)
        hard = [g for g, ok in hard_goal_status(st, st.model.replicas).items() if not ok]
        soft = [g for g in st.options.distribution_goals if goal_violation(st, g) > 1e-9]
        record = TraceStep(
            name, depth, seconds, after_moves, after_size, after_moves - moves, after_size - size, (*hard, *soft)
        )
        self.steps.insert(position, record)

    def table(self) -> str:
        """The steps as a text table, inner steps indented (goals named without "-distribution")."""
        lines = [f"{'stage':<40} {'s':>7} {'moves':>9} {'added':>8} {'bytes':>11} {'added':>11}  goals out of band"]
        for s in self.steps:
            name = ("  " * s.depth + s.name)[:40]
            goals = ", ".join(g.removesuffix("-distribution") for g in s.goals_out) or "-"
            lines.append(
                f"{name:<40} {s.seconds:7.2f} {s.moves:9,d} {s.moves_added:+8,d} {s.bytes:11.4g} "
                f"{s.bytes_added:+11.4g}  {goals}"
            )
        return "\n".join(lines)

"""How error messages name brokers."""

from __future__ import annotations

from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.state import State


def ids_text(st: State, brokers: Ints | list[int]) -> str:
    """Broker ids as ``[1, 2, 5-9]``: error messages stay readable on clusters of hundreds of brokers."""
    ids = sorted(int(st.model.broker_ids[b]) for b in brokers)
    runs: list[list[int]] = []
    for i in ids:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    text = [", ".join(map(str, r)) if len(r) < 3 else f"{r[0]}-{r[-1]}" for r in runs]
    return "[" + ", ".join(text) + "]"

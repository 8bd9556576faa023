"""One round of the capacity repair (what each of its steps reads), and the groups small enough for
the rungs that place a group's replicas again or hand its leaderships out."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.state import State


@dataclass(frozen=True)
class RepairRound:
    """A round of repairing the limit of quantity ``q``.

    ``index`` is the replica slots by broker at the round's start (``State.broker_index_by_slot``;
    entries are checked where used, as steps move replicas); ``nracks`` each group's racks;
    ``leadership_only`` that no data may move (demote-brokers).
    """

    st: State
    q: int
    nracks: Ints
    index: tuple[Ints, Ints]
    leadership_only: bool = False


def with_excluded(st: State, hosts: Ints) -> Ints:
    """``hosts`` and the live brokers excluded from new replicas: they may keep, or take back, what
    they held before, so their replicas are placed again too."""
    out: Ints = np.union1d(hosts, np.flatnonzero(st.active & ~st.can_host))
    return out

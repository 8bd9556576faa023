"""One round of the capacity repair: what each of its steps (descent, make-room) reads."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_balancer.planner.arrays import Ints
from kafka_balancer.planner.state import State


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

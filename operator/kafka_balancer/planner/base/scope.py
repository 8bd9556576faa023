"""What a stage of the plan may do: which partitions move, onto which brokers, which goals guard it.

A :class:`Scope` is one value. The working state holds the current one (``State.scope``); a stage
that narrows or widens it does so for its own duration with ``State.scoped(...)``, which pushes
the changed value and pops it when the stage ends, failed or not. Nothing else writes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from kafka_balancer.model.cluster import BoolArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.catalogue import Exchange


@dataclass(frozen=True)
class Named:
    """An operation onto brokers the user named (``targetBrokers``): what stays there.

    ``held`` marks the partitions whose every replica there stays there (move-topics); ``need`` is
    how many replicas this plan placed there each partition keeps there (remove-brokers: its
    replicas of the removed brokers). Those settle among the named brokers; their peers may move.
    """

    brokers: BoolArray
    held: BoolArray
    need: Ints


@dataclass(frozen=True)
class Scope:
    """What the current stage may move and what it must keep."""

    # Partitions whose replicas and leadership may move.
    movable: BoolArray
    # Resource groups being balanced: the others get no bands (and are not this plan's to repair).
    groups: BoolArray
    # Distribution goals a move must not make worse (the goals optimized so far).
    guarded: frozenset[str]
    # Count quantities whose band is the group average rounded down and up (finishing leader counts).
    exact: frozenset[int] = frozenset()
    # Of the movable partitions, only the replicas this plan placed move (fix-offline-replicas: a
    # re-placed replica may settle elsewhere, its live peers stay).
    arrived_only: bool = False
    # An operation onto named brokers: what stays on them.
    named: Named | None = None
    # The capacity repair runs: partitions of topics in no group (State.unmanaged) may have their
    # leadership and the replicas this plan placed moved.
    repairing: bool = False
    # Exchanges a goal may use only where a stage allows them (count exchanges: finishing.rebuild).
    exchanges: frozenset[Exchange] = field(default_factory=frozenset)


class ScopeChanges(TypedDict, total=False):
    """The fields a stage may change for its duration (see ``State.scoped``)."""

    movable: BoolArray
    groups: BoolArray
    guarded: frozenset[str]
    exact: frozenset[int]
    arrived_only: bool
    named: Named | None
    repairing: bool
    exchanges: frozenset[Exchange]

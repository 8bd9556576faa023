"""The goal catalogue: every goal the planner knows, one record each, and the quantities they weigh.

A :class:`Quantity` (model/quantities, where each per-partition formula is written once) is a
per-broker load, the sum of a load row over the replicas a broker holds (its leader row where the
replica leads): replica count, disk, network in and out, CPU, leader count, leader bytes-in. Its
record says whether it counts whole items, how much of it leadership carries, which column of the
snapshot's capacities limits it, and how to load it per partition.

A :class:`Goal` is a hard goal (a limit a plan never breaks), a distribution goal (a quantity inside
its group's band), a per-topic goal (a topic's replicas or leaders spread over its group) or a
directory goal (a broker's bytes spread over its log directories: planner/log_dirs). Every
table the planner reads about goals (which quantity a goal balances, which goals are capacities,
which quantities leadership carries, which exchanges a goal may use, which goals a stage applies
to) is a view of these records, so adding a goal is one record here (and a loader, for a new
quantity); see docs/goals.md.

The default catalogue (:data:`CATALOGUE`) lists the goals in the CRD's default priority order. A
plan reads its catalogue from its options, so a goal can be added for one plan (the tests do).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Final, Literal

from kafka_balancer.model.quantities import (
    CPU_CORES,
    DISK_BYTES,
    LEADER_BYTES_IN,
    LEADERS,
    NETWORK_IN_BYTES,
    NETWORK_OUT_BYTES,
    QUANTITIES,
    REPLICAS,
    Quantity,
)

GoalKind = Literal["hard", "distribution", "topic", "directory"]


class Exchange(Enum):
    """The exchanges a distribution goal may use besides moving leaderships and replicas one way."""

    TRADES = "leadership trades"  # a heavy leadership for a light one: counts stay, the load moves
    SWAPS = "replica swaps"  # a big replica for a small one: counts stay, the difference moves
    COUNT_EXCHANGES = "count exchanges"  # several light replicas for one heavy one (a scope allows them)
    LEADER_EXCHANGES = "leader exchanges"  # two light leaderships for one heavy one

    @property
    def gated(self) -> bool:
        """Whether a goal uses it only where the stage's scope allows it (``Scope.exchanges``):
        count exchanges move bytes both ways, so only a second pass that needs them has them."""
        return self is Exchange.COUNT_EXCHANGES


@dataclass(frozen=True)
class Goal:
    """One goal: what holds it, and for distribution goals how the planner may reach it."""

    name: str  # as in BalancePolicy spec.goals
    kind: GoalKind
    quantity: str | None = None  # the quantity it limits or balances (per topic: replicas or leaders)
    exchanges: frozenset[Exchange] = frozenset()
    # A hard goal without a quantity that leadership moves can mend (a capacity goal: its quantity's).
    leadership_mends: bool = False
    # A goal that holds by itself unless the snapshot or the policy says otherwise (nothing cordoned,
    # no preferred leader racks, no log directories), added after proposal ids were issued: left out of the
    # options a proposal id hashes, so the ids of existing policies do not change. Where it changes
    # a plan, the plan (hashed too) tells them apart.
    id_neutral: bool = False
    # A per-topic goal: one brief turn of it right after this distribution goal's turn, while the
    # brokers still have slack in the later goals' bands (at the end only exchanges could even it out).
    early_after: str | None = None


# The goals the code refers to by name: their role is their own, not a property others share.
RACK_AWARENESS: Final = "rack-awareness"
GROUP_CONFINEMENT: Final = "resource-group-confinement"
EXCLUDED_BROKERS: Final = "excluded-brokers"
CORDONED_LOG_DIRS: Final = "cordoned-log-dirs"
PREFERRED_LEADER_RACKS: Final = "preferred-leader-racks"
LOG_DIR_CAPACITY: Final = "log-dir-capacity"
LOG_DIR_DISTRIBUTION: Final = "log-dir-distribution"
TOPIC_REPLICA_GOAL: Final = "topic-replica-distribution"
TOPIC_LEADER_GOAL: Final = "topic-leader-distribution"

_LEADERSHIP_SHIFTS = frozenset({Exchange.TRADES})
_BYTE_SHIFTS = frozenset({Exchange.SWAPS})

# Hard goals first, then distribution goals in the default priority order (the CRD's order).
GOALS: Final = (
    Goal(RACK_AWARENESS, "hard"),
    Goal("replica-capacity", "hard", REPLICAS),
    Goal("disk-capacity", "hard", DISK_BYTES),
    Goal("network-in-capacity", "hard", NETWORK_IN_BYTES),
    Goal("network-out-capacity", "hard", NETWORK_OUT_BYTES),
    Goal("cpu-capacity", "hard", CPU_CORES),
    Goal(GROUP_CONFINEMENT, "hard"),
    Goal(EXCLUDED_BROKERS, "hard", leadership_mends=True),
    Goal(CORDONED_LOG_DIRS, "hard", id_neutral=True),
    Goal(PREFERRED_LEADER_RACKS, "hard", leadership_mends=True, id_neutral=True),
    Goal(LOG_DIR_CAPACITY, "hard", id_neutral=True),
    Goal("replica-distribution", "distribution", REPLICAS, frozenset({Exchange.COUNT_EXCHANGES})),
    Goal("disk-distribution", "distribution", DISK_BYTES, _BYTE_SHIFTS),
    Goal("network-in-distribution", "distribution", NETWORK_IN_BYTES, _BYTE_SHIFTS),
    Goal("network-out-distribution", "distribution", NETWORK_OUT_BYTES, _LEADERSHIP_SHIFTS | _BYTE_SHIFTS),
    Goal("cpu-distribution", "distribution", CPU_CORES, _LEADERSHIP_SHIFTS | _BYTE_SHIFTS),
    Goal("leader-count-distribution", "distribution", LEADERS, frozenset({Exchange.LEADER_EXCHANGES})),
    Goal("leader-bytes-in-distribution", "distribution", LEADER_BYTES_IN, _LEADERSHIP_SHIFTS),
    Goal(TOPIC_REPLICA_GOAL, "topic", REPLICAS, early_after="disk-distribution"),
    Goal(TOPIC_LEADER_GOAL, "topic", LEADERS),
    Goal(LOG_DIR_DISTRIBUTION, "directory", id_neutral=True),
)


@dataclass(frozen=True)
class Catalogue:
    """The goals and quantities one plan knows, and every view of them the planner reads.

    Quantities are indexed by their position (the columns of the load arrays); the views are
    computed once per catalogue.
    """

    goals: tuple[Goal, ...] = GOALS
    quantities: tuple[Quantity, ...] = QUANTITIES
    _by_name: dict[str, Goal] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [g.name for g in self.goals]
        if len(set(names)) != len(names):
            raise ValueError(f"goal catalogue: a goal is listed twice in {names}")
        known = {q.name for q in self.quantities}
        for goal in self.goals:
            if goal.quantity is not None and goal.quantity not in known:
                raise ValueError(f"goal catalogue: goal {goal.name!r} names unknown quantity {goal.quantity!r}")
            if goal.kind != "distribution" and goal.exchanges:
                raise ValueError(f"goal catalogue: only distribution goals use exchanges, not {goal.name!r}")
            if goal.early_after is not None:
                self._check_early_after(goal, {g.name: g.kind for g in self.goals})
        object.__setattr__(self, "_by_name", {g.name: g for g in self.goals})

    @staticmethod
    def _check_early_after(goal: Goal, kinds: dict[str, GoalKind]) -> None:
        if goal.kind != "topic":
            raise ValueError(f"goal catalogue: only per-topic goals have an early turn, not {goal.name!r}")
        if kinds.get(goal.early_after or "") != "distribution":
            raise ValueError(
                f"goal catalogue: field 'early_after' of {goal.name!r} names {goal.early_after!r},"
                " which is not a distribution goal of the catalogue"
            )

    def with_goals(self, *goals: Goal, quantities: Iterable[Quantity] = ()) -> Catalogue:
        """This catalogue with more goals (and the new quantities they weigh) after its own."""
        return Catalogue((*self.goals, *goals), (*self.quantities, *quantities))

    # ----- goals --------------------------------------------------------------------------------
    def goal(self, name: str) -> Goal:
        return self._by_name[name]

    def names(self, *kinds: GoalKind) -> tuple[str, ...]:
        """Goal names of the given kinds, in catalogue order (the default priority order)."""
        return tuple(g.name for g in self.goals if g.kind in kinds)

    @cached_property
    def hard_goals(self) -> tuple[str, ...]:
        return self.names("hard")

    @cached_property
    def distribution_goals(self) -> tuple[str, ...]:
        """Distribution, per-topic and directory goals: the default ``spec.goals.distribution``."""
        return self.names("distribution", "topic", "directory")

    @cached_property
    def topic_goals(self) -> tuple[str, ...]:
        return self.names("topic")

    @cached_property
    def capacity_goals(self) -> tuple[tuple[str, int], ...]:
        """(goal, quantity index) of the hard goals that limit a quantity, in catalogue order."""
        return tuple((g.name, self.index(g.quantity)) for g in self.goals if g.kind == "hard" and g.quantity)

    def balances(self, goal: str) -> int | None:
        """The quantity index a broker-level distribution goal balances (None for other goals)."""
        record = self._by_name.get(goal)
        if record is None or record.kind != "distribution" or record.quantity is None:
            return None
        return self.index(record.quantity)

    def uses(self, goal: str, exchange: Exchange, allowed: frozenset[Exchange] = frozenset()) -> bool:
        """Whether ``goal`` may use ``exchange`` now (a gated one only when ``allowed`` names it)."""
        return exchange in self._by_name[goal].exchanges and (not exchange.gated or exchange in allowed)

    def leader_count_goals(self, goals: Iterable[str]) -> tuple[str, ...]:
        """Of ``goals``, the distribution goals over a quantity that counts whole items and that only
        leaders carry (the leader count): leadership moves alone, which move no data, can finish them."""
        return tuple(g for g in goals if (q := self.balances(g)) is not None and self.count(q) and self.leaders_only(q))

    def topic_leader_goals(self, goals: Iterable[str]) -> tuple[str, ...]:
        """Of ``goals``, the per-topic goals over a quantity only leaders carry (a topic's leaders)."""
        return tuple(g for g in goals if self._topic_quantity(g) in self._leaders_only_names)

    def using(self, exchange: Exchange, goals: Iterable[str]) -> tuple[str, ...]:
        """Of ``goals``, those whose record lists ``exchange``."""
        return tuple(g for g in goals if exchange in self._by_name[g].exchanges)

    def early_turns(self, goal: str) -> tuple[str, ...]:
        """The per-topic goals that have a brief turn right after ``goal``'s (``Goal.early_after``)."""
        return tuple(g.name for g in self.goals if g.early_after == goal)

    def _topic_quantity(self, goal: str) -> str | None:
        record = self._by_name[goal]
        return record.quantity if record.kind == "topic" else None

    @cached_property
    def _leaders_only_names(self) -> frozenset[str]:
        return frozenset(q.name for q in self.quantities if q.leaders_only)

    def leadership_mends(self, goal: str) -> bool:
        """Whether leadership moves alone can mend a hard goal (demote-brokers answers only for those)."""
        record = self._by_name[goal]
        if record.quantity is not None:
            return self.quantities[self.index(record.quantity)].leadership_carries
        return record.leadership_mends

    # ----- quantities ---------------------------------------------------------------------------
    @cached_property
    def quantity_names(self) -> tuple[str, ...]:
        return tuple(q.name for q in self.quantities)

    def index(self, quantity: str) -> int:
        return self.quantity_names.index(quantity)

    @property
    def size(self) -> int:
        """Number of quantities: the width of the load arrays."""
        return len(self.quantities)

    def count(self, q: int) -> bool:
        return self.quantities[q].count

    def leadership_carries(self, q: int) -> bool:
        return self.quantities[q].leadership_carries

    def leaders_only(self, q: int) -> bool:
        return self.quantities[q].leaders_only

    @cached_property
    def counts(self) -> frozenset[int]:
        return frozenset(i for i, q in enumerate(self.quantities) if q.count)

    @cached_property
    def leading(self) -> list[int]:
        """The quantities a leadership carries beyond its follower's, in column order."""
        return [i for i, q in enumerate(self.quantities) if q.leadership_carries]

    @cached_property
    def leader_loads(self) -> list[int]:
        """The loads (not counts) a leadership carries beyond its follower's, in column order."""
        return [i for i, q in enumerate(self.quantities) if q.leadership_carries and not q.count]

    @cached_property
    def loads(self) -> list[int]:
        """The quantities that are not counts, in column order."""
        return [i for i, q in enumerate(self.quantities) if not q.count]


CATALOGUE: Final = Catalogue()

# Column of each built-in quantity (new quantities are appended, so these never move).
Q_REPLICAS: Final = CATALOGUE.index(REPLICAS)
Q_DISK: Final = CATALOGUE.index(DISK_BYTES)
Q_LEADERS: Final = CATALOGUE.index(LEADERS)

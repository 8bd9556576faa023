"""The planner's mutable working state: placement, per-partition loads and per-broker totals.

Everything is an array indexed by partition or broker so that a round of moves is a handful of
numpy operations. Per-broker totals are updated incrementally on every move (``np.add.at``), so
checking a candidate never re-sums the cluster.

Quantities (columns of ``lead``/``follow``/``load``) are the goal catalogue's
(:mod:`kafka_balancer.planner.catalogue`), in its order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final, Unpack

import numpy as np

from kafka_balancer.model.cluster import DISK, NO_BROKER, BoolArray, ClusterModel, FloatArray
from kafka_balancer.model.log_dirs import DirLayout
from kafka_balancer.model.policy.operations import DEMOTE_BROKERS
from kafka_balancer.planner.base.arrays import Ints, stable_order
from kafka_balancer.planner.base.budget import Budget
from kafka_balancer.planner.base.leader_racks import leader_tiers, preferred_tier
from kafka_balancer.planner.base.log_dirs import build_layout, dir_disk_limits
from kafka_balancer.planner.base.resource_groups import Groups
from kafka_balancer.planner.base.scope import Scope, ScopeChanges
from kafka_balancer.planner.catalogue import CATALOGUE, CORDONED_LOG_DIRS, LOG_DIR_CAPACITY, Catalogue
from kafka_balancer.planner.options import PlannerOptions, PlanningError

# A copy of the placement and its totals: (rep, load, tcount, tlead, tactive).
Checkpoint = tuple[Ints, FloatArray, Ints, Ints, Ints]

# The per-topic goals keep each topic's replica and leader count on every broker (``tcount``,
# ``tlead``: topics x brokers cells), and their passes read such tables whole every round, so time
# and memory grow with the cells (about 60 bytes each at the peak of a plan, counting copies and
# temporaries). Above this many cells a plan is refused before anything is allocated: 50 million is
# 10,000 topics on 5,000 brokers, or ~100 partitions per broker on 2,000 brokers with 20 per topic
# (docs/goals.md, "Limits").
MAX_TOPIC_BROKER_CELLS: Final = 50_000_000


def check_size(model: ClusterModel) -> None:
    """Refuse a cluster whose per-topic tables would exceed :data:`MAX_TOPIC_BROKER_CELLS`."""
    topics, brokers = len(model.topics), model.num_brokers
    if topics * brokers > MAX_TOPIC_BROKER_CELLS:
        raise PlanningError(
            "cluster-too-large",
            f"{topics:,} topics x {brokers:,} brokers = {topics * brokers:,} per-topic counts, above the "
            f'planner\'s limit of {MAX_TOPIC_BROKER_CELLS:,} (docs/goals.md, "Limits")',
        )


def arrived_replicas(rep: Ints, orig: Ints) -> BoolArray:
    """(P, width): replicas of ``rep`` on a broker that did not hold their partition in ``orig``."""
    held = np.zeros(rep.shape, dtype=np.bool_)
    for column in orig.T:  # column by column: a (P, width, width) comparison costs several times more
        held |= rep == column[:, None]
    out: BoolArray = (rep != NO_BROKER) & ~held
    return out


def partition_loads(model: ClusterModel, rf: Ints, catalogue: Catalogue = CATALOGUE) -> tuple[FloatArray, FloatArray]:
    """Per-partition (leader, follower) load rows over the catalogue's quantities."""
    count = model.num_partitions
    lead = np.empty((count, catalogue.size))
    follow = np.zeros((count, catalogue.size))
    for q, quantity in enumerate(catalogue.quantities):
        lead[:, q], follow[:, q] = quantity.load(model, rf)
    return lead, follow


class State:
    """Working placement plus incremental per-broker and per-topic totals."""

    def __init__(self, model: ClusterModel, options: PlannerOptions, groups: Groups):
        check_size(model)
        self.model = model
        self.options = options
        self.catalogue = options.catalogue
        self.groups = groups
        self.rep: Ints = np.array(model.replicas, dtype=np.int32, copy=True)
        self.ptopic: Ints = model.partition_topic
        nb = model.num_brokers
        ids = model.broker_ids.tolist()
        rack_names = sorted({r or f"(no rack: broker {ids[b]})" for b, r in enumerate(model.broker_racks)})
        code = {r: i for i, r in enumerate(rack_names)}
        self.rack: Ints = np.array(
            [code[r or f"(no rack: broker {ids[b]})"] for b, r in enumerate(model.broker_racks)], dtype=np.int32
        )
        self.removed: BoolArray = np.zeros(nb, dtype=np.bool_)
        op = options.operation
        if op.kind.removes_brokers:
            self.removed[[self.index_of(b, "operation.brokers") for b in op.brokers]] = True
        self.active: BoolArray = model.broker_alive & ~self.removed
        self.can_host: BoolArray = self.active.copy()
        self.can_lead: BoolArray = self.active.copy()
        if options.hard("excluded-brokers"):
            for b in options.excluded_brokers_for_replicas:
                self.can_host[self.index_of(b, "goals.excludedBrokersForReplicas")] = False
            for b in options.excluded_brokers_for_leadership:
                self.can_lead[self.index_of(b, "goals.excludedBrokersForLeadership")] = False
        if options.hard(CORDONED_LOG_DIRS):
            # A broker whose every log directory is cordoned (KIP-1066) takes no new replica; one
            # with some left takes them there (Kafka picks the directory). Both keep what they hold.
            self.can_host &= ~model.broker_cordoned
        if op.kind is DEMOTE_BROKERS:
            for b in op.brokers:
                self.can_lead[self.index_of(b, "operation.brokers")] = False
        # Preferred leader racks: the tier each broker's leaderships count in (None without them).
        self.tiers = leader_tiers(model, options, groups.names)
        # measures.topic_leader_applies, computed on first use: it reads only the snapshot and the
        # tiers, and every round's bands ask for it (T topics x 4 passes over the partitions).
        self.topic_leader_spread: BoolArray | None = None
        movable: BoolArray = groups.balanced[groups.partition] if model.num_partitions else np.zeros(0, bool)
        if options.topics:
            wanted = np.array([t in set(options.topics) for t in model.topics], dtype=np.bool_)
            movable = movable & wanted[self.ptopic]
        # Partitions of topics in no group while every broker is in one: no goal balances them and
        # they stay where they are, but while the capacity repair runs (``Scope.repairing``) it may
        # move their leadership and re-place the replicas this plan placed (off a dead or removed
        # broker) on any broker. Not in a rebalance limited to topics or groups: it answers for those only.
        limited = bool(options.topics or options.groups_to_balance)
        self.unmanaged: BoolArray = ~groups.has_brokers[groups.partition] & (not limited)
        self.has_unmanaged = bool(self.unmanaged.any())
        # What the stage running may move and must keep (see planner.scope); every goal guards at first.
        self.scope = Scope(movable=movable, groups=groups.balanced, guarded=frozenset(options.distribution_goals))
        # JBOD: the cluster's log directories (None when none are known), and each replica's directory
        # (``State.dirs``), which the log-directory stage sets last (planner/log_dirs).
        self.dir_layout: DirLayout | None = build_layout(model, options)
        self.dirs: Ints | None = None
        self.limit: FloatArray = np.full((nb, self.catalogue.size), math.inf)
        self._set_limits()
        self.refresh_loads()
        self.load_before: FloatArray = self.load.copy()
        self.budget = Budget()  # unlimited; plan() gives its run the policy's (goals.maxPlanningSeconds)

    def index_of(self, broker_id: int, field_name: str) -> int:
        try:
            return self.model.broker_index(broker_id)
        except KeyError:
            known = self.model.broker_ids.tolist()
            raise PlanningError(
                "invalid-options", f"field '{field_name}' names broker {broker_id}, which is not in the cluster {known}"
            ) from None

    def _set_limits(self) -> None:
        """Each capacity goal's limit per broker: maxReplicasPerBroker for a quantity without a
        capacity column, else capacityThreshold x the snapshot's capacity (unknown = unlimited)."""
        opts = self.options
        for goal, q in self.catalogue.capacity_goals:
            if not opts.hard(goal):
                continue
            column = self.catalogue.quantities[q].capacity_column
            if column is None:
                self.limit[:, q] = opts.max_replicas_per_broker
            else:
                cap = self.model.capacity[:, column] * opts.capacity_threshold
                self.limit[:, q] = np.where(np.isnan(cap), math.inf, cap)
                if column == DISK and self.dir_layout is not None and opts.hard(LOG_DIR_CAPACITY):
                    # A broker cannot hold more than its directories may (log-dir-capacity).
                    self.limit[:, q] = np.minimum(self.limit[:, q], dir_disk_limits(self.dir_layout, self.model, opts))

    @property
    def rf(self) -> Ints:
        rf: Ints = (self.rep != NO_BROKER).sum(axis=1).astype(np.int32)
        return rf

    def refresh_loads(self) -> None:
        """Recompute every total from the placement (after a replication-factor change)."""
        self.lead, self.follow = partition_loads(self.model, self.rf, self.catalogue)
        nb, nt = self.model.num_brokers, len(self.model.topics)
        self.load: FloatArray = np.zeros((nb, self.catalogue.size))
        self.tcount: Ints = np.zeros((nt, nb), dtype=np.int32)
        self.tlead: Ints = np.zeros((nt, nb), dtype=np.int32)
        width = self.rep.shape[1]
        for k in range(width):
            col = self.rep[:, k]
            ok = col != NO_BROKER
            rows = self.lead if k == 0 else self.follow
            for q in range(self.catalogue.size):
                self.load[:, q] += np.bincount(col[ok], weights=rows[ok, q], minlength=nb)
            np.add.at(self.tcount, (self.ptopic[ok], col[ok]), 1)
            if k == 0:
                np.add.at(self.tlead, (self.ptopic[ok], col[ok]), 1)
        # Each topic's replicas (column 0) and leaders (column 1) on active brokers, the totals its
        # per-topic bands divide: every round asks, and only a move onto or off an inactive
        # broker changes them.
        on_active = (self.rep != NO_BROKER) & self.active[np.maximum(self.rep, 0)]
        self.tactive: Ints = np.zeros((nt, 2), dtype=np.int64)
        for k in range(width):
            self.tactive[:, 0] += np.bincount(self.ptopic[on_active[:, k]], minlength=nt)
        self.tactive[:, 1] = np.bincount(self.ptopic[on_active[:, 0]], minlength=nt) if width else 0

    def slot_loads(self, parts: Ints, slots: Ints) -> FloatArray:
        """(n, Q): the load replica ``slots`` of ``parts`` carries (the leader's row for slot 0)."""
        rows: FloatArray = self.follow[parts]
        leaders = np.flatnonzero(np.broadcast_to(slots == 0, parts.shape))  # each row gathered once, not both
        rows[leaders] = self.lead[parts[leaders]]
        return rows

    def replicas_on(self, parts: Ints, brokers: BoolArray) -> Ints:
        """How many replicas each of ``parts`` has on the ``brokers`` (a broker mask)."""
        rep = self.rep[parts]
        count: Ints = ((rep != NO_BROKER) & brokers[np.maximum(rep, 0)]).sum(axis=1).astype(np.int32)
        return count

    @contextmanager
    def scoped(self, **changes: Unpack[ScopeChanges]) -> Iterator[Scope]:
        """Run a stage with the scope changed as given; the scope before it comes back at its end."""
        saved = self.scope
        self.scope = dataclasses.replace(saved, **changes)
        try:
            yield self.scope
        finally:
            self.scope = saved

    def placed_on_named(self, parts: Ints) -> Ints:
        """How many replicas of each of ``parts`` this plan placed on the named brokers (0 when none are)."""
        named = self.scope.named
        if named is None:
            return np.zeros(parts.size, dtype=np.int64)
        rep = self.rep[parts]
        out: Ints = (arrived_replicas(rep, self.model.replicas[parts]) & named.brokers[np.maximum(rep, 0)]).sum(axis=1)
        return out

    def named_targets(self) -> BoolArray:
        """The brokers the operation's ``targetBrokers`` names, as a mask."""
        mask = np.zeros(self.model.num_brokers, dtype=np.bool_)
        mask[[self.index_of(b, "operation.targetBrokers") for b in self.options.operation.target_brokers]] = True
        return mask

    # ----- mutations --------------------------------------------------------------------------
    def move(self, parts: Ints, slots: Ints, dest: Ints) -> None:
        """Move replica ``slots`` of ``parts`` (distinct partitions) to brokers ``dest``."""
        if parts.size == 0:
            return
        src = self.rep[parts, slots]
        rows = self.slot_loads(parts, slots)
        np.add.at(self.load, src, -rows)
        np.add.at(self.load, dest, rows)
        topics = self.ptopic[parts]
        np.add.at(self.tcount, (topics, src), -1)
        np.add.at(self.tcount, (topics, dest), 1)
        led = slots == 0
        np.add.at(self.tlead, (topics[led], src[led]), -1)
        np.add.at(self.tlead, (topics[led], dest[led]), 1)
        self._count_active(0, topics, (src, dest))
        self._count_active(1, topics[led], (src[led], dest[led]))
        self.rep[parts, slots] = dest

    def swap_leader(self, parts: Ints, slots: Ints) -> None:
        """Make replica ``slots`` of ``parts`` (distinct partitions) the preferred leader (slot 0)."""
        if parts.size == 0:
            return
        old = self.rep[parts, 0].copy()
        new = self.rep[parts, slots].copy()
        delta = self.lead[parts] - self.follow[parts]
        np.add.at(self.load, old, -delta)
        np.add.at(self.load, new, delta)
        topics = self.ptopic[parts]
        np.add.at(self.tlead, (topics, old), -1)
        np.add.at(self.tlead, (topics, new), 1)
        self._count_active(1, topics, (old, new))
        self.rep[parts, 0] = new
        self.rep[parts, slots] = old

    def _count_active(self, column: int, topics: Ints, moves: tuple[Ints, Ints]) -> None:
        """``tactive[:, column]`` (0: replicas, 1: leaderships) after ones of ``topics`` went from
        brokers ``moves[0]`` to ``moves[1]``."""
        on = [(b != NO_BROKER) & self.active[np.maximum(b, 0)] for b in moves]
        change = on[1].astype(np.int64) - on[0]
        if change.any():
            np.add.at(self.tactive[:, column], topics, change)

    def checkpoint(self) -> Checkpoint:
        """A copy of the placement and its totals, for :meth:`restore`."""
        return self.rep.copy(), self.load.copy(), self.tcount.copy(), self.tlead.copy(), self.tactive.copy()

    def restore(self, saved: Checkpoint) -> None:
        """Go back to a :meth:`checkpoint` (copied again, so it can be restored more than once)."""
        rep, load, tcount, tlead, tactive = saved
        self.rep[...] = rep
        self.load[...] = load
        self.tcount[...] = tcount
        self.tlead[...] = tlead
        self.tactive[...] = tactive

    # ----- derived ------------------------------------------------------------------------------
    def broker_index_by_slot(self) -> tuple[Ints, Ints]:
        """Flat slot positions sorted by broker, and the start offset of each broker (length B+1)."""
        flat = self.rep.ravel()
        order = stable_order(flat)
        starts: Ints = np.searchsorted(flat[order], np.arange(self.model.num_brokers + 1))
        return order, starts

    def slots_held(self, index: tuple[Ints, Ints], broker: int) -> tuple[Ints, Ints]:
        """The entries of ``index`` (:meth:`broker_index_by_slot`, built earlier) under ``broker``
        whose slot still holds it: (partitions, slots), in the index's order."""
        order, starts = index
        width = self.rep.shape[1]
        pos = order[starts[broker] : starts[broker + 1]]
        parts = (pos // width).astype(np.int64)
        slots = (pos % width).astype(np.int64)
        keep = self.rep[parts, slots] == broker
        return parts[keep], slots[keep]

    def gained(self, q: int) -> BoolArray:
        """Brokers carrying more of ``q`` than before planning."""
        out: BoolArray = self.load[:, q] > self.load_before[:, q] * (1 + 1e-9) + 1e-9
        return out

    def hosts_of_group(self, g: int) -> BoolArray:
        """Brokers that may take a replica of group ``g``'s partitions: its own, or any broker when
        it has none (topics in no ResourceGroup while every broker is in one are not confined)."""
        out: BoolArray = self.can_host & ((self.groups.broker == g) if self.groups.has_brokers[g] else True)
        return out

    def unmanaged_arrivals(self) -> BoolArray:
        """Brokers holding a replica of an ``unmanaged`` partition that this plan placed there."""
        out: BoolArray = np.zeros(self.model.num_brokers, dtype=np.bool_)
        if not self.has_unmanaged:
            return out
        rows = np.flatnonzero(self.unmanaged)
        rep = self.rep[rows]
        placed = (rep != NO_BROKER) & ~(rep[:, :, None] == self.model.replicas[rows][:, None, :]).any(axis=2)
        out[rep[placed]] = True
        return out

    def lead_slots(self, parts: Ints) -> BoolArray:
        """(n, width): which replica slots of ``parts`` may take their leadership under the preferred
        leader racks (those in the partition's preferred rack; every slot without racks, or where the
        partition has no replica in a listed rack). Whether the broker may lead at all is ``can_lead``."""
        rows = self.rep[parts]
        if self.tiers is None:
            return np.ones(rows.shape, dtype=np.bool_)
        group = self.groups.partition[parts]
        want = preferred_tier(self.tiers, rows, group, self.active & self.can_lead)
        out: BoolArray = (want >= self.tiers.listed)[:, None] | (self.tiers.of_replicas(rows, group) == want[:, None])
        return out

    def balance_groups(self, q: int) -> tuple[Ints, int]:
        """Per broker, the set of brokers quantity ``q`` is balanced among (a resource group, or with
        preferred leader racks one leader tier of it, under its own list, for the quantities leadership
        carries), and how many such sets there are."""
        ng = len(self.groups.names)
        if self.tiers is None or not self.catalogue.leadership_carries(q):
            return self.groups.broker, ng
        width = self.tiers.listed + 1
        key: Ints = self.groups.broker * width + self.tiers.own(self.groups.broker)
        return key, ng * width

    def group_racks(self) -> Ints:
        """Number of distinct racks among each group's hosting brokers."""
        counts = np.zeros(len(self.groups.names), dtype=np.int32)
        for g in range(len(self.groups.names)):
            members = self.can_host & (self.groups.broker == g)
            counts[g] = np.unique(self.rack[members]).size
        return counts


def only_group(st: State, group: int) -> contextlib.AbstractContextManager[Scope]:
    """Plan only ``group``: the other groups get no bands and none of their partitions may move."""
    groups, movable = st.scope.groups, st.scope.movable
    return st.scoped(
        groups=groups & (np.arange(groups.size) == group), movable=movable & (st.groups.partition == group)
    )

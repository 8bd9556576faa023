"""Capacity repair by search, when descent and make-room both stall: place a small group's replicas again.

The descent only takes steps that shrink the excess, and make-room looks one level deep. A tight
packing (a few brokers, partitions of up to half a broker, totals near the limits) can need a chain
of several moves whose first steps shrink nothing. Such groups are small, so here the replicas of
the group that may move are placed again, largest first, by a depth-first search with
backtracking, under every limit, the rack spread, the group and the exclusions, and never with
another replica of its partition: each on its own broker first, then on the others by most room;
if that finds nothing in half the budget, most room first (which finds packings that fit, moving
more); if that finds nothing either, jittered restarts of most room first (:meth:`Packing.restarts`).
It is a branch and bound on the bytes moved: it keeps the placement that moves the fewest
bytes of those it finds within a budget of placements tried, puts back what can still go back, and
changes nothing when it finds none. Each replica keeps its role (leader or follower; where the
search finds nothing, :mod:`leadership_room` lets the leaderships change hands). It runs only
on groups with at most ``TUNING.search_max_replicas`` movable replicas (at scale the descent has room to work
with, and this search would be blind).
"""

from __future__ import annotations

from typing import Final

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.candidates import may_host, movable_replicas
from kafka_balancer.planner.base.measures import rack_allowance
from kafka_balancer.planner.base.state import State, arrived_replicas
from kafka_balancer.planner.capacity.repair_round import with_excluded
from kafka_balancer.planner.catalogue import Q_REPLICAS
from kafka_balancer.planner.tuning import TUNING

TOL: Final = 1e-9
# Seed of the jittered restarts (TUNING.search_jitter): the same input gives the same plan.
RESTART_SEED: Final = 20261125


def search(st: State, q: int, *, hosts: Ints, nracks: Ints) -> float:
    """Bring every one of ``hosts`` (sorted) under its limit of ``q`` by placing the replicas that
    may move again; returns the excess removed (all of it), or 0 with nothing changed."""
    packing = packing_of(st, q, hosts=hosts, nracks=nracks)
    if packing is None:
        return 0.0
    # Staying put first finds the placements that move least; most room first, the ones that fit.
    placement = packing.run(home_first=True, budget=TUNING.search_budget // 2)
    if placement is None:
        placement = packing.run(home_first=False, budget=TUNING.search_budget // 2)
    if placement is None:
        placement = packing.restarts(budget=TUNING.search_restart_budget)
    if placement is None:
        return 0.0
    return packing.apply(st, placement)


def packing_of(
    st: State, q: int, *, hosts: Ints, nracks: Ints, most: int = TUNING.search_max_replicas
) -> Packing | None:
    """The packing of the replicas that may move on ``hosts`` (sorted) and the live brokers excluded
    from new replicas, when some of them is above its limit of ``q`` and there are at most ``most``
    of them (None otherwise, and where what may not move is over the limit already)."""
    hosts = with_excluded(st, hosts)  # the broker over its limit may be one of them
    if _excess(st, q, hosts) <= TOL:
        return None
    if st.load[hosts, Q_REPLICAS].sum() > TUNING.ladder_max_hosted:
        return None
    index = st.broker_index_by_slot()
    found = [movable_replicas(st, index, b, leaders_only=False) for b in hosts.tolist()]
    parts = np.concatenate([f[0] for f in found])
    slots = np.concatenate([f[1] for f in found])
    if parts.size == 0 or parts.size > most:
        return None
    packing = Packing(st, q, hosts=hosts, nracks=nracks, parts=parts, slots=slots)
    if np.any(packing.room[:, q] < 0):
        return None
    return packing


class Packing:
    """The movable replicas ``(parts, slots)`` of a group to place onto ``hosts``, and the depth-first
    search that places them (:mod:`solver` hands the same packing to a solver)."""

    def __init__(self, st: State, q: int, *, hosts: Ints, nracks: Ints, parts: Ints, slots: Ints) -> None:
        self.q, self.hosts = q, hosts
        self.excess = _excess(st, q, hosts)  # what a placement removes: all of it
        v = st.slot_loads(parts, slots)
        order = np.argsort(-v[:, q], kind="stable")  # largest first: the small ones fill the gaps
        self.parts, self.slots, self.v = parts[order], slots[order], v[order]
        self.home = np.searchsorted(hosts, st.rep[self.parts, self.slots])  # position in hosts
        self.cost = st.model.copy_bytes[self.parts]  # bytes copied when a replica leaves its broker
        # Room: every limit for q; for the other quantities no broker ends further above one than now.
        load = st.load[hosts]
        cap = np.maximum(st.limit[hosts], load)
        cap[:, q] = st.limit[hosts, q]
        self.room = cap * (1 + 1e-12) + TOL - (load - _placed(self.home, self.v, hosts.size))
        self.domain = np.stack(
            [may_host(st, self.parts, self.slots, d=int(d), returning=True, counting_named=True) for d in hosts], axis=1
        )
        self.domain[np.arange(self.parts.size), self.home] = True  # a replica may stay where it is
        self._partitions(st, nracks)
        self.left = float(self.v[:, q].sum())  # q of the items not placed
        self._empty = (
            self.room.copy(),
            self.held.copy(),
            self.racks.copy(),
            self.left,
            self.named_missing.copy(),
            self.unplaced.copy(),
        )

    def _partitions(self, st: State, nracks: Ints) -> None:
        """Brokers and racks each partition holds apart from the replicas placed here, and how many
        replicas each rack may hold (as many as now where it already holds more: not ours to mend)."""
        local, self.pid = np.unique(self.parts, return_inverse=True)
        rows = st.rep[local]
        valid = rows != NO_BROKER
        moving = np.zeros(rows.shape, dtype=np.bool_)
        moving[self.pid, self.slots] = True
        n_racks = int(st.rack.max()) + 1
        self.host_rack = st.rack[self.hosts]
        self.held = np.zeros((local.size, self.hosts.size), dtype=np.bool_)
        position = np.full(st.model.num_brokers, -1, dtype=np.int64)  # of each broker among the hosts
        position[self.hosts] = np.arange(self.hosts.size)
        self.racks = np.zeros((local.size, n_racks), dtype=np.int64)
        now = np.zeros((local.size, n_racks), dtype=np.int64)
        for k in range(rows.shape[1]):
            on = np.flatnonzero(valid[:, k])
            np.add.at(now, (on, st.rack[rows[on, k]]), 1)
            fixed = on[~moving[on, k]]
            np.add.at(self.racks, (fixed, st.rack[rows[fixed, k]]), 1)
            at = position[rows[fixed, k]]
            self.held[fixed[at >= 0], at[at >= 0]] = True
        if st.options.hard("rack-awareness"):
            rf = valid.sum(axis=1)
            self.allowed = np.maximum(rack_allowance(rf, nracks[st.groups.partition[local]])[:, None], now)
        else:
            self.allowed = np.full(now.shape, rows.shape[1], dtype=np.int64)
        # Of an operation onto brokers the user named: the hosts where each item would count as
        # placed there by this plan (named, and not holding its partition before), how many such
        # replicas each partition still misses (``Named.need``; the domain lets every one of
        # them go elsewhere, :meth:`_fits` keeps the count), and its items not yet placed.
        self.placing = np.zeros((self.parts.size, self.hosts.size), dtype=np.bool_)
        self.named_missing = np.zeros(local.size, dtype=np.int64)
        named = st.scope.named
        if named is not None:
            before = (st.model.replicas[self.parts][:, :, None] == self.hosts[None, None, :]).any(axis=1)
            self.placing = named.brokers[self.hosts][None, :] & ~before
            placed = arrived_replicas(rows, st.model.replicas[local]) & ~moving & named.brokers[np.maximum(rows, 0)]
            self.named_missing = named.need[local] - placed.sum(axis=1)
        self.unplaced = np.bincount(self.pid, minlength=local.size)

    def _reset(self) -> None:
        """Nothing placed (a run may stop halfway)."""
        room, held, racks, self.left, missing, unplaced = self._empty
        self.room, self.held, self.racks = room.copy(), held.copy(), racks.copy()
        self.named_missing, self.unplaced = missing.copy(), unplaced.copy()

    def _fits(self, i: int) -> BoolArray:
        """The hosts item ``i`` may go to now, with what is placed so far."""
        p = self.pid[i]
        ok: BoolArray = self.domain[i] & ~self.held[p]
        ok &= self.racks[p, self.host_rack] < self.allowed[p, self.host_rack]
        ok &= np.all(self.room >= self.v[i], axis=1)
        if self.unplaced[p] <= self.named_missing[p]:
            ok &= self.placing[i]  # its partition's last items: each must count towards its need
        return ok

    def _candidates(self, i: int, *, home_first: bool) -> Ints:
        """Where item ``i`` may go now: its own broker first (``home_first``), then most room for q."""
        cands = np.flatnonzero(self._fits(i))
        key = -self.room[cands, self.q]
        if home_first:
            key = np.where(cands == self.home[i], -np.inf, key)
        out: Ints = cands[np.argsort(key, kind="stable")]
        return out

    def _place(self, i: int, j: int, sign: int) -> float:
        """Put item ``i`` on host ``j`` (``sign`` 1) or take it off (-1); returns the bytes that moves."""
        self.room[j] -= sign * self.v[i]
        self.held[self.pid[i], j] = sign > 0
        self.racks[self.pid[i], self.host_rack[j]] += sign
        self.unplaced[self.pid[i]] -= sign
        self.named_missing[self.pid[i]] -= sign * int(self.placing[i, j])
        self.left -= sign * float(self.v[i, self.q])
        return 0.0 if j == self.home[i] else float(self.cost[i])

    def run(self, *, home_first: bool, budget: int) -> Ints | None:
        """The placement (a broker per item) that moves the fewest bytes of those found by trying at
        most ``budget`` placements; None when none was found."""
        self._reset()
        n = self.parts.size
        at = np.full(n, -1, dtype=np.int64)
        best: Ints | None = None
        best_cost = np.inf
        cost = 0.0
        cands: list[Ints] = [self._candidates(0, home_first=home_first)]
        pos = [0]
        depth = 0
        for _ in range(budget):
            while pos[depth] >= cands[depth].size:  # every choice for this item tried: back up
                cands.pop()
                pos.pop()
                depth -= 1
                if depth < 0:
                    return best
                cost -= self._place(depth, int(at[depth]), -1)
                pos[depth] += 1
            i, j = depth, int(cands[depth][pos[depth]])
            pos[depth] += 1
            step = self._place(i, j, 1)
            if cost + step >= best_cost - TOL:
                self._place(i, j, -1)  # no cheaper than the best found
                continue
            if depth + 1 == n:
                at[i] = j
                best, best_cost = self.hosts[at].copy(), cost + step
                self._place(i, j, -1)
                continue
            if self.left > float(np.maximum(self.room[:, self.q], 0.0).sum()) + TOL:
                self._place(i, j, -1)  # the rest cannot fit, however placed
                continue
            at[i] = j
            cost += step
            depth += 1
            cands.append(self._candidates(depth, home_first=home_first))
            pos.append(0)
        return best

    def restarts(self, *, budget: int) -> Ints | None:
        """Most room first again and again, the order of the items and the brokers' rooms jittered,
        ``budget // n`` passes of the ``n`` items (at most ``budget`` placements); the settled
        placement that moves the fewest bytes, or None.

        The depth-first runs back up the last items first, so a wrong early choice is never undone
        within their budget; on a packing with 2% to spare (80 replicas on 8 brokers) both found
        nothing, while a jittered pass found one on its first try."""
        rng = np.random.default_rng(RESTART_SEED)
        n = self.parts.size
        size = self.v[:, self.q]
        best: Ints | None = None
        best_cost = np.inf
        for _ in range(budget // n):
            self._reset()
            at = np.full(n, -1, dtype=np.int64)
            for i in np.argsort(
                -size * rng.uniform(1 - TUNING.search_jitter, 1 + TUNING.search_jitter, n), kind="stable"
            ).tolist():
                cands = np.flatnonzero(self._fits(i))
                if cands.size == 0:
                    break
                key = self.room[cands, self.q] + TUNING.search_jitter * size[i] * rng.random(cands.size)
                at[i] = cands[int(np.argmax(key))]
                self._place(i, int(at[i]), 1)
            else:
                placement = self.settle(self.hosts[at])
                cost = float(self.cost[placement != self.hosts[self.home]].sum())
                if cost < best_cost:
                    best, best_cost = placement, cost
        return best

    def apply(self, st: State, placement: Ints) -> float:
        """Move the replicas to ``placement`` (a broker per item), settled first; returns the excess
        that removes (all of it)."""
        placement = self.settle(placement)
        moving = np.flatnonzero(placement != st.rep[self.parts, self.slots])
        st.move(self.parts[moving], self.slots[moving], placement[moving].astype(np.int32))
        return self.excess

    def settle(self, placement: Ints) -> Ints:
        """``placement`` with the replicas it moves put back where they were, biggest first, wherever
        that still keeps every limit (a placement found most-room-first moves many for nothing)."""
        self._reset()
        at = np.searchsorted(self.hosts, placement)
        for i, j in enumerate(at.tolist()):
            self._place(i, j, 1)
        for i in np.argsort(-self.cost, kind="stable").tolist():
            j, home = int(at[i]), int(self.home[i])
            if j == home:
                continue
            self._place(i, j, -1)
            at[i] = home if self._fits(i)[home] else j
            self._place(i, int(at[i]), 1)
        out: Ints = self.hosts[at]
        return out


def _excess(st: State, q: int, hosts: Ints) -> float:
    """What ``hosts`` carry above their limits of ``q`` now."""
    return float(np.maximum(st.load[hosts, q] - st.limit[hosts, q], 0.0).sum())


def _placed(home: Ints, v: FloatArray, n: int) -> FloatArray:
    """The load the replicas ``v`` put on each of ``n`` hosts where they are now."""
    out: FloatArray = np.zeros((n, v.shape[1]))
    np.add.at(out, home, v)
    return out

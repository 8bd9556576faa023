"""Stand-ins: replace a moved replica by another one, from the broker it left or from a third one.

A replica that went from broker ``a`` to ``n`` may have been chosen for a goal that no longer needs
all of its bytes. Another replica of the same topic on ``a``, with the same role (leader or
follower) and fewer bytes, moving to ``n`` instead, keeps every replica and leader count and every
topic's spread as they are and moves fewer bytes; only the traffic and disk loads of ``a`` and ``n``
shift by the difference. A replica that itself arrived on ``a`` during planning (from ``z``) can
stand in at any size: it then goes from ``z`` straight to ``n``, and the plan has one move fewer
and the bytes of the replica that goes home less to copy. Each exchange (the moved replica goes
home, the stand-in goes to ``n``) is accepted only where no broker ends further from any guarded
band or over a capacity limit and the racks still hold.

Stand-ins from afar (``far``): the stand-in, of the same topic and role, comes from a third broker
``f`` instead, so ``a`` gains the topic's replica back (and a leadership, for leaders) and ``f``
gives one up, each only as far as the topic's band allows. After the other passes, one that
arrived on ``f`` is what mostly remains: it goes on to ``n`` and the move from ``a`` is not needed.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, fields

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints, first_of_each, row_any
from kafka_balancer.planner.base.candidates import rack_ok
from kafka_balancer.planner.base.round_bands import Bands, compute_bands
from kafka_balancer.planner.base.state import State, arrived_replicas
from kafka_balancer.planner.base.together import accept_together
from kafka_balancer.planner.base.topic_spread import within_budget
from kafka_balancer.planner.catalogue import Q_DISK, Q_REPLICAS, TOPIC_LEADER_GOAL, TOPIC_REPLICA_GOAL
from kafka_balancer.planner.finishing.revert import moved_replicas
from kafka_balancer.planner.tuning import TUNING


def substitute_moves(st: State, *, arrived: bool = False, far: bool = False) -> int:
    """Rounds of exchanging moved replicas for stand-ins on the broker they left: smaller ones that
    stayed where they were, or (``arrived``) any that arrived during planning; with ``far``, stand-ins
    of the same topic on any other broker, both kinds. Returns exchanges made."""
    orig = st.model.replicas
    if orig.shape != st.rep.shape:
        return 0  # the replication factor changed: the original slots do not line up
    nracks = st.group_racks()
    # Same-topic stand-ins first (no topic count changes), then any topic within its band. The
    # indexes are built once (a sort of every replica); entries that moved since are skipped.
    if far:
        indexes = [_StandIns(st, orig, same_topic=True, arrived=kind, far=True) for kind in (False, True)]
    else:
        indexes = [_StandIns(st, orig, same_topic=same_topic, arrived=arrived) for same_topic in (True, False)]
    total = 0
    for _ in range(TUNING.stand_in_rounds):
        b = compute_bands(st)
        made = 0
        moved = _Moved(st, orig)
        if far:
            moved = moved.homeward(st, b)
        largest = moved.largest(TUNING.stand_in_wide_offers)
        for index in indexes:
            offers = largest if index.wide else moved
            start, end = index.window(st, b, offers)
            for attempt in range(TUNING.far_tries if far else TUNING.stand_in_tries):
                made += _exchange(st, b, offers, index, window=(start + attempt, end), nracks=nracks)
        total += made
        if made == 0:
            break
    return total


class _Moved:
    """Replicas that arrived where their partition was not: (partition, slot, broker it left, broker
    now, size)."""

    def __init__(self, st: State, orig: Ints) -> None:
        self.parts, self.slots, self.home = moved_replicas(st, orig)
        self.dest = st.rep[self.parts, self.slots].astype(np.int64)
        self.size = st.model.size_bytes[self.parts]

    def homeward(self, st: State, b: Bands) -> _Moved:
        """Only those whose home can take them back as things stand (a stand-in from afar leaves
        the home nothing in exchange): every guarded load and the topic's count stay in band there."""
        home = self.home
        v = st.slot_loads(self.parts, self.slots)
        ok = (st.load[home] + v <= np.maximum(b.upper[home], st.load[home])).all(axis=1)
        topic = st.ptopic[self.parts]
        if b.topic_replica_on:
            ok &= st.tcount[topic, home] < b.topic_hi[topic]
        led = (self.slots == 0) & b.topic_leader_on[topic]
        ok &= ~led | (st.tlead[topic, home] < b.lead_hi[topic])
        return self._only(ok)

    def largest(self, n: int) -> _Moved:
        """The ``n`` largest (the most bytes a stand-in could save)."""
        if self.parts.size <= n:
            return self
        keep = np.zeros(self.parts.size, dtype=np.bool_)
        keep[np.argpartition(-self.size, n - 1)[:n]] = True
        return self._only(keep)

    def _only(self, keep: BoolArray) -> _Moved:
        out = copy.copy(self)
        out.parts, out.slots, out.home, out.dest = self.parts[keep], self.slots[keep], self.home[keep], self.dest[keep]
        out.size = self.size[keep]
        return out


class _StandIns:
    """Replicas still where they started (or, if ``arrived``, those moved where their partition was
    not), sorted by (topic if ``same_topic``, broker unless ``far``, role, size)."""

    def __init__(self, st: State, orig: Ints, *, same_topic: bool, arrived: bool, far: bool = False) -> None:
        self.same_topic = same_topic
        self.arrived = arrived
        self.far = far
        rep = st.rep
        if arrived:
            here = arrived_replicas(rep, orig)
        elif far:
            here = (rep != NO_BROKER) & ~arrived_replicas(rep, orig)
        else:
            # Slot by slot: misses replicas whose partition's leadership reordered its slots. The
            # replica-wise test above finds them too, but changed these plans (mixed-rf seed 2 then
            # kept a topic slot out of band, its detour no longer passing), so it is used from afar only.
            here = (rep != NO_BROKER) & (rep == orig)
        parts, slots = np.nonzero(here & st.scope.movable[:, None])
        brokers = rep[parts, slots].astype(np.int64)
        size = st.model.size_bytes
        self.sizes = np.unique(size[parts])
        self.n = np.int64(self.sizes.size + 1)
        composite = self._key(st, parts, brokers, slots) * self.n + np.searchsorted(self.sizes, size[parts])
        order = np.lexsort((parts, composite))
        self.parts, self.slots, self.composite = parts[order], slots[order].astype(np.int64), composite[order]
        self.brokers = brokers[order]
        # Positions of the entries a round's windows search (from afar: those that can give one up).
        self.view = np.arange(self.parts.size)

    @property
    def wide(self) -> bool:
        """Whether the stand-ins may come from beyond the moved replica's topic on its home broker."""
        return self.far or not self.same_topic

    def _key(self, st: State, parts: Ints, brokers: Ints, slots: Ints) -> Ints:
        topic = st.ptopic[parts].astype(np.int64) if self.same_topic else np.zeros(parts.size, dtype=np.int64)
        out: Ints = (topic * st.model.num_brokers + (0 if self.far else brokers)) * 2 + (slots == 0)
        return out

    def window(self, st: State, b: Bands, moved: _Moved) -> tuple[Ints, Ints]:
        """For each moved replica, the range of stand-ins on its home broker (any broker if ``far``)
        with the same role, starting at the smallest whose difference in size the disk bands absorb
        (both brokers' here; only the receiving broker's from afar, as its home takes it back whole)."""
        key = self._key(st, moved.parts, moved.home, moved.slots)
        home, dest = moved.home, moved.dest
        room = st.load[dest, Q_DISK] - b.lower[dest, Q_DISK]
        if not self.far:
            room = np.minimum(b.upper[home, Q_DISK] - st.load[home, Q_DISK], room)
        target = moved.size - np.where(np.isfinite(room), np.maximum(room, 0.0), np.inf)
        self.view = self._givers(st, b) if self.far else np.arange(self.parts.size)
        composite = self.composite[self.view]
        start = np.searchsorted(composite, key * self.n + np.searchsorted(self.sizes, target), side="left")
        end = np.searchsorted(composite, key * self.n + self.n - 1, side="right")
        return start, end

    def _givers(self, st: State, b: Bands) -> Ints:
        """Entries (positions, in order) still as indexed on a broker that can give one up now:
        its topic's count, its replica count and its disk above their bands' lower edges."""
        parts, brokers = self.parts, self.brokers
        topic = st.ptopic[parts]
        live = st.rep[parts, self.slots] == brokers
        live &= st.load[brokers, Q_REPLICAS] - 1.0 >= b.lower[brokers, Q_REPLICAS]
        live &= st.load[brokers, Q_DISK] > b.lower[brokers, Q_DISK]
        if b.topic_replica_on:
            live &= st.tcount[topic, brokers] > b.topic_lo[topic]
        return np.flatnonzero(live)


@dataclass(frozen=True)
class _Exchanges:
    """Candidate exchanges: moved replica ``slots`` of ``parts`` goes from ``dest`` back ``home``,
    and the stand-in (slot ``alt_s`` of ``alt_p``) goes from ``src`` to ``dest`` in its place."""

    parts: Ints
    slots: Ints
    home: Ints
    dest: Ints
    alt_p: Ints
    alt_s: Ints
    src: Ints

    def only(self, keep: Ints | BoolArray) -> _Exchanges:
        """Those ``keep`` selects (a mask, or positions in the order wanted)."""
        return _Exchanges(*(getattr(self, f.name)[keep] for f in fields(self)))


def _exchange(st: State, b: Bands, moved: _Moved, index: _StandIns, *, window: tuple[Ints, Ints], nracks: Ints) -> int:
    """Try the ``pick``-th stand-in (``window``: pick, end) for every moved replica; apply the
    accepted exchanges."""
    pick, end = window
    has = np.flatnonzero((pick < end) & (st.rep[moved.parts, moved.slots] == moved.dest))
    at = index.view[pick[has]]
    ex = _Exchanges(
        moved.parts[has], moved.slots[has], moved.home[has], moved.dest[has], index.parts[at], index.slots[at],
        index.brokers[at],
    )  # fmt: skip
    rep, copy = st.rep, st.model.copy_bytes  # what a move costs: the bytes its new replica copies
    # Both sides still as indexed (earlier exchanges of this round may have moved them).
    ok = (rep[ex.parts, ex.slots] == ex.dest) & (rep[ex.alt_p, ex.alt_s] == ex.src)
    ok &= ((ex.src != ex.home) & (ex.src != ex.dest)) if index.far else (ex.src == ex.home)
    ok &= index.arrived | (copy[ex.alt_p] < copy[ex.parts])  # an arrived stand-in saves a whole move
    ok &= ~row_any(rep[ex.alt_p] == ex.dest[:, None]) & ~row_any(rep[ex.parts] == ex.home[:, None])
    ok &= st.groups.partition[ex.alt_p] == st.groups.broker[ex.dest]  # the stand-in stays in its group
    ex = ex.only(ok)
    ok = rack_ok(st, ex.parts, ex.slots, d=ex.home, nracks=nracks)
    ok &= rack_ok(st, ex.alt_p, ex.alt_s, d=ex.dest, nracks=nracks)
    # Largest savings first; one exchange per partition (rows are read before any move).
    saved = copy[ex.parts] if index.arrived else copy[ex.parts] - copy[ex.alt_p]
    ex = ex.only(np.flatnonzero(ok)[np.argsort(-saved[ok], kind="stable")])
    once = first_of_each(np.r_[ex.parts, ex.alt_p])
    ok = once[: ex.parts.size] & once[ex.parts.size :]
    if index.wide:
        ok &= _topics_ok(st, b, ex, loses=ex.src if index.far else ex.dest, far=index.far)
    ex = ex.only(ok)
    v_home = st.slot_loads(ex.parts, ex.slots)
    v_alt = st.slot_loads(ex.alt_p, ex.alt_s)
    if index.far:
        acc = _accept_both(st, b, (ex.dest, ex.home, v_home), (ex.src, ex.dest, v_alt))
    else:
        # The net of one exchange flows from ``dest`` to ``home``.
        acc = accept_together(st, b, src=ex.dest, dst=ex.home, v=v_home - v_alt)
    st.move(ex.parts[acc], ex.slots[acc], ex.home[acc].astype(np.int32))
    st.move(ex.alt_p[acc], ex.alt_s[acc], ex.dest[acc].astype(np.int32))
    return int(acc.sum())


def _accept_both(st: State, b: Bands, *legs: tuple[Ints, Ints, FloatArray]) -> BoolArray:
    """Exchanges made of several moves (each leg: source, destination, load per exchange) accepted
    together: an exchange stays only if every one of its legs does, checked again without the rest.
    Dropping one leg can push another broker out, so when that does not settle in a few passes,
    the first half of what is left (in preference order) is tried, then its first half, and so on;
    one resource group at a time, so that a group's exchanges do not depend on another's."""
    out = np.zeros(legs[0][0].size, dtype=np.bool_)
    group = st.groups.broker[legs[0][0]]
    for g in np.unique(group).tolist():
        mine = np.flatnonzero(group == g)
        out[mine] = _settle(st, b, [(s[mine], d[mine], v[mine]) for s, d, v in legs])
    return out


def _settle(st: State, b: Bands, legs: list[tuple[Ints, Ints, FloatArray]]) -> BoolArray:
    n = legs[0][0].size
    keep = np.arange(n)
    passes = 0
    while keep.size:
        acc = accept_together(
            st,
            b,
            src=np.concatenate([leg[0][keep] for leg in legs]),
            dst=np.concatenate([leg[1][keep] for leg in legs]),
            v=np.concatenate([leg[2][keep] for leg in legs]),
        )
        every = acc.reshape(len(legs), keep.size).all(axis=0)
        if every.all():
            break
        passes += 1
        keep = keep[every] if passes < TUNING.stand_in_settle_passes else keep[: keep.size // 2]
    out = np.zeros(n, dtype=np.bool_)
    out[keep] = True
    return out


def _topics_ok(st: State, b: Bands, ex: _Exchanges, *, loses: Ints, far: bool) -> BoolArray:
    """Exchanges (in preference order) under which no topic's replica or leader spread ends further
    from its band: the moved replica's topic goes back to its home, which gains one, from
    ``loses``, and the stand-in's the other way. From afar (same topic) ``loses`` is the stand-in's
    broker, and the broker the stand-in goes to keeps its count."""
    t, u = st.ptopic[ex.parts].astype(np.int64), st.ptopic[ex.alt_p].astype(np.int64)
    gains = ex.home
    steps = [(t, gains, 1), (t, loses, -1)]
    if not far:
        steps += [(u, gains, -1), (u, loses, 1)]
    ok = np.ones(ex.parts.size, dtype=np.bool_)
    goals = st.options.distribution_goals
    if TOPIC_REPLICA_GOAL in goals:
        ok &= within_budget(st.tcount, b.topic_lo, b.topic_hi, *steps)
    if TOPIC_LEADER_GOAL in goals:
        led = (ex.slots == 0) & (b.leader_spread[t] | b.leader_spread[u])
        ok &= ~led | within_budget(st.tlead, b.lead_lo, b.lead_hi, *steps)
    return ok

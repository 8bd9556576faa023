"""Stand-ins: replace a moved replica by another replica from the same broker.

A replica that went from broker ``a`` to ``n`` may have been chosen for a goal that no longer needs
all of its bytes. Another replica of the same topic on ``a``, with the same role (leader or
follower) and fewer bytes, moving to ``n`` instead, keeps every replica and leader count and every
topic's spread as they are and moves fewer bytes; only the traffic and disk loads of ``a`` and ``n``
shift by the difference. A replica that itself arrived on ``a`` during planning (from ``z``) can
stand in at any size: it then goes from ``z`` straight to ``n``, and the plan has one move fewer
and the bytes of the replica that goes home less to copy. Each exchange (the moved replica goes
home, the stand-in goes to ``n``) is accepted only where no broker ends further from any guarded
band or over a capacity limit and the racks still hold.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray
from kafka_balancer.planner.revert import moved_replicas
from kafka_balancer.planner.select import Bands, accept_together, compute_bands, rack_ok
from kafka_balancer.planner.state import Q_DISK, Ints, State, arrived_replicas
from kafka_balancer.planner.topic_swaps import within_budget

ROUNDS: Final = 4
# Stand-ins tried per moved replica and round, smallest first among those smaller than it.
TRIES: Final = 4


def substitute_moves(st: State, *, arrived: bool = False) -> int:
    """Rounds of exchanging moved replicas for stand-ins: smaller ones that stayed where they were,
    or (``arrived``) any that arrived during planning. Returns exchanges made."""
    orig = st.model.replicas
    if orig.shape != st.rep.shape:
        return 0  # the replication factor changed: the original slots do not line up
    nracks = st.group_racks()
    # Same-topic stand-ins first (no topic count changes), then any topic within its band. The
    # indexes are built once (a sort of every replica); entries that moved since are skipped.
    indexes = [_StandIns(st, orig, same_topic=same_topic, arrived=arrived) for same_topic in (True, False)]
    total = 0
    for _ in range(ROUNDS):
        b = compute_bands(st)
        made = 0
        moved = _Moved(st, orig)
        for index in indexes:
            start, end = index.window(st, b, moved)
            for attempt in range(TRIES):
                made += _exchange(st, b, moved, index, pick=start + attempt, end=end, nracks=nracks)
        total += made
        if made == 0:
            break
    return total


class _Moved:
    """Replicas that arrived where their partition was not: (partition, slot, broker it left, broker now)."""

    def __init__(self, st: State, orig: Ints) -> None:
        self.parts, self.slots, self.home = moved_replicas(st, orig)
        self.dest = st.rep[self.parts, self.slots].astype(np.int64)


class _StandIns:
    """Replicas still where they started (or, if ``arrived``, those moved where their partition was
    not), sorted by (topic if ``same_topic``, broker, role, size)."""

    def __init__(self, st: State, orig: Ints, *, same_topic: bool, arrived: bool) -> None:
        self.same_topic = same_topic
        self.arrived = arrived
        rep = st.rep
        here = arrived_replicas(rep, orig) if arrived else (rep != NO_BROKER) & (rep == orig)
        parts, slots = np.nonzero(here & st.movable[:, None])
        size = st.model.size_bytes
        self.sizes = np.unique(size[parts])
        self.n = np.int64(self.sizes.size + 1)
        composite = self._key(st, parts, rep[parts, slots], slots) * self.n + np.searchsorted(self.sizes, size[parts])
        order = np.lexsort((parts, composite))
        self.parts, self.slots, self.composite = parts[order], slots[order].astype(np.int64), composite[order]

    def _key(self, st: State, parts: Ints, brokers: Ints, slots: Ints) -> Ints:
        topic = st.ptopic[parts].astype(np.int64) if self.same_topic else np.zeros(parts.size, dtype=np.int64)
        out: Ints = (topic * st.model.num_brokers + brokers) * 2 + (slots == 0)
        return out

    def window(self, st: State, b: Bands, moved: _Moved) -> tuple[Ints, Ints]:
        """For each moved replica, the range of stand-ins on its home broker with the same role,
        starting at the smallest that both brokers' disk bands can absorb the difference of."""
        key = self._key(st, moved.parts, moved.home, moved.slots)
        size = st.model.size_bytes[moved.parts]
        home, dest = moved.home, moved.dest
        room = np.minimum(b.upper[home, Q_DISK] - st.load[home, Q_DISK], st.load[dest, Q_DISK] - b.lower[dest, Q_DISK])
        target = size - np.where(np.isfinite(room), np.maximum(room, 0.0), np.inf)
        start = np.searchsorted(self.composite, key * self.n + np.searchsorted(self.sizes, target), side="left")
        end = np.searchsorted(self.composite, key * self.n + self.n - 1, side="right")
        return start, end


def _exchange(st: State, b: Bands, moved: _Moved, index: _StandIns, *, pick: Ints, end: Ints, nracks: Ints) -> int:
    """Try the ``pick``-th stand-in for every moved replica; apply the accepted exchanges."""
    has = np.flatnonzero(pick < end)
    parts, slots, home, dest = moved.parts[has], moved.slots[has], moved.home[has], moved.dest[has]
    alt_p, alt_s = index.parts[pick[has]], index.slots[pick[has]]
    rep, size = st.rep, st.model.size_bytes
    # Both sides still as indexed (earlier exchanges of this round may have moved them).
    ok = (rep[parts, slots] == dest) & (rep[alt_p, alt_s] == home)
    ok &= index.arrived | (size[alt_p] < size[parts])  # an arrived stand-in saves a whole move
    ok &= ~(rep[alt_p] == dest[:, None]).any(axis=1) & ~(rep[parts] == home[:, None]).any(axis=1)
    ok &= st.groups.partition[alt_p] == st.groups.broker[dest]  # the stand-in stays in its group
    parts, slots, home, dest, alt_p, alt_s = (x[ok] for x in (parts, slots, home, dest, alt_p, alt_s))
    ok = rack_ok(st, parts, slots, d=home, nracks=nracks) & rack_ok(st, alt_p, alt_s, d=dest, nracks=nracks)
    # Largest savings first; one exchange per partition (rows are read before any move).
    saved = size[parts] if index.arrived else size[parts] - size[alt_p]
    order = np.flatnonzero(ok)[np.argsort(-saved[ok], kind="stable")]
    parts, slots, home, dest, alt_p, alt_s = (x[order] for x in (parts, slots, home, dest, alt_p, alt_s))
    _, first = np.unique(np.r_[parts, alt_p], return_index=True)
    once = np.zeros(2 * parts.size, dtype=np.bool_)
    once[first] = True
    ok = once[: parts.size] & once[parts.size :]
    if not index.same_topic:
        ok &= _topics_ok(st, b, parts, slots, alt_p, home=home, dest=dest)
    parts, slots, home, dest, alt_p, alt_s = (x[ok] for x in (parts, slots, home, dest, alt_p, alt_s))
    v_home = np.where((slots == 0)[:, None], st.lead[parts], st.follow[parts])
    v_alt = np.where((alt_s == 0)[:, None], st.lead[alt_p], st.follow[alt_p])
    # The net of one exchange flows from ``dest`` to ``home``.
    acc = accept_together(st, b, src=dest, dst=home, v=v_home - v_alt)
    st.move(parts[acc], slots[acc], home[acc].astype(np.int32))
    st.move(alt_p[acc], alt_s[acc], dest[acc].astype(np.int32))
    return int(acc.sum())


def _topics_ok(st: State, b: Bands, moved_p: Ints, moved_s: Ints, alt_p: Ints, *, home: Ints, dest: Ints) -> BoolArray:
    """Exchanges (in preference order) under which no topic's replica or leader spread ends further
    from its band: the moved replica's topic goes back to ``home``, the stand-in's to ``dest``."""
    t, u = st.ptopic[moved_p].astype(np.int64), st.ptopic[alt_p].astype(np.int64)
    steps = ((t, home, 1), (t, dest, -1), (u, home, -1), (u, dest, 1))
    ok = np.ones(moved_p.size, dtype=np.bool_)
    goals = st.options.distribution_goals
    if "topic-replica-distribution" in goals:
        ok &= within_budget(st.tcount, b.topic_lo, b.topic_hi, *steps)
    if "topic-leader-distribution" in goals:
        led = (moved_s == 0) & (b.leader_spread[t] | b.leader_spread[u])
        ok &= ~led | within_budget(st.tlead, b.lead_lo, b.lead_hi, *steps)
    return ok

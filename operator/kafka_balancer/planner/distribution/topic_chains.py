"""Per-topic leader spread by chains: when no single leadership move or exchange is allowed, pass
one leadership of a topic along a short path of its own partitions.

A broker leading too many of topic T often has T's partitions only on brokers that already lead
their share of T. Moving the leadership of one partition to such a broker ``a`` and, in the same
step, the leadership of another T partition from ``a`` to a broker ``u`` with room, leaves ``a``'s
count unchanged and moves one leadership from the over-full broker to ``u``: no data moves. Paths
are found breadth-first over the topic's (leader -> follower) edges, at most TUNING.topic_chain_depth long, and a
chain is applied only if every guarded band accepts the leaders' combined load changes. When a
broker on the path sits on a band's edge, a leadership of another topic makes up for the load the
path carries: going from the path's end back to its start (a cycle: every broker keeps its leader
count), or into the start, or out of the end, from or to a third broker.

This is the last resort after the vectorised rounds, so it only sees the topics left out of band;
the work is bounded per topic and, on very large clusters, per call (the
``topic_chain_tries`` and ``topic_chain_checks`` of :data:`TUNING`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Final, NamedTuple

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray
from kafka_balancer.planner.base.arrays import Ints, stable_order
from kafka_balancer.planner.base.measures import topic_brokers
from kafka_balancer.planner.base.round_bands import Bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.base.together import Moves, fits_together, fits_with_each
from kafka_balancer.planner.base.topic_spread import count_ok, leader_band
from kafka_balancer.planner.tuning import TUNING

Edge = tuple[int, int]  # (partition, slot of the new leader)


class _LeaderIndex:
    """Partitions by leader as at the start of a call, and by follower as at its first closing (most
    calls close no chain), from ``State.broker_index_by_slot``; entries whose slot no longer holds
    that broker are skipped when used."""

    def __init__(self, st: State) -> None:
        self.st = st
        self.by_leader = st.broker_index_by_slot()
        self._by_follower: tuple[Ints, Ints] | None = None

    def led_by(self, broker: int) -> Ints:
        """Partitions ``broker`` leads and still leads."""
        return self._on(self.by_leader, broker, leader=True)

    def followed_by(self, broker: int) -> Ints:
        """Partitions with a follower on ``broker`` still."""
        if self._by_follower is None:
            self._by_follower = self.st.broker_index_by_slot()
        return self._on(self._by_follower, broker, leader=False)

    def _on(self, index: tuple[Ints, Ints], broker: int, *, leader: bool) -> Ints:
        parts, slots = self.st.slots_held(index, broker)
        out: Ints = parts[(slots == 0) == leader]
        return out


class _Work:
    """Band checks left for this call (each chain or closing tried is one)."""

    def __init__(self, checks: int) -> None:
        self.checks = checks


class _Budget:
    """How many more closings one topic may fail, and the call's shared work left."""

    def __init__(self, index: _LeaderIndex, closings: int, work: _Work) -> None:
        self.index = index
        self.closings = closings
        self.work = work

    def close(self, st: State, b: Bands, chain: tuple[Ints, Ints]) -> bool:
        """:func:`_close` while the topic has failed fewer than its closings (one that succeeds is
        no waste: the topic's tries bound those)."""
        if self.closings <= 0:
            return False
        closed = _close(st, b, chain, self)
        self.closings -= not closed
        return closed

    def check(self) -> bool:
        self.work.checks -= 1
        return self.work.checks >= 0


def leader_chains(st: State, b: Bands, *, share: float = 1.0) -> int:
    """Apply leadership chains that bring topics' leader counts into their band. Returns chains applied.

    ``share`` scales the per-call caps (TUNING.topic_chain_tries, TUNING.topic_chain_checks) for a second, briefer call.
    """
    counts, lo, hi = st.tlead, b.lead_lo, b.lead_hi
    in_group = topic_brokers(st) & b.topic_leader_on[:, None]
    bad = in_group & ((counts > hi[:, None]) | ((counts < lo[:, None]) & st.can_lead[None, :]))
    topics = np.flatnonzero(bad.any(axis=1))
    if topics.size == 0:
        return 0
    order = stable_order(st.ptopic)
    starts = np.searchsorted(st.ptopic[order], np.arange(len(st.model.topics) + 1))
    by_leader = _LeaderIndex(st)
    work = _Work(int(TUNING.topic_chain_checks * share))
    max_tries = int(TUNING.topic_chain_tries * share)
    applied = tried = 0
    for t in topics.tolist():
        parts = order[starts[t] : starts[t + 1]]
        parts = parts[st.scope.movable[parts]]
        member = in_group[t]
        budget = _Budget(by_leader, TUNING.topic_chain_closings, work)
        distance = np.maximum(counts[t] - hi[t], 0) + np.maximum(lo[t] - counts[t], 0)
        for _ in range(int(distance[member].sum()) + TUNING.topic_chain_spare_tries):
            if tried >= max_tries or work.checks <= 0:
                return applied
            tried += 1
            over = np.flatnonzero(member & (counts[t] > hi[t]))
            under = np.flatnonzero(member & (counts[t] < lo[t]) & st.can_lead)
            if over.size == 0 and under.size == 0:
                break
            if not _fix_one(st, b, _Topic(t, parts, member), over=over.tolist(), under=under.tolist(), budget=budget):
                break
            applied += 1
    return applied


class _Graph:
    """A topic's leadership moves between brokers: an edge from a partition's leader to one of its
    followers is "make that follower the leader". One edge per pair of brokers, the first of the
    topic's partitions, then slots, that makes it: a search visits each broker once, so the others
    would only be skipped. A search reads the edges of the few brokers it visits, in the order it
    tries them: a broker's forward edges (it leads) in that first-edge order, its backward ones (it
    follows) by leader id."""

    def __init__(self, st: State, parts: Ints) -> None:
        n = st.model.num_brokers
        rows = st.rep[parts].astype(np.int64)
        self.n, self.parts, self.followers = n, parts, max(rows.shape[1] - 1, 1)
        follower = rows[:, 1:]
        safe = np.maximum(follower, 0)
        ok = (follower != NO_BROKER) & st.active[safe] & st.can_lead[safe]
        # Edge e is slot e % followers + 1 of partition e // followers; one that cannot be taken
        # gets the key n * n, past every pair of brokers.
        key = np.where(ok, rows[:, :1] * n + follower, n * n).ravel()
        # The pairs of brokers, ascending, and the first edge of each.
        self.pairs, self.first = _first_edges(key, n)
        self._by_follower: tuple[Ints, Ints] | None = None

    def forward(self, broker: int) -> tuple[list[int], list[int]]:
        """The brokers ``broker``'s leaderships can move to, and the edges, in first-edge order."""
        lo, hi = np.searchsorted(self.pairs, (broker * self.n, (broker + 1) * self.n))
        first = self.first[lo:hi]
        order = np.argsort(first)
        return (self.pairs[lo:hi][order] % self.n).tolist(), first[order].tolist()

    def backward(self, broker: int) -> tuple[list[int], list[int]]:
        """The brokers that can hand ``broker`` a leadership, and the edges, by leader id."""
        if self._by_follower is None:  # the pairs by (follower, leader), on the first backward search
            order = stable_order(self.pairs % self.n)
            self._by_follower = order, np.searchsorted(self.pairs[order] % self.n, np.arange(self.n + 1))
        order, start = self._by_follower
        picked = order[start[broker] : start[broker + 1]]
        return (self.pairs[picked] // self.n).tolist(), self.first[picked].tolist()

    def edge(self, e: int) -> Edge:
        return (int(self.parts[e // self.followers]), e % self.followers + 1)


# Brokers x brokers up to which the first edges are found in a table of every pair (8 MB at this
# size: 1,024 brokers), a scatter; above, by a sort of the topic's edges, so that no stage keeps a
# broker x broker table on a cluster of thousands of brokers (docs/goals.md, "Limits").
PAIR_TABLE_MAX: Final = 1 << 20


def _first_edges(key: Ints, n: int) -> tuple[Ints, Ints]:
    """The distinct keys below ``n * n`` (broker pairs), ascending, and the first position of each."""
    if n * n <= PAIR_TABLE_MAX:
        # np.unique's return_index without its sort: a topic can have tens of thousands of
        # partitions, and this runs once per chain.
        first_of = np.full(n * n + 1, key.size, dtype=np.int64)
        np.minimum.at(first_of, key, np.arange(key.size))
        pairs = np.flatnonzero(first_of[: n * n] < key.size)
        return pairs, first_of[pairs]
    if key.size == 0:
        return key, key
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    new = np.r_[True, ordered[1:] != ordered[:-1]] & (ordered < n * n)
    return ordered[new], order[new]


class _Topic(NamedTuple):
    """A topic whose leaders are out of band: its movable partitions and its group's brokers."""

    topic: int
    parts: Ints
    member: BoolArray


def _fix_one(st: State, b: Bands, topic: _Topic, *, over: list[int], under: list[int], budget: _Budget) -> bool:
    """Find and apply one chain that lowers the topic's out-of-band distance: from an over-full
    broker to any member that can lead one more (under-band ones first), else into an under-band
    broker from any member that can spare one (the search walks the edges backwards)."""
    t, parts, member = topic
    counts, lo, hi = st.tlead[t], b.lead_lo[t], b.lead_hi[t]
    graph = _Graph(st, parts)
    ends = set(np.flatnonzero(member & st.can_lead & (counts + 1 <= hi)).tolist())
    searches = [(graph.forward, start, ends, set(under)) for start in over]
    if under:
        starts = set(np.flatnonzero(member & (counts - 1 >= lo)).tolist())
        # A backward edge is still "make that follower the leader": each edge of the path is one
        # leadership move, whichever way the search walked it.
        searches += [(graph.backward, end, starts, set(over)) for end in under]
    return any(
        _apply_if_accepted(st, b, path, budget) for edges, begin, goal, preferred in searches
        for path in _paths(_Walk(edges, graph.edge), begin, goal, preferred)
    )  # fmt: skip


class _Walk(NamedTuple):
    """The edges a search may walk: each broker's neighbours and edge ids, and what an edge id is."""

    edges_of: Callable[[int], tuple[list[int], list[int]]]
    edge: Callable[[int], Edge]


def _paths(walk: _Walk, start: int, ends: set[int], preferred: set[int]) -> list[list[Edge]]:
    """Shortest edge paths (at most ``TUNING.topic_chain_depth``) from ``start`` to up to
    ``TUNING.topic_chain_paths_per_broker`` brokers of ``ends``, ``preferred`` ends first: a
    breadth-first search that visits each broker once."""
    parent: dict[int, tuple[int, int]] = {}  # broker -> (the broker before it, the edge between)
    depth = {start: 0}
    queue: deque[int] = deque([start])
    reached: list[int] = []
    level = 0
    while queue:
        node = queue.popleft()
        if depth[node] > level:
            # Every broker up to this depth is found, and what is found later lies deeper: once
            # enough ends are reached, the later ones would sort after them.
            level = depth[node]
            if len(reached) >= TUNING.topic_chain_paths_per_broker:
                break
        if depth[node] >= TUNING.topic_chain_depth:
            continue
        for nxt, e in zip(*walk.edges_of(node), strict=True):
            if nxt in depth:
                continue
            depth[nxt] = depth[node] + 1
            parent[nxt] = (node, e)
            queue.append(nxt)
            if nxt in ends:
                reached.append(nxt)
    reached.sort(key=lambda n: (depth[n], n not in preferred))
    out: list[list[Edge]] = []
    for end in reached[: TUNING.topic_chain_paths_per_broker]:
        path: list[Edge] = []
        node = end
        while node != start:
            node, e = parent[node]
            path.append(walk.edge(e))
        out.append(path[::-1])
    return out


def _apply_if_accepted(st: State, b: Bands, path: list[Edge], budget: _Budget) -> bool:
    """Apply the path's leadership moves if every guarded band accepts them; else try once more with
    a leadership of another topic that makes up for their load (:func:`_close`)."""
    parts = np.array([e[0] for e in path], dtype=np.int64)
    slots = np.array([e[1] for e in path], dtype=np.int64)
    if len(set(parts.tolist())) != parts.size or not budget.check():
        return False
    if _accepted(st, b, parts, slots):
        st.swap_leader(parts, slots)
        return True
    return budget.close(st, b, (parts, slots))


def _close(st: State, b: Bands, chain: tuple[Ints, Ints], budget: _Budget) -> bool:
    """Close the chain (partitions, slots of their new leaders) with a leadership of another topic
    that makes up for its load (:func:`_closing_candidates`): of those the guarded bands accept
    with the chain, the closest in load first."""
    parts, slots = chain
    start, end = int(st.rep[parts[0], 0]), int(st.rep[parts[-1], slots[-1]])
    back, back_slots = _closing_candidates(st, b, budget.index, ends=(start, end), topic=int(st.ptopic[parts[0]]))
    fit = fits_with_each(st, b, base=_leadership_moves(st, parts, slots), each=_leadership_moves(st, back, back_slots))
    back, back_slots = back[fit], back_slots[fit]
    v = (st.lead[parts[0]] - st.follow[parts[0]]) / np.maximum(b.avg[start], 1e-12)
    gap = np.abs((st.lead[back] - st.follow[back]) / np.maximum(b.avg[start], 1e-12) - v).sum(axis=1)
    for i in np.argsort(gap, kind="stable")[: TUNING.topic_chain_closing_tries].tolist():
        all_parts = np.r_[parts, back[i]]
        all_slots = np.r_[slots, back_slots[i]]
        if not budget.check():
            return False
        if _accepted(st, b, all_parts, all_slots):
            st.swap_leader(all_parts, all_slots)
            return True
    return False


def _accepted(st: State, b: Bands, parts: Ints, slots: Ints) -> bool:
    src, dst, v = _leadership_moves(st, parts, slots)
    return fits_together(st, b, src=src, dst=dst, v=v)


def _leadership_moves(st: State, parts: Ints, slots: Ints) -> Moves:
    """The loads that move when slot ``slots`` of ``parts`` takes over their leadership."""
    return Moves(st.rep[parts, 0], st.rep[parts, slots], st.lead[parts] - st.follow[parts])


def _closing_candidates(
    st: State, b: Bands, index: _LeaderIndex, *, ends: tuple[int, int], topic: int
) -> tuple[Ints, Ints]:
    """Leaderships of other topics that may make up for a chain's load from ``start`` to ``end``:
    (partitions, slots of their new leaders), in this order (ties in load go to the first):

    - those ``end`` leads with a follower on ``start``: a cycle, every broker keeps its leader count;
    - those ``start`` follows, led elsewhere: ``start`` gets a leadership back from a third broker;
    - those ``end`` leads with a follower elsewhere: ``end`` hands one on to a third broker;

    each only where its own topic's leader spread does not get worse. The cycle alone was too
    narrow: on strongly skewed clusters a broker leading too many of the heaviest topic sits on its
    network-out band's lower edge, and the dozen partitions the path's end leads with a follower on
    it carry a fraction of that topic's traffic (bench.strong_skew, 270 brokers: 24 topic-leader
    slots out of band, and not one chain closed)."""
    start, end = ends
    led, followed = index.led_by(end), index.followed_by(start)
    followed = followed[st.rep[followed, 0] != end]
    width = st.rep.shape[1]
    parts = np.r_[led, followed, np.repeat(led, width - 1)]
    to_start = np.r_[led, followed]
    slots = np.r_[np.argmax(st.rep[to_start] == start, axis=1), np.tile(np.arange(1, width), led.size)].astype(np.int64)
    new = st.rep[parts, slots]
    u = st.ptopic[parts]
    ok = (new != NO_BROKER) & (u != topic) & st.scope.movable[parts]
    ok[: to_start.size] &= st.rep[to_start, slots[: to_start.size]] == start
    ok[to_start.size :] &= new[to_start.size :] != start
    parts, slots, new, u = parts[ok], slots[ok], new[ok], u[ok]
    ok = st.can_lead[new] & st.lead_slots(parts)[np.arange(parts.size), slots]
    ok &= ~b.topic_leader_on[u] | count_ok(
        leader_band(st, b), st.rep[parts, 0], new, topics=u, k=np.ones(u.size, np.int64)
    )
    return parts[ok], slots[ok]

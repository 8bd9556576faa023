"""Leader-count chains: pass leadership along a short path of brokers when no direct move is allowed.

A broker above its leader-count band often shares no movable partition with the brokers that have
room (or every shared one would push a topic's leader spread or a traffic band out). Moving one
leadership from it to a broker ``x`` and, in the same step, another from ``x`` onwards leaves
``x``'s count unchanged and moves one leadership from the full broker to the end of the path: no
data moves. Paths are found breadth-first over the brokers (an edge where some partition led by one
has a follower on the other and moving that leadership keeps its topic's spread), at most TUNING.count_chain_depth
long; a chain is applied only if every guarded band accepts the combined load changes on every
broker it touches.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints, stable_order
from kafka_balancer.planner.base.round_bands import Bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.base.together import fits_together
from kafka_balancer.planner.base.topic_spread import count_ok, leader_band
from kafka_balancer.planner.catalogue import Q_LEADERS
from kafka_balancer.planner.tuning import TUNING


class Candidates:
    """One round's leaderships that may move, grouped by (leader, follower) broker pair: arrays
    sorted by pair, each pair's TUNING.count_chain_per_edge lightest read when a chain passes along it (a round can
    hold half a million, and a call's chains use a few)."""

    def __init__(self, n: int, pair: Ints, columns: tuple[Ints, Ints, FloatArray]) -> None:
        # Two stable radix passes (follower, then leader) group the candidates by pair.
        by_follower = stable_order(pair % n)
        order = by_follower[stable_order(pair[by_follower] // n)]
        pair = pair[order]
        self.parts, self.slots, self.weight = (c[order] for c in columns)
        first = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]]) if pair.size else np.zeros(0, dtype=np.int64)
        self.n = n
        self.pairs: Ints = pair[first]
        self.starts: Ints = np.r_[first, pair.size]
        self.dropped: set[int] = set()  # pairs with no leadership left

    def __len__(self) -> int:
        return int(self.pairs.size)

    def edges(self) -> list[tuple[int, int]]:
        """Every (leader, follower) pair with a candidate."""
        return list(zip((self.pairs // self.n).tolist(), (self.pairs % self.n).tolist(), strict=True))

    def __contains__(self, edge: tuple[int, int]) -> bool:
        return self._position(edge) is not None

    def get(self, edge: tuple[int, int]) -> list[tuple[int, int]]:
        """The pair's lightest leaderships, (partition, slot), lightest first (ties: lower partition)."""
        i = self._position(edge)
        if i is None:
            return []
        lo, hi = int(self.starts[i]), int(self.starts[i + 1])
        parts = self.parts[lo:hi]
        order = np.lexsort((parts, self.weight[lo:hi]))[: TUNING.count_chain_per_edge]
        return list(zip(parts[order].tolist(), self.slots[lo:hi][order].tolist(), strict=True))

    def drop(self, edge: tuple[int, int]) -> None:
        """The pair has no leadership left to move."""
        i = self._position(edge)
        if i is not None:
            self.dropped.add(i)

    def _position(self, edge: tuple[int, int]) -> int | None:
        key = edge[0] * self.n + edge[1]
        i = int(np.searchsorted(self.pairs, key))
        found = i < self.pairs.size and int(self.pairs[i]) == key and i not in self.dropped
        return i if found else None


Adjacency = dict[int, set[int]]  # broker -> the brokers an edge leads to


@dataclass
class _Graph:
    """One round's candidate leaderships per (leader, follower) pair, the pairs as a graph (edges
    forwards and backwards, as sets: a graph of B brokers costs its edges, not B x B), and the
    partitions whose leadership a chain of the round already moved."""

    cands: Candidates
    forward: Adjacency
    backward: Adjacency
    used: set[int] = field(default_factory=set)

    @staticmethod
    def of(cands: Candidates) -> _Graph:
        forward: Adjacency = {}
        backward: Adjacency = {}
        for s, d in cands.edges():
            forward.setdefault(s, set()).add(d)
            backward.setdefault(d, set()).add(s)
        return _Graph(cands, forward, backward)

    def drop(self, s: int, d: int) -> None:
        """The edge s -> d has no leadership left to move."""
        self.forward.get(s, set()).discard(d)
        self.backward.get(d, set()).discard(s)


@dataclass
class _Work:
    """Chains tried in this call (at most TUNING.count_chain_tries)."""

    tries: int = 0


def leader_count_chains(st: State, b: Bands) -> int:
    """Apply chains that bring brokers' leader counts into the band of ``b``. Returns chains applied."""
    applied = 0
    work = _Work()
    for _ in range(TUNING.count_chain_rounds):
        before = applied
        cands = _candidates(st, b)
        if not cands:
            break
        graph = _Graph.of(cands)
        for end in _ends(st, b):
            done, exhausted = _into_band(st, b, graph, end, work)
            applied += done
            if exhausted:
                return applied
        if applied == before:
            break
    return applied


def _into_band(st: State, b: Bands, graph: _Graph, end: tuple[int, bool], work: _Work) -> tuple[int, bool]:
    """Chains from broker ``end`` (over the band; or into it, when under) until it is in band or no
    chain is left: (chains applied, whether the call's tries ran out)."""
    applied = 0
    while _out_of_band(st, b, end[0]):
        if work.tries > TUNING.count_chain_tries:
            return applied, True
        if not _one_chain(st, b, graph, end, work):
            break
        applied += 1
    return applied, False


def _one_chain(st: State, b: Bands, graph: _Graph, end: tuple[int, bool], work: _Work) -> bool:
    """Apply the first of the shortest paths from (or into) ``end`` whose leaderships every band accepts."""
    broker, forward = end
    for path in _paths(graph.forward if forward else graph.backward, broker, _targets(st, b, forward)):
        work.tries += 1
        hops = path if forward else [(d, s) for s, d in reversed(path)]
        if _apply(st, b, hops, graph.cands, graph.used):
            return True
        for s, d in hops:  # pairs whose leaderships are all used up or no longer fit
            if (s, d) not in graph.cands:
                graph.drop(s, d)
    return False


def outside_leader_band(st: State, b: Bands) -> tuple[BoolArray, BoolArray]:
    """Brokers over the leader-count band, and brokers under it that may lead."""
    load, lo, hi = st.load[:, Q_LEADERS], b.lower[:, Q_LEADERS], b.upper[:, Q_LEADERS]
    finite = np.isfinite(lo) & np.isfinite(hi) & st.active
    return finite & (load > hi + 0.5), finite & st.can_lead & (load < lo - 0.5)


def _ends(st: State, b: Bands) -> list[tuple[int, bool]]:
    """Brokers to fix: over the band (chains start there) then under it (chains end there)."""
    over, under = outside_leader_band(st, b)
    return [(int(s), True) for s in np.flatnonzero(over)] + [(int(d), False) for d in np.flatnonzero(under)]


def _out_of_band(st: State, b: Bands, broker: int) -> bool:
    over, under = outside_leader_band(st, b)
    return bool(over[broker] or under[broker])


def _targets(st: State, b: Bands, forward: bool) -> BoolArray:
    """Where a chain may end (forward: brokers with room for one more) or start (one to spare)."""
    load, lo, hi = st.load[:, Q_LEADERS], b.lower[:, Q_LEADERS], b.upper[:, Q_LEADERS]
    out: BoolArray = (load + 1 <= hi + 1e-9) & st.can_lead if forward else load - 1 >= lo - 1e-9
    return out & st.active


def _candidates(st: State, b: Bands) -> Candidates:
    """For each (leader, follower) broker pair: the lightest leaderships that may move along it."""
    rows = st.rep
    width = rows.shape[1]
    if width < 2:
        return Candidates(st.model.num_brokers, *_no_candidates())
    parts = np.repeat(np.arange(rows.shape[0]), width - 1)
    slots = np.tile(np.arange(1, width), rows.shape[0])
    src = rows[parts, 0]
    dst = rows[:, 1:].ravel()
    safe = np.maximum(dst, 0)
    ok = (dst != NO_BROKER) & (src != NO_BROKER) & st.scope.movable[parts]
    ok &= st.active[safe] & st.can_lead[safe] & np.isfinite(b.upper[safe, Q_LEADERS])
    if st.tiers is not None:  # only to a follower in the partition's preferred leader rack
        ok &= st.lead_slots(np.arange(rows.shape[0]))[:, 1:].ravel()
    parts, slots, src, dst = parts[ok], slots[ok], src[ok], dst[ok]
    topics = st.ptopic[parts]
    on = b.topic_leader_on[topics]
    one = np.ones(parts.size, dtype=np.int64)
    fine = count_ok(leader_band(st, b), src, dst, topics=topics, k=one)
    keep = ~on | fine
    parts, slots, src, dst = parts[keep], slots[keep], src[keep], dst[keep]
    loads = st.catalogue.leader_loads
    v = st.lead[parts][:, loads] - st.follow[parts][:, loads]
    weight = (v / np.maximum(b.avg[src][:, loads], 1e-12)).sum(axis=1)
    n = st.model.num_brokers
    return Candidates(n, src.astype(np.int64) * n + dst, (parts, slots, weight))


def _no_candidates() -> tuple[Ints, tuple[Ints, Ints, FloatArray]]:
    empty = np.zeros(0, dtype=np.int64)
    return empty, (empty, empty, np.zeros(0))


def _paths(adj: Adjacency, start: int, ends: BoolArray) -> list[list[tuple[int, int]]]:
    """Shortest broker paths from ``start`` to up to ``TUNING.count_chain_paths_per_broker`` brokers
    of ``ends`` (breadth-first)."""
    parent = {start: start}
    depth = {start: 0}
    queue: deque[int] = deque([start])
    reached: list[int] = []
    while queue and len(reached) < TUNING.count_chain_paths_per_broker:
        node = queue.popleft()
        if depth[node] >= TUNING.count_chain_depth:
            continue
        for nxt in sorted(adj.get(node, ())):
            if nxt in depth:
                continue
            depth[nxt], parent[nxt] = depth[node] + 1, node
            queue.append(nxt)
            if ends[nxt]:
                reached.append(nxt)
    out = []
    for end in reached[: TUNING.count_chain_paths_per_broker]:
        path, node = [], end
        while node != start:
            path.append((parent[node], node))
            node = parent[node]
        out.append(path[::-1])
    return out


def _apply(st: State, b: Bands, hops: list[tuple[int, int]], cands: Candidates, used: set[int]) -> bool:
    """Pick one still-valid leadership per hop and apply them together if every band accepts."""
    parts, slots = [], []
    for s, d in hops:
        pick = None
        for p, k in cands.get((s, d)):
            if p in used or st.rep[p, 0] != s or st.rep[p, k] != d:
                continue
            t = np.array([st.ptopic[p]])
            if (
                b.topic_leader_on[t[0]]
                and not count_ok(leader_band(st, b), s, d, topics=t, k=np.ones(1, dtype=np.int64))[0]
            ):
                continue
            pick = (p, k)
            break
        if pick is None:
            cands.drop((s, d))
            return False
        parts.append(pick[0])
        slots.append(pick[1])
    p_arr, k_arr = np.array(parts, dtype=np.int64), np.array(slots, dtype=np.int64)
    src, dst = st.rep[p_arr, 0], st.rep[p_arr, k_arr]
    v = st.lead[p_arr] - st.follow[p_arr]
    if not fits_together(st, b, src=src, dst=dst, v=v):
        return False
    st.swap_leader(p_arr, k_arr)
    used.update(parts)
    return True

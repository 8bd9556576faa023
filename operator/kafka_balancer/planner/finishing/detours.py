"""Last per-topic slots by detours: a move that fixes a topic's spread but pushes a broker out of a
band, followed by the moves that bring that broker back.

After every pass, a few (topic, broker) counts can stay out of their band because the one move that
fixes each of them (a leadership to a follower, a replica to a broker without the topic) takes a
broker just past some other band's edge, and no single exchange carries the right amount back: a
large partition's leadership takes more network-out from its leader than that broker has to spare,
say. Here that move is made anyway, then the goals of the quantities it pushed out of band run
again, leadership only first (free), then with replica moves, and the leader counts are finished
again. The detour is kept only
if, at the end, no broker is further from any band (the rounded leader-count average included) or
over a capacity limit, no (topic, broker) count is further from its band, and the topic's spread got
better; otherwise every move of it is undone.

Each attempt re-runs the goals, so this only runs when a handful of slots is left (TUNING.detour_max_cells). It
works on one resource group at a time, with that group's own limits, so a group planned on its own
gets the same detours as in the whole cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.candidates import rack_ok
from kafka_balancer.planner.base.measures import bands, count_distance, topic_brokers
from kafka_balancer.planner.base.round_bands import Bands, band_distance, compute_bands
from kafka_balancer.planner.base.state import Checkpoint, State, arrived_replicas, only_group
from kafka_balancer.planner.catalogue import Q_DISK, Q_LEADERS, TOPIC_LEADER_GOAL
from kafka_balancer.planner.distribution.balance import balance_goal
from kafka_balancer.planner.distribution.topic_targets import topic_spread
from kafka_balancer.planner.finishing.revert import revert_moves
from kafka_balancer.planner.finishing.substitute import substitute_moves
from kafka_balancer.planner.finishing.tighten import leader_count_goal, tighten_leaders
from kafka_balancer.planner.tuning import TUNING

# Marks a step that moves the leadership to ``slot`` (no data) instead of the replica in ``slot``.
LEADERSHIP: Final = -1
Step = tuple[int, int, int]  # (partition, slot, destination broker or LEADERSHIP)
Detour = tuple[Step, ...]


class _Cell(NamedTuple):
    """A (topic, broker) count out of its band: of replicas, or of leaders (``leaders``)."""

    topic: int
    broker: int
    over: bool  # above the band (else below)
    leaders: bool


@dataclass
class _Budget:
    """Detours left for this call."""

    left: int

    def take(self) -> bool:
        self.left -= 1
        return self.left >= 0


@dataclass(frozen=True)
class _Distances:
    """How far each broker is from each band (and over each limit), and each topic count from its band."""

    broker: FloatArray  # (B, Q + 1): the guarded bands, then the rounded leader-count average
    over_limit: FloatArray  # (B, Q)
    replicas: Ints  # (T, B)
    leaders: Ints  # (T, B)
    tol: FloatArray  # (B, Q + 1)

    @property
    def exact_leaders(self) -> int:
        """The column of the rounded leader-count average (after every quantity's)."""
        return int(self.over_limit.shape[1])

    def worse_quantities(self, other: _Distances) -> set[int]:
        """Quantities (:attr:`exact_leaders`: the rounded leader-count average) on which some broker
        is further from its band, or further over a limit, than in ``other``."""
        worse = np.any(self.broker > other.broker + self.tol, axis=0)
        worse[: self.exact_leaders] |= np.any(self._further_over_limits(other), axis=0)
        return {int(q) for q in np.flatnonzero(worse)}

    def further_over_a_limit(self, other: _Distances) -> bool:
        """Whether some broker is further over a capacity limit than in ``other``."""
        return bool(np.any(self._further_over_limits(other)))

    def no_worse_than(self, other: _Distances) -> bool:
        return bool(
            np.all(self.broker <= other.broker + self.tol)
            and not self.further_over_a_limit(other)
            and np.all(self.replicas <= other.replicas)
            and np.all(self.leaders <= other.leaders)
        )

    def _further_over_limits(self, other: _Distances) -> BoolArray:
        """(B, Q): where a broker is further over a limit than in ``other``."""
        further: BoolArray = self.over_limit > other.over_limit + self.tol[:, : self.exact_leaders]
        return further


def repair_topic_slots(st: State) -> int:
    """Detours for the (topic, broker) counts still out of band, when there are few, one resource
    group at a time; after a kept detour, the moves no longer needed are undone and smaller
    stand-ins tried again (a detour's mending often leaves room for both), and the leader counts
    finished again. Returns slots fixed."""
    goals = [g for g in st.catalogue.topic_goals if g in st.scope.guarded]
    if not goals or st.model.replicas.shape != st.rep.shape:
        return 0
    fixed = 0
    for group in np.flatnonzero(st.scope.groups).tolist():
        # Alone, as when the group is planned on its own: its limits and mending stay its own.
        with only_group(st, group):
            in_group = _group_detours(st, goals)
            if in_group:
                revert_moves(st)
                substitute_moves(st)
                tighten_leaders(st)  # moved leaders that went home changed the leader counts
        fixed += in_group
    return fixed


def _group_detours(st: State, goals: Sequence[str]) -> int:
    b = compute_bands(st)
    nracks = st.group_racks()
    replicas = int((st.rep[st.scope.movable] != NO_BROKER).sum())
    budget = _Budget(min(TUNING.detour_max_attempts, max(1, TUNING.detour_replicas_per_attempt // max(replicas, 1))))
    fixed = 0
    for goal in goals:
        cells = _cells(st, b, leaders=goal == TOPIC_LEADER_GOAL)
        if len(cells) > TUNING.detour_max_cells:
            continue
        for cell in cells:
            start = _distances(st, b)
            if _topic_distance(start, cell) == 0:
                continue  # an earlier detour fixed it
            moves = _direct_moves(st, b, cell, nracks=nracks)
            fixed += _best_detour(st, b, moves, start, cell=cell, budget=budget)
    return fixed


def _best_detour(
    st: State, b: Bands, moves: list[tuple[float, Detour]], start: _Distances, *, cell: _Cell, budget: _Budget
) -> int:
    """Try the detours (cheapest first) and keep the one that ends moving fewest bytes, if any
    passes. Returns 1 if one was kept."""
    saved = st.checkpoint()
    base = _bytes_moved(st)
    best: tuple[float, Checkpoint] | None = None
    for estimate, move in moves:
        for leadership_only in _mendings(st, b, move, start):
            if not budget.take():
                return _keep(st, best)
            end = _detour(st, b, move, start, leadership_only=leadership_only)
            if end.no_worse_than(start) and _topic_distance(end, cell) < _topic_distance(start, cell):
                cost = _bytes_moved(st)
                if best is None or cost < best[0]:
                    best = (cost, st.checkpoint())
                st.restore(saved)
                break  # mending with leaderships moves no more bytes than with replicas
            st.restore(saved)
        if best is not None and best[0] <= base + estimate + 1.0:
            break  # mended without moving more: the moves after this one are estimated dearer
    return _keep(st, best)


def _mendings(st: State, b: Bands, move: Detour, start: _Distances) -> tuple[bool, ...]:
    """How the goals may mend what ``move`` pushes out of band: by leadership only first (free),
    then with replica moves; replica moves alone where it pushes out a quantity leadership does
    not carry (disk, say: a leadership-only attempt could not mend it, and on large clusters a
    group gets one attempt). None where ``move`` takes a broker further over a capacity limit: a
    detour bends bands, never a hard goal, and the goals' mending does not bring a broker back
    under a limit (of 241 attempts on clusters with tight disk limits, the 195 that began over a
    limit all failed, each re-running the goals)."""
    saved = st.checkpoint()
    _make(st, move)
    after = _distances(st, b)
    st.restore(saved)
    if after.further_over_a_limit(start):
        return ()
    worse = after.worse_quantities(start)
    carried = {q for q in range(st.catalogue.size) if st.catalogue.leadership_carries(q)} | {start.exact_leaders}
    return (True, False) if worse <= carried else (False,)


def _keep(st: State, best: tuple[float, Checkpoint] | None) -> int:
    if best is None:
        return 0
    st.restore(best[1])
    return 1


def _cells(st: State, b: Bands, *, leaders: bool) -> list[_Cell]:
    """Each count out of its band, in a fixed order."""
    spread = topic_spread(st, b, leaders=leaders)
    ts, xs = np.nonzero(spread.over | spread.under)
    return [_Cell(int(t), int(x), bool(spread.over[t, x]), leaders) for t, x in zip(ts, xs, strict=True)]


def _direct_moves(st: State, b: Bands, cell: _Cell, *, nracks: Ints) -> list[tuple[float, Detour]]:
    """Moves that bring (t, x) one step towards its band without taking another count of t out of
    its band, under every hard goal: the TUNING.detour_tries_per_cell that move fewest bytes. A replica that can
    only go to a broker already at the topic's upper edge (racks allow no other, or it is the
    replica's original broker) goes there when that broker can pass one of its replicas of t on to a
    broker with room: two steps."""
    t, x, over, leaders = cell
    of_topic = np.flatnonzero((st.ptopic == t) & st.scope.movable)
    if leaders:
        return [(0.0, move) for move in _leader_moves(st, b, t, x, of_topic, over=over)[: TUNING.detour_tries_per_cell]]
    if over:
        moves = _replica_moves_out(st, b, t, x, of_topic, nracks=nracks)
    else:
        moves = _replica_moves_in(st, b, t, x, of_topic, nracks=nracks)
    cost = [sum(_step_bytes(st, step) for step in move) for move in moves]
    order = sorted(range(len(moves)), key=lambda i: (cost[i], i))
    return [(cost[i], moves[i]) for i in order[: TUNING.detour_tries_per_cell]]


def _step_bytes(st: State, step: Step) -> float:
    """Bytes a replica move adds to the plan: its size, less when it returns to an original broker."""
    p, k, d = step
    orig = st.model.replicas[p].tolist()
    size = float(st.model.copy_bytes[p])
    return size * ((d not in orig) - (int(st.rep[p, k]) not in orig))


def _leader_moves(st: State, b: Bands, t: int, x: int, of_topic: Ints, *, over: bool) -> list[Detour]:
    counts, lo, hi = st.tlead[t], b.lead_lo[t], b.lead_hi[t]
    out: list[Detour] = []
    for p in of_topic[(st.rep[of_topic] == x).any(axis=1)].tolist():
        row = st.rep[p]
        lead = int(row[0])
        for k in range(1, row.size):
            f = int(row[k])
            if f == NO_BROKER or not (st.can_lead[f] and st.active[f]):
                continue
            if (over and lead == x and counts[f] + 1 <= hi) or (
                not over and f == x and lead != NO_BROKER and counts[lead] - 1 >= lo
            ):
                out.append(((p, k, LEADERSHIP),))
    return out


def _replica_moves_out(st: State, b: Bands, t: int, x: int, of_topic: Ints, *, nracks: Ints) -> list[Detour]:
    counts, hi = st.tcount[t], b.topic_hi[t]
    fill = st.load[:, Q_DISK] / np.maximum(b.avg[:, Q_DISK], 1e-12)
    by_room = np.lexsort((np.arange(counts.size), fill, counts))  # fewest of t, then least disk
    room = counts[by_room] + 1 <= hi
    out: list[Detour] = []
    full: list[Step] = []  # first steps to a broker at the edge, for the two-step detours
    for p, k in _cheapest_on(st, of_topic, x):
        ok = _allowed(st, p, k, nracks)[by_room]
        out += [((p, k, int(d)),) for d in by_room[ok & room][: TUNING.detour_dests_per_replica]]
        at_edge = by_room[ok & ~room & (by_room != x)]
        home = np.isin(at_edge, st.model.replicas[p])
        full += [(p, k, int(d)) for d in np.r_[at_edge[home], at_edge[~home]][: TUNING.detour_dests_per_replica]]
    for first in dict.fromkeys(full):
        p, _, d = first
        for q, k in _cheapest_on(st, of_topic[of_topic != p], d):
            ok = _allowed(st, q, k, nracks)[by_room] & room & (by_room != x)
            out += [(first, (q, k, int(e))) for e in by_room[ok][:1]]
    return out


def _replica_moves_in(st: State, b: Bands, t: int, u: int, of_topic: Ints, *, nracks: Ints) -> list[Detour]:
    counts, lo = st.tcount[t], b.topic_lo[t]
    on_u = (st.rep[of_topic] == u).any(axis=1)
    out: list[Detour] = []
    for p in of_topic[~on_u].tolist():
        for k, r in enumerate(st.rep[p].tolist()):
            if r != NO_BROKER and counts[r] - 1 >= lo and _allowed(st, p, k, nracks)[u]:
                out.append(((p, k, u),))
        if len(out) >= TUNING.detour_sources:
            break
    return out


def _cheapest_on(st: State, of_topic: Ints, x: int) -> list[tuple[int, int]]:
    """(partition, slot) of the topic's replicas on ``x``, at most TUNING.detour_sources: those that arrived there
    (moving them on adds no bytes) first, then by size."""
    on = st.rep[of_topic] == x
    parts = of_topic[on.any(axis=1)]
    slots = np.argmax(on[on.any(axis=1)], axis=1)
    arrived = ~(st.model.replicas[parts] == x).any(axis=1)
    order = np.lexsort((st.model.copy_bytes[parts], ~arrived))[: TUNING.detour_sources]
    return [(int(parts[i]), int(slots[i])) for i in order]


def _allowed(st: State, p: int, k: int, nracks: Ints) -> BoolArray:
    """(B,): the brokers replica ``k`` of ``p`` may move to under the hard goals."""
    row = st.rep[p]
    ok: BoolArray = st.can_host & (st.groups.broker == st.groups.partition[p])
    ok[row[row != NO_BROKER]] = False
    if k == 0:
        ok &= st.can_lead
    nb = st.model.num_brokers
    ok &= rack_ok(st, np.full(nb, p), np.full(nb, k), d=np.arange(nb), nracks=nracks)
    return ok


def _detour(st: State, b: Bands, move: Detour, start: _Distances, *, leadership_only: bool) -> _Distances:
    """Make ``move``, then let the goals of the quantities it pushed out of band mend them (each
    goal's moves may push another quantity out: a few rounds). Returns the distances at the end."""
    _make(st, move)
    goals = st.options.distribution_goals
    for _ in range(TUNING.detour_mend_rounds):
        end = _distances(st, b)
        worse = end.worse_quantities(start)
        if not worse:
            return end
        placed = st.rep.copy()
        for goal in goals:
            if st.catalogue.balances(goal) in worse:
                balance_goal(st, goal, leadership_only=leadership_only)
        if {Q_LEADERS, end.exact_leaders} & worse:
            tighten_leaders(st)
        if np.array_equal(st.rep, placed):
            return end  # the goals moved nothing: another round would repeat this one
    return _distances(st, b)


def _make(st: State, move: Detour) -> None:
    for p, slot, dst in move:
        if dst == LEADERSHIP:
            st.swap_leader(np.array([p]), np.array([slot]))
        else:
            st.move(np.array([p]), np.array([slot]), np.array([dst], dtype=np.int32))


def _bytes_moved(st: State) -> float:
    arrived = arrived_replicas(st.rep, st.model.replicas)
    return float((st.model.copy_bytes * arrived.sum(axis=1)).sum())


def _distances(st: State, b: Bands) -> _Distances:
    load = st.load
    size = st.catalogue.size  # the column after the quantities': the rounded leader-count average
    broker = np.zeros((st.model.num_brokers, size + 1))
    broker[:, :size] = band_distance(load, b.lower, b.upper)
    if leader_count_goal(st) is not None and np.isfinite(b.upper[:, Q_LEADERS]).any():
        lo, hi, _ = bands(st, Q_LEADERS, 1.0)
        broker[:, size] = band_distance(load[:, Q_LEADERS], lo, hi)
    over_limit = band_distance(load, np.full_like(load, -np.inf), st.limit)
    tol = np.abs(np.c_[b.avg, b.avg[:, Q_LEADERS]]) * 1e-9 + 1e-9
    in_group = topic_brokers(st)
    replicas = np.where(in_group, count_distance(st.tcount, b.topic_lo, b.topic_hi), 0)
    lead_group = in_group & b.topic_leader_on[:, None]
    leaders = np.where(lead_group, count_distance(st.tlead, b.lead_lo, b.lead_hi), 0)
    return _Distances(broker, over_limit, replicas, leaders, tol)


def _topic_distance(d: _Distances, cell: _Cell) -> int:
    """How far the cell's topic is from its band, over every broker."""
    return int((d.leaders if cell.leaders else d.replicas)[cell.topic].sum())

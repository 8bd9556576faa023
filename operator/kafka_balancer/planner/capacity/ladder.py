"""The capacity repair's ladder: what one-way moves left above a limit, removed round by round.

Each round climbs :data:`RUNGS` in order and stops at the first that removes some excess: a
descent step per broker over the limit (:mod:`descent`), a broker making room for a replica too
big for any broker's room (:mod:`make_room`), a search placing a small group's replicas again
(:mod:`search`), that search over every broker where the plan placed replicas of topics in no
group, a solver placing them (:mod:`solver`: where the search found nothing, or the group is too big
for it), and, once per repair, the group's leaderships handed out again (:mod:`leadership_room`).
The repair stops when no rung removes anything; if the leaderships were handed out and a limit is
still broken, the placement goes back to what it was before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.state import Checkpoint, State
from kafka_balancer.planner.capacity.descent import descend
from kafka_balancer.planner.capacity.leadership_room import hand_leadership_to_room
from kafka_balancer.planner.capacity.make_room import make_room
from kafka_balancer.planner.capacity.repair_round import RepairRound
from kafka_balancer.planner.capacity.room import destinations, hosts_for, over_limit_brokers, room_in_group
from kafka_balancer.planner.capacity.search import search
from kafka_balancer.planner.capacity.solver import solve


@dataclass
class _Ladder:
    """One round of the ladder of a capacity repair: the brokers over the limit and what its rungs share."""

    round: RepairRound
    over: Ints  # the brokers above the limit of ``q`` this round
    unhanded: list[Checkpoint]  # the placement before the leaderships were handed out (once per repair)
    hosts: list[Ints] = field(default_factory=list)  # the host sets, once asked for

    def host_sets(self) -> list[Ints]:
        """The brokers that may take replicas of each of ``over``: a rung runs only where the rungs
        before it moved nothing, so they hold for every rung of the round."""
        if not self.hosts:
            self.hosts = _host_sets(self.round.st, self.over)
        return self.hosts


@dataclass(frozen=True)
class Rung:
    """A fallback of the capacity repair: tried, in order, only where the rungs before it this round
    moved nothing; ``run`` returns how much excess it removed."""

    name: str
    applies: Callable[[_Ladder], bool]
    run: Callable[[_Ladder], float]


def _descent(ladder: _Ladder) -> float:
    """One step per broker over the limit: the move or exchange that shrinks the excess most."""
    rnd = ladder.round
    st, q = rnd.st, rnd.q
    gained = 0.0
    for s in ladder.over.tolist():
        # s itself is over its limit (negative room), so it is never among its own takers.
        room = room_in_group(st, s, q, rnd.index, leadership_only=rnd.leadership_only)
        gained += descend(rnd, s, destinations(st, room, s))
    return gained


def _making_room(ladder: _Ladder) -> float:
    """A replica too big for every broker's room, to a broker that passes replicas on for it.

    Nothing moved this round, so the index holds (after a step, later brokers of this loop only
    miss the replicas that step brought them: entries are checked)."""
    st = ladder.round.st
    return sum(make_room(ladder.round, s, np.flatnonzero(hosts_for(st, s))) for s in ladder.over.tolist())


def _searching(ladder: _Ladder) -> float:
    """The small group's movable replicas placed again (:mod:`search`)."""
    rnd = ladder.round
    return sum(search(rnd.st, rnd.q, hosts=hosts, nracks=rnd.nracks) for hosts in ladder.host_sets())


def _searching_wider(ladder: _Ladder) -> float:
    """The search again over every broker where this plan placed replicas of topics in no group."""
    rnd = ladder.round
    wider = _wider_host_sets(rnd.st, ladder.host_sets())
    return sum(search(rnd.st, rnd.q, hosts=hosts, nracks=rnd.nracks) for hosts in wider)


def _solving(ladder: _Ladder) -> float:
    """The group's packing that the search could not place (or did not take), handed to a solver
    (:mod:`solver`)."""
    rnd = ladder.round
    return sum(solve(rnd.st, rnd.q, hosts=hosts, nracks=rnd.nracks) for hosts in ladder.host_sets())


def _handing_out(ladder: _Ladder) -> float:
    """The search keeps each replica's role (and a demotion, which moves no data, has none): once,
    let the leaderships change hands and go on with the one-way steps (not the search again: where
    it fails, its budget is most of the plan's time). Undone if the repair does not finish."""
    st = ladder.round.st
    ladder.unhanded.append(st.checkpoint())
    return float(sum(hand_leadership_to_room(st, hosts) for hosts in ladder.host_sets()))


def _every_round(_ladder: _Ladder) -> bool:
    return True


def _moves_data(ladder: _Ladder) -> bool:
    return not ladder.round.leadership_only


def _before_handing_out(ladder: _Ladder) -> bool:
    return not ladder.unhanded


def _may_search(ladder: _Ladder) -> bool:
    return _moves_data(ladder) and _before_handing_out(ladder)


RUNGS: Final = (
    Rung("descent", _every_round, _descent),
    Rung("making room", _moves_data, _making_room),
    Rung("search", _may_search, _searching),
    Rung("wider search", _may_search, _searching_wider),
    Rung("solver", _may_search, _solving),
    Rung("leaderships handed out", _before_handing_out, _handing_out),
)


def descent_repair(st: State, q: int, nracks: Ints, *, leadership_only: bool) -> None:
    """What one-way moves left above a limit, removed round by round: each round climbs the
    :data:`RUNGS` until one removes some excess, and the repair stops when none does (or the time
    budget is spent, and the plan then fails saying so).

    No cap on the rounds while they remove excess: a descent round moves about one replica per
    broker over the limit, and capped at 160 rounds the repair of a 24-broker cluster whose busiest
    broker held 4,170 replicas against a limit of 577 stopped at 679 (one-way moves had left 839)
    and failed the plan, with room for them in its rack (bench.strong_skew, seed 1, 5,000
    partitions, maxReplicasPerBroker 577)."""
    unhanded: list[Checkpoint] = []
    while True:
        over = over_limit_brokers(st, q)
        if over.size == 0:
            return
        if st.budget.spent():
            break
        ladder = _Ladder(RepairRound(st, q, nracks, st.broker_index_by_slot(), leadership_only), over, unhanded)
        gained = 0.0
        for rung in RUNGS:
            if gained > 0:
                break
            if rung.applies(ladder):
                gained += rung.run(ladder)
        if gained <= 0:
            break
    if unhanded and over_limit_brokers(st, q).size:
        st.restore(unhanded[0])  # handing the leaderships out did not finish the repair: as it was


def _host_sets(st: State, over: Ints) -> list[Ints]:
    """The brokers that may take replicas of each of ``over``, once per distinct set (a group's)."""
    sets: dict[bytes, Ints] = {}
    for s in over.tolist():
        hosts = np.flatnonzero(hosts_for(st, s))
        sets.setdefault(hosts.tobytes(), hosts)
    return list(sets.values())


def _wider_host_sets(st: State, host_sets: list[Ints]) -> list[Ints]:
    """Each host set that holds replicas this plan placed of unmanaged partitions, with every broker
    that may host added: those replicas may go anywhere, and making room for the group can take
    moving them out of it (a `remove-brokers` onto targets in two groups put another group's
    replicas on this one's brokers, and only sending some back made room). Tried only after the
    group's own sets found nothing, since other groups' brokers must then fit under their limits too."""
    if not st.has_unmanaged:
        return []
    arrivals, every = st.unmanaged_arrivals(), np.flatnonzero(st.can_host)
    return [np.union1d(hosts, every) for hosts in host_sets if arrivals[hosts].any() and every.size > hosts.size]

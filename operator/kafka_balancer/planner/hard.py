"""Hard goals: evacuate what may not stay, spread racks, move leadership off excluded brokers, and
enforce capacities. When the cluster cannot satisfy one, raise :class:`PlanningError` naming the
brokers, the numbers and what capacity would fix it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, FloatArray
from kafka_balancer.planner.arrays import Ints
from kafka_balancer.planner.capacity_descent import descend
from kafka_balancer.planner.capacity_search import search
from kafka_balancer.planner.catalogue import Q_DISK, Q_LEADERS, Q_REPLICAS
from kafka_balancer.planner.goals import EPS, over_limit, rack_allowance
from kafka_balancer.planner.leadership_room import hand_leadership_to_room
from kafka_balancer.planner.make_room import make_room
from kafka_balancer.planner.options import PlanningError
from kafka_balancer.planner.repair_round import RepairRound
from kafka_balancer.planner.select import (
    Pair,
    compute_bands,
    fit_order,
    leader_candidates,
    led_partitions,
    limits_check,
    replica_candidates,
    take,
    topic_penalty,
)
from kafka_balancer.planner.state import Checkpoint, State

# A capacity repair round offers an over-limit broker's load to this many brokers with most room,
# and to this many of its own rack (with 8 there too, a 320k-replica cluster with near-full disks
# ended with replica-distribution out of band; with 1 or 3 every goal held).
DESTINATIONS: Final = 8
SAME_RACK_DESTINATIONS: Final = 3
# Evacuated replicas are placed in chunks of this many per destination broker, so one chunk
# spreads round-robin over the least-filled brokers and the next chunk sees the new totals.
CHUNK_PER_BROKER: Final = 4
# Descent rounds allowed per round of one-way moves: each round makes one step per over-limit broker.
DESCENT_STEPS_PER_ROUND: Final = 4


def _ids(st: State, brokers: Ints | list[int]) -> str:
    """Broker ids as ``[1, 2, 5-9]``: error messages stay readable on clusters of hundreds of brokers."""
    ids = sorted(int(st.model.broker_ids[b]) for b in brokers)
    runs: list[list[int]] = []
    for i in ids:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    text = [", ".join(map(str, r)) if len(r) < 3 else f"{r[0]}-{r[-1]}" for r in runs]
    return "[" + ", ".join(text) + "]"


def precheck(st: State) -> None:
    """Refuse early when a group's total load cannot fit under its brokers' limits."""
    groups = st.groups
    rf = st.rf
    for g, name in enumerate(groups.names):
        hosts = np.flatnonzero(st.can_host & (groups.broker == g))
        parts = np.flatnonzero(groups.partition == g)
        if parts.size == 0 or not (groups.broker == g).any():
            continue
        # Live brokers excluded from new replicas keep theirs: a partition needs hosts for the rest.
        kept = st.active & ~st.can_host & (groups.broker == g)
        on_kept = st.replicas_on(parts, kept)
        worst = int(np.argmax(rf[parts] - on_kept))
        max_rf, short = int(rf[parts[worst]]), int(rf[parts[worst]] - on_kept[worst]) - hosts.size
        if short > 0:
            raise PlanningError(
                "replica-capacity",
                f"group '{name}' has partitions with replication factor {max_rf} but only {hosts.size} brokers "
                f"can host replicas ({_ids(st, hosts)}); add {short} broker(s) to the group",
            )
        for goal, q in st.catalogue.capacity_goals:
            if not st.options.hard(goal):
                continue
            limits = st.limit[hosts, q]
            if not np.all(np.isfinite(limits)):
                continue
            rows_lead = st.lead[parts, q]
            rows_follow = st.follow[parts, q] * np.maximum(rf[parts] - 1, 0)
            total = float(rows_lead.sum() + rows_follow.sum())
            # Those excluded brokers keep up to their limit.
            room = float(limits.sum() + np.minimum(st.limit[kept, q], st.load[kept, q]).sum())
            if total > room * (1 + EPS):
                _capacity_error(st, goal, name, hosts=hosts, total=total, room=room)


def _capacity_error(st: State, goal: str, group: str, *, hosts: Ints, total: float, room: float) -> None:
    q = dict(st.catalogue.capacity_goals)[goal]
    what = st.catalogue.quantity_names[q]
    if q == Q_REPLICAS:
        per = float(st.options.max_replicas_per_broker)
        need = math.ceil((total - room) / per)
        raise PlanningError(
            goal,
            f"group '{group}' holds {total:.0f} replicas but its {hosts.size} brokers {_ids(st, hosts)} allow "
            f"{room:.0f} (maxReplicasPerBroker {per:.0f}); add {need} broker(s) or raise maxReplicasPerBroker to "
            f"{math.ceil(total / max(hosts.size, 1))}",
        )
    threshold = st.options.capacity_threshold
    per = float(np.median(st.limit[hosts, q]))
    need = math.ceil((total - room) / per)
    raise PlanningError(
        goal,
        f"group '{group}' needs {total:.6g} {what} but {threshold:.0%} of its brokers' capacity {_ids(st, hosts)} "
        f"is {room:.6g}; add {need} broker(s) of {per / threshold:.6g} {what} capacity or raise "
        f"capacityThreshold to {min(1.0, total / (room / threshold)):.2f}",
    )


def bad_slots(st: State, evacuate: BoolArray) -> tuple[Ints, Ints]:
    """Replica slots that must move: on an ``evacuate`` broker, outside their group, or crowding a rack."""
    rep = st.rep
    valid = rep != NO_BROKER
    safe = np.maximum(rep, 0)
    bad = valid & evacuate[safe]
    if st.options.hard("resource-group-confinement"):
        home = st.groups.partition
        outside = st.groups.broker[safe] != home[:, None]
        bad |= valid & outside & (st.groups.has_brokers[home] & st.scope.movable)[:, None]
    if st.options.hard("rack-awareness"):
        racks = np.where(valid & ~bad, st.rack[safe], -1)
        rf = valid.sum(axis=1)
        allowed = rack_allowance(rf, st.group_racks()[st.groups.partition])
        seen = np.zeros(rep.shape[0], dtype=np.int32)
        for k in range(rep.shape[1]):
            earlier = ((racks[:, :k] == racks[:, k : k + 1]) & (racks[:, :k] >= 0)).sum(axis=1) if k else seen
            crowd = (racks[:, k] >= 0) & (earlier >= allowed) & st.scope.movable
            bad[:, k] |= crowd
    parts, slots = np.nonzero(bad)
    return parts.astype(np.int64), slots.astype(np.int64)


def evacuate(st: State, parts: Ints, slots: Ints, targets: BoolArray | None = None) -> None:
    """Re-place the given replicas on the least-filled allowed brokers of their group, rack-aware."""
    nracks = st.group_racks()
    while parts.size:
        # One replica per partition per pass, so a chunk never puts two replicas of one partition together.
        _, first = np.unique(parts, return_index=True)
        now = np.zeros(parts.size, dtype=np.bool_)
        now[first] = True
        _place(st, parts[now], slots[now], targets, nracks)
        parts, slots = parts[~now], slots[~now]


def _place(st: State, parts: Ints, slots: Ints, targets: BoolArray | None, nracks: Ints) -> None:
    order = np.argsort(-st.model.size_bytes[parts], kind="stable")
    parts, slots = parts[order], slots[order]
    for g in np.unique(st.groups.partition[parts]):
        in_group = st.groups.partition[parts] == g
        gp, gs = parts[in_group], slots[in_group]
        allowed = st.hosts_of_group(int(g))
        if targets is not None:
            allowed &= targets
        dests = np.flatnonzero(allowed)
        if dests.size == 0:
            members = np.flatnonzero(st.groups.broker == g)
            among = "the target brokers" if targets is not None else f"its brokers {_ids(st, members)}"
            raise PlanningError(
                "excluded-brokers",
                f"group '{st.groups.names[g]}' has {gp.size} replicas to re-place but none of {among} can host "
                f"them (dead, being removed, or in excludedBrokersForReplicas); add a broker to the group",
            )
        chunk = CHUNK_PER_BROKER * dests.size
        for start in range(0, gp.size, chunk):
            # Onto named targets, a partition's other replica still on a dead or removed broker (placed
            # in a later pass, which sees where this one went) does not hold its rack: the targets
            # may offer no other. Elsewhere it does, as it may be placed onto fewer brokers later.
            cp, cs = gp[start : start + chunk], gs[start : start + chunk]
            st.move(cp, cs, choose_destinations(st, cp, cs, dests, nracks, inactive_racks=targets is None))


def choose_destinations(
    st: State, parts: Ints, slots: Ints, dests: Ints, nracks: Ints, *, inactive_racks: bool = True
) -> Ints:
    """A broker among ``dests`` for each (distinct) partition's slot: rack-aware, under every limit,
    not already holding the partition; items go round-robin over the least-filled brokers first.
    Without ``inactive_racks``, replicas on dead or removed brokers do not count towards a rack."""
    active_avg = np.maximum(st.load[st.active].mean(axis=0), 1e-12) if st.active.any() else np.ones(st.catalogue.size)
    fill = st.load[dests, Q_REPLICAS] / active_avg[Q_REPLICAS] + st.load[dests, Q_DISK] / active_avg[Q_DISK]
    dests = dests[np.argsort(fill, kind="stable")]
    n = dests.size
    rows = st.rep[parts]
    valid = rows != NO_BROKER
    counted = valid if inactive_racks else valid & st.active[np.maximum(rows, 0)]
    racks = np.where(counted, st.rack[np.maximum(rows, 0)], -1)
    racks[np.arange(parts.size), slots] = -1
    # The slot being filled counts towards the replication factor even when it is new (growing rf).
    rf = valid.sum(axis=1) + (rows[np.arange(parts.size), slots] == NO_BROKER)
    # A group without brokers (its partitions may go anywhere) spreads over the racks of ``dests``.
    racks_there = nracks[st.groups.partition[parts]]
    if not racks_there.all():
        racks_there = np.where(racks_there > 0, racks_there, np.unique(st.rack[dests]).size)
    allowed_per_rack = rack_allowance(rf, racks_there)
    v = st.slot_loads(parts, slots)
    feas = ~(rows[:, :, None] == dests[None, None, :]).any(axis=1)  # (C, n)
    if st.options.hard("rack-awareness"):
        same = (racks[:, :, None] == st.rack[dests][None, None, :]).sum(axis=1)
        feas &= same + 1 <= allowed_per_rack[:, None]
    room = st.limit[dests] - st.load[dests]  # (n, Q)
    fits = feas & np.all(v[:, None, :] <= room[None, :, :] + 1e-9, axis=2)
    # The leader's slot goes to a broker that may lead where one fits; else to any, and
    # fix_leadership hands the leadership to another replica (all-r0 brokers, one excluded from
    # leadership: a dead leader's slot had nowhere to go and planning failed with rack-awareness).
    may_lead = fits & ((slots != 0)[:, None] | st.can_lead[dests][None, :])
    fits = np.where(may_lead.any(axis=1)[:, None], may_lead, fits)
    shift = (np.arange(parts.size)[:, None] + np.arange(n)[None, :]) % n
    rotated = np.take_along_axis(fits, shift, axis=1)
    found = rotated.any(axis=1)
    pick: Ints = dests[shift[np.arange(parts.size), np.argmax(rotated, axis=1)]].astype(np.int32)
    # Where no broker of the right rack has room, the fullest brokers are over their limit and the
    # capacity repair that follows makes room by moving other replicas: place on the broker left least over.
    over = ~found & feas.any(axis=1)
    if over.any():
        excess = np.maximum(v[over][:, None, :] - room[None, :, :], 0.0) / active_avg
        cost = np.where(feas[over], excess.sum(axis=2), np.inf)
        pick[over] = dests[np.argmin(cost, axis=1)]
        found |= over
    if not found.all():
        i = int(np.flatnonzero(~found)[0])
        _no_spread_error(st, int(parts[i]), dests, racks[i], allowed_per_rack[i])
    return pick


def _no_spread_error(st: State, p: int, dests: Ints, racks: Ints, allowed: float) -> None:
    """Partition ``p`` (its other replicas in ``racks``) fits on none of ``dests``: name the brokers
    outside them that would keep it spread (``dests`` were the brokers the user named), if any."""
    replicas = [int(st.model.broker_ids[b]) for b in st.rep[p][st.rep[p] >= 0]]
    hosts = np.flatnonzero(st.hosts_of_group(int(st.groups.partition[p])))
    crowded = (racks[None, :] == st.rack[hosts][:, None]).sum(axis=1) + 1 > allowed
    spread = hosts[~crowded & ~np.isin(hosts, st.rep[p]) & ~np.isin(hosts, dests)]
    remedy = (
        f"add one of brokers {_ids(st, spread)} to operation.targetBrokers"
        if spread.size
        else "add a broker in another rack"
    )
    raise PlanningError(
        "rack-awareness" if st.options.hard("rack-awareness") else "replica-capacity",
        f"partition {st.model.topic_name(p)}-{int(st.model.partition_id[p])} (replicas {replicas}) has no "
        f"broker among {_ids(st, dests)} that keeps its racks spread; {remedy}",
    )


def fix_leadership(st: State) -> None:
    """Move leadership off brokers that may not lead (excluded, demoted, dead) onto an allowed replica."""
    rep = st.rep
    valid = rep != NO_BROKER
    safe = np.maximum(rep, 0)
    leader = rep[:, 0]
    eligible = valid & st.can_lead[safe]
    wrong = (leader != NO_BROKER) & ~st.can_lead[np.maximum(leader, 0)] & eligible.any(axis=1)
    parts = np.flatnonzero(wrong)
    if parts.size == 0:
        return
    # Among allowed replicas, the one whose broker leads least (as counted before this step).
    score = np.where(eligible[parts], st.load[safe[parts], Q_LEADERS], np.inf)
    slots = np.argmin(score, axis=1)
    st.swap_leader(parts.astype(np.int64), slots.astype(np.int64))


def enforce_capacity(st: State, *, fewest_bytes: bool = False, leadership_only: bool = False) -> None:
    """Move load off brokers above a capacity limit onto brokers of the same group with room.

    Disk and traffic are first moved in no more replicas than the replica-count goal would move
    between the two brokers (at least one per pair and round), so the repair, which runs before any
    distribution goal, does not leave brokers too full to take the replicas that goal must bring
    them; only what that cannot repair is moved without the cap. With ``fewest_bytes`` (no
    distribution goal follows, so nothing is gained by choosing for it) each pair moves the fewest
    bytes that cover the excess instead. With ``leadership_only`` (demote-brokers: no data moves)
    only the loads leadership carries are repaired, and by leadership moves alone.
    """
    with st.scoped(repairing=True):
        _enforce_capacity(st, fewest_bytes=fewest_bytes, leadership_only=leadership_only)


def _enforce_capacity(st: State, *, fewest_bytes: bool, leadership_only: bool) -> None:
    nracks = st.group_racks()
    # A group without brokers (unmanaged partitions, see State.unmanaged) spreads over every rack.
    nracks[nracks == 0] = np.unique(st.rack[st.can_host]).size
    for goal, q in st.catalogue.capacity_goals:
        if not st.options.hard(goal) or not np.isfinite(st.limit[:, q]).any():
            continue
        if leadership_only and not st.catalogue.leadership_carries(q):
            continue
        for count_cap in (q != Q_REPLICAS and not fewest_bytes and not leadership_only, False):
            rules = _Rules(count_cap, fewest_bytes, leadership_only)
            for _ in range(st.options.max_rounds):
                over = _over_limit(st, q)
                if over.size == 0:
                    break
                index = st.broker_index_by_slot()
                bands = compute_bands(st)
                moved = 0.0
                for s in over:
                    room = _room_in_group(st, int(s), q, index, leadership_only=leadership_only)
                    for d in _destinations(st, room, int(s)):
                        if st.load[s, q] <= st.limit[s, q]:
                            break
                        pair = Pair(st, bands, int(s), int(d), q, index, nracks)
                        moved += _repair_pair(pair, float(room[d]), rules)
                if moved <= 0:
                    break
        _descent_repair(st, q, nracks, leadership_only=leadership_only)
        _check_capacity(st, goal, q)


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
        room = _room_in_group(st, s, q, rnd.index, leadership_only=rnd.leadership_only)
        gained += descend(rnd, s, _destinations(st, room, s))
    return gained


def _making_room(ladder: _Ladder) -> float:
    """A replica too big for every broker's room, to a broker that passes replicas on for it.

    Nothing moved this round, so the index holds (after a step, later brokers of this loop only
    miss the replicas that step brought them: entries are checked)."""
    st = ladder.round.st
    return sum(make_room(ladder.round, s, np.flatnonzero(_hosts_for(st, s))) for s in ladder.over.tolist())


def _searching(ladder: _Ladder) -> float:
    """The small group's movable replicas placed again (:mod:`capacity_search`)."""
    rnd = ladder.round
    return sum(search(rnd.st, rnd.q, hosts=hosts, nracks=rnd.nracks) for hosts in ladder.host_sets())


def _searching_wider(ladder: _Ladder) -> float:
    """The search again over every broker where this plan placed replicas of topics in no group."""
    rnd = ladder.round
    wider = _wider_host_sets(rnd.st, ladder.host_sets())
    return sum(search(rnd.st, rnd.q, hosts=hosts, nracks=rnd.nracks) for hosts in wider)


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
    Rung("leaderships handed out", _before_handing_out, _handing_out),
)


def _descent_repair(st: State, q: int, nracks: Ints, *, leadership_only: bool) -> None:
    """What one-way moves left above a limit, removed round by round: each round climbs the
    :data:`RUNGS` until one removes some excess, and the repair stops when none does."""
    unhanded: list[Checkpoint] = []
    for _ in range(st.options.max_rounds * DESCENT_STEPS_PER_ROUND):
        over = _over_limit(st, q)
        if over.size == 0:
            return
        ladder = _Ladder(RepairRound(st, q, nracks, st.broker_index_by_slot(), leadership_only), over, unhanded)
        gained = 0.0
        for rung in RUNGS:
            if gained > 0:
                break
            if rung.applies(ladder):
                gained += rung.run(ladder)
        if gained <= 0:
            break
    if unhanded and _over_limit(st, q).size:
        st.restore(unhanded[0])  # handing the leaderships out did not finish the repair: as it was


def _host_sets(st: State, over: Ints) -> list[Ints]:
    """The brokers that may take replicas of each of ``over``, once per distinct set (a group's)."""
    sets: dict[bytes, Ints] = {}
    for s in over.tolist():
        hosts = np.flatnonzero(_hosts_for(st, s))
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


def _room_in_group(st: State, s: int, q: int, index: tuple[Ints, Ints], *, leadership_only: bool = False) -> FloatArray:
    """Room under the limit of ``q`` on every broker that may host in the group of ``s`` (0 elsewhere).

    Leadership moves (``leadership_only``) go to brokers that already hold a replica of a partition
    ``s`` leads: any of those that may lead, excluded from new replicas or not. Only those: the
    destinations are the few with most room, and brokers without a limit of ``q`` (unbounded room)
    that share no partition with ``s`` would crowd out the ones that can take its leaderships."""
    takers = _leadership_peers(st, s, index) if leadership_only else _hosts_for(st, s)
    room: FloatArray = np.where(takers, st.limit[:, q] - st.load[:, q], 0.0)
    return room


def _leadership_peers(st: State, s: int, index: tuple[Ints, Ints]) -> BoolArray:
    """Brokers that may lead and hold a replica of a partition whose leadership on ``s`` may move
    (what :func:`select.leader_candidates` offers them)."""
    peers = st.rep[led_partitions(st, index, s)]
    out = np.zeros(st.model.num_brokers, dtype=np.bool_)
    out[peers[(peers != NO_BROKER) & (peers != s)]] = True
    return out & st.can_lead


def _hosts_for(st: State, s: int) -> BoolArray:
    """Brokers that may take replicas of ``s``: its group's hosts, and any host where ``s`` holds
    replicas this plan placed of unmanaged partitions (they may go anywhere, see State.unmanaged)."""
    hosts = st.hosts_of_group(int(st.groups.broker[s]))
    if st.has_unmanaged and st.unmanaged_arrivals()[s]:
        hosts = hosts | st.can_host
    return hosts


def _destinations(st: State, room: FloatArray, s: int) -> Ints:
    """The brokers with most room, and the ones with most room in the rack of ``s``: where every
    partition already has a replica in each rack, a replica can only move within its rack, and the
    brokers with most room overall can all be in other racks (at 1.3M replicas with disks near full,
    the repair then stopped with 5 brokers over their limit and room to spare in their racks)."""
    by_room = np.argsort(-room, kind="stable")
    by_room = by_room[room[by_room] > 0]
    same = by_room[st.rack[by_room] == st.rack[s]][:SAME_RACK_DESTINATIONS]
    picked = np.union1d(same, by_room[:DESTINATIONS])
    out: Ints = picked[np.argsort(-room[picked], kind="stable")]
    return out


@dataclass(frozen=True)
class _Rules:
    """How one pass of the one-way capacity repair chooses what moves (see :func:`enforce_capacity`)."""

    count_cap: bool  # no more replicas per pair than the replica-count goal would move
    fewest_bytes: bool  # the fewest bytes that cover the excess (no distribution goal follows)
    leadership_only: bool  # leadership moves only (demote-brokers)


def _repair_pair(pair: Pair, room: float, rules: _Rules) -> float:
    """Move up to the excess of ``q`` from s to d (leadership first where it carries ``q``); returns the amount."""
    st, s, d, q = pair.st, pair.s, pair.d, pair.q
    moved = 0.0
    if st.catalogue.leadership_carries(q):
        limits = np.maximum(st.limit[d] - st.load[d], 0.0)
        limits[q] = room
        parts, slots = leader_candidates(st, pair.index, s, d)
        v = st.lead[parts] - st.follow[parts]
        if rules.leadership_only:
            # No goal follows to even the leaders out again: no more elections than the excess needs.
            excess = float(st.load[s, q] - st.limit[s, q])
            limits[q] = min(room, excess + float(v[:, q].max(initial=0.0)))
        # Unmanaged partitions' leadership (State.unmanaged) last: only where the others are not enough.
        ordered = np.lexsort((-v[:, q], st.unmanaged[parts]))
        chosen = take(v[ordered], limits_check(limits))
        st.swap_leader(parts[ordered][chosen], slots[ordered][chosen])
        moved += float(v[ordered][chosen, q].sum())
    excess = float(st.load[s, q] - st.limit[s, q])
    if excess <= 0 or rules.leadership_only:
        return moved
    parts, slots = replica_candidates(st, pair.index, s, d=d, nracks=pair.nracks, leaders_only=False)
    v = st.slot_loads(parts, slots)
    wanted = _count_wanted(pair)
    limits = np.maximum(st.limit[d] - st.load[d], 0.0)
    if rules.fewest_bytes:
        ordered, cover = _fewest_bytes_order(v[:, q], excess)
        limits[q] = min(room, cover)
    else:
        ordered = _count_order(pair, parts, slots, v, count=excess if q == Q_REPLICAS else wanted)
        limits[q] = min(room, excess + float(v[:, q].max(initial=0.0)))
    if rules.count_cap:
        limits[Q_REPLICAS] = min(limits[Q_REPLICAS], wanted)
    picked = ordered[take(v[ordered], limits_check(limits))]
    st.move(parts[picked], slots[picked], np.full(picked.size, d, dtype=np.int32))
    return moved + float(v[picked, q].sum())


def _count_wanted(pair: Pair) -> float:
    """Replicas the replica-count goal would move from s to d, at least one."""
    load, avg = pair.st.load[:, Q_REPLICAS], pair.b.avg[:, Q_REPLICAS]
    return max(min(float(load[pair.s] - avg[pair.s]), float(avg[pair.d] - load[pair.d])), 1.0)


def _count_order(pair: Pair, parts: Ints, slots: Ints, v: FloatArray, *, count: float) -> Ints:
    """Candidates in the order the replica-count goal would move them: their topics' spread first,
    then replicas whose loads are what the other goals want moved per replica.

    Taken in partition order (replica counts), a 2.8M-replica cluster's repair put up to 1,991
    replicas of its first topic on each new broker against a band of 286, which the per-topic
    goals could not undo in time; taken largest first (disk), it filled the new brokers to their
    disk limit with a few big replicas, leaving nothing the replica-count goal could bring them.
    """
    penalty = topic_penalty(pair, pair.st.ptopic[parts], leaders=slots == 0, replicas_move=True)
    return fit_order(pair, v, q=Q_REPLICAS, count=max(count, 1.0), penalty=penalty)


def _fewest_bytes_order(v: FloatArray, excess: float) -> tuple[Ints, float]:
    """Candidates (their amounts ``v``) in the order that covers ``excess`` with the fewest bytes,
    and the amount to stop at: the smallest one that covers it alone first, else the largest ones
    until they do (fewest moves)."""
    covers = v >= excess
    if covers.any():
        # Then the rest largest first, should the covering ones not fit the taker's other limits.
        order = np.lexsort((np.where(covers, v, -v), ~covers))
        return order.astype(np.int64), float(v[covers].min())
    order = np.argsort(-v, kind="stable").astype(np.int64)
    sums = np.cumsum(v[order])
    if sums.size == 0:
        return order, 0.0
    return order, float(sums[min(int(np.searchsorted(sums, excess - 1e-9)), sums.size - 1)])


def _over_limit(st: State, q: int) -> Ints:
    """Active brokers above their limit of ``q`` that this plan must repair (see goals.over_limit)."""
    over: Ints = np.flatnonzero(st.active & over_limit(st, q, scoped=True))
    return over


def _check_capacity(st: State, goal: str, q: int) -> None:
    over = _over_limit(st, q)
    if over.size == 0:
        return
    b = int(over[0])
    g = int(st.groups.broker[b])
    hosts = np.flatnonzero(st.hosts_of_group(g))
    load, limit = float(st.load[b, q]), float(st.limit[b, q])
    what = st.catalogue.quantity_names[q]
    raise PlanningError(
        goal,
        f"broker {int(st.model.broker_ids[b])} would carry {load:.6g} {what} above its limit "
        f"{limit:.6g} and no broker of group '{st.groups.names[g]}' ({_ids(st, hosts)}) can take the excess "
        f"without breaking another hard goal; add a broker with at least {load - limit:.6g} free "
        f"{what} capacity",
    )

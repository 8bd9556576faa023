"""An independent judge of a placement: every hard goal and distribution band computed from its
definition in docs/goals.md and docs/crds.md, reading only the snapshot (the model), the policy
(PlannerOptions, as the user wrote it) and the replica lists, never the planner's own measures,
groups or catalogue. A property test trusts this, not the summary the planner writes about itself.

Readings of the docs where they leave a choice (each says which line it reads):

- A broker "may host" when it is alive, not being removed (``remove-brokers``) and not in
  ``excludedBrokersForReplicas``; an excluded broker keeps what it holds, so a partition's racks are
  the racks of its group's brokers that may host plus those of the live brokers holding it.
- A broker without a rack is a rack of its own (the docs do not say). Only replicas on live brokers
  crowd a rack (a replica on a dead broker is down already; only a demotion leaves one there).
- A partition "could" be led by a live replica on a broker neither excluded from leadership nor
  being demoted.
- A per-topic band is around the topic's replicas on its group's active brokers divided by their
  number (the same as the planner's while the group is confined).
- The "active" brokers of a group, over whose average a band is taken, are its live brokers not being
  removed; brokers excluded from new replicas stay members ("a broker in a group" has a band).
- A broker's load (the "quantity per broker" of a distribution goal) counts every replica it holds,
  also of a topic in no group while every broker is in one (such a topic is in no per-topic band:
  it "stays where it is"). A topic moved with ``move-topics`` into ``targetGroup`` is that group's.
- ``cordoned-log-dirs``: a broker whose every log directory is cordoned takes no new replica, and no
  replica goes into a cordoned directory it was not in. Without the goal among the hard goals such a
  broker may take replicas (the plan names no directory for them); a cordoned directory never takes
  one by name, so under ``log-dir-capacity`` it holds no more than it holds.
- ``log-dir-capacity``: the replicas in a directory (its bytes as the snapshot sizes them) take at
  most ``capacityThreshold`` x its volume's ``totalBytes`` (unknown size: unlimited). Judged on the
  directories the plan names (``DirPlacement``; without it, on the snapshot's: a replica that
  arrives on a broker is then in no known directory).
- With ``preferredLeaderRacks`` (and ``preferred-leader-racks`` among the hard goals), a broker "may
  lead" as above (excluded from leadership only while ``excluded-brokers`` is a hard goal, as the
  exclusions are), and the goals leadership carries are banded per group and leader tier (each listed
  rack one tier, the unlisted racks one); the per-topic leader goal weighs no topic. A ResourceGroup's
  own ``preferredLeaderRacks`` replaces the policy's list for its topics and for the tiers of its
  brokers; the topics in no group follow the policy's list.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from kafka_balancer.model import ClusterModel
from kafka_balancer.planner import PlannerOptions

Placement = dict[tuple[str, int], tuple[int, ...]]
# (topic, partition, broker id) -> the replica's log directory after a plan (None: not known).
DirPlacement = dict[tuple[str, int, int], str | None]
Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]

MIB = 1024.0 * 1024.0
EPS = 1e-9
CAPACITY_GOALS = {  # goal -> (quantity, BrokerInfo field of its capacity)
    "disk-capacity": ("disk", "disk_bytes"),
    "network-in-capacity": ("network-in", "network_in_bytes_per_sec"),
    "network-out-capacity": ("network-out", "network_out_bytes_per_sec"),
    "cpu-capacity": ("cpu", "cpu_cores"),
}
BROKER_GOALS = {  # distribution goal -> (quantity, counts whole items)
    "replica-distribution": ("replicas", True),
    "disk-distribution": ("disk", False),
    "network-in-distribution": ("network-in", False),
    "network-out-distribution": ("network-out", False),
    "cpu-distribution": ("cpu", False),
    "leader-count-distribution": ("leaders", True),
    "leader-bytes-in-distribution": ("leader-bytes-in", False),
}
TOPIC_GOALS = ("topic-replica-distribution", "topic-leader-distribution")
# Judged from the plan's log_dirs, which a placement of brokers does not carry: test_planner_log_dirs.py.
DIRECTORY_GOALS = frozenset({"log-dir-distribution"})
# The quantities leadership carries (docs/goals.md, "Preferred leader racks"): banded per leader tier.
LEADER_BORNE = frozenset({"leaders", "leader-bytes-in", "network-out", "cpu"})
PREFERRED_RACKS = "preferred-leader-racks"
CORDONS = "cordoned-log-dirs"
DIR_CAPACITY = "log-dir-capacity"
# What a demotion (leadership only) can change: docs/goals.md, operations, demote-brokers.
LEADERSHIP_GOALS = frozenset({"network-out-capacity", "cpu-capacity", "excluded-brokers"})


@dataclass(frozen=True, order=True)
class Violation:
    """One broken goal at one place: ``where`` is "partition t-3", "broker 2", "group 'a' broker 2" or
    "group 'a' topic t broker 2"; ``detail`` gives the numbers (not compared)."""

    goal: str
    where: str
    detail: str = field(default="", compare=False)
    group: str | None = field(default=None, compare=False)  # of the broker or the partition's topic
    topic: str | None = field(default=None, compare=False)  # of a partition


@dataclass(frozen=True)
class Verdict:
    violations: tuple[Violation, ...]

    def broken(self) -> set[str]:
        return {v.goal for v in self.violations}

    def holds(self, goal: str) -> bool:
        return goal not in self.broken()

    def places(self, goal: str | None = None) -> set[tuple[str, str]]:
        return {(v.goal, v.where) for v in self.violations if goal in (None, v.goal)}

    def hard(self) -> Verdict:
        return Verdict(tuple(v for v in self.violations if v.goal not in BROKER_GOALS and v.goal not in TOPIC_GOALS))

    def bands(self, groups: tuple[str, ...] = ()) -> Verdict:
        """The distribution goals' violations, only in ``groups`` when given (``groupsToBalance``)."""
        return Verdict(
            tuple(
                v
                for v in self.violations
                if (v.goal in BROKER_GOALS or v.goal in TOPIC_GOALS) and (not groups or v.group in groups)
            )
        )


class Layout:
    """The cluster as the docs describe it: brokers, racks, groups, and which broker may host what."""

    def __init__(self, model: ClusterModel, options: PlannerOptions) -> None:
        brokers = model.brokers()
        self.model, self.options = model, options
        self.ids = np.array([b.id for b in brokers], dtype=np.int64)
        self.index = {b.id: i for i, b in enumerate(brokers)}
        labels = [b.rack if b.rack is not None else f"\0{b.id}" for b in brokers]
        self.rack = np.unique(labels, return_inverse=True)[1].astype(np.int64)
        op = options.operation
        removed = np.isin(self.ids, op.brokers) if op.type == "remove-brokers" else np.zeros(len(brokers), bool)
        self.alive = np.array([b.alive for b in brokers])
        self.active = self.alive & ~removed
        # A broker whose every log directory is cordoned takes no new replica (docs/goals.md, cordoned-log-dirs),
        # while the goal is a hard one; an excluded broker, while excluded-brokers is.
        self.cordons = CORDONS in options.hard_goals
        cordoned = np.array([bool(b.log_dirs) and all(d.cordoned for d in b.log_dirs) for b in brokers], dtype=bool)
        self.cordoned = cordoned & self.cordons
        excluded = np.isin(self.ids, options.excluded_brokers_for_replicas) & ("excluded-brokers" in options.hard_goals)
        self.may_host = self.active & ~excluded & ~self.cordoned
        self.capacity = {
            goal: np.array([np.nan if getattr(b, name) is None else getattr(b, name) for b in brokers])
            for goal, (_, name) in CAPACITY_GOALS.items()
        }
        # Each capacity goal's limit: capacityThreshold x the capacity (unknown: unlimited); a JBOD
        # broker's disk at most what its directories may hold together under log-dir-capacity.
        self.limit = {
            goal: np.nan_to_num(options.capacity_threshold * c, nan=math.inf) for goal, c in self.capacity.items()
        }
        if DIR_CAPACITY in options.hard_goals and model.broker_log_dirs:
            self.limit["disk-capacity"] = np.minimum(self.limit["disk-capacity"], self._dir_room(brokers))
        self._groups(model, options)
        self._leader_tiers(brokers, options)

    def _dir_room(self, brokers: list[Any]) -> Floats:
        """What each broker's directories may hold together (docs/goals.md, "Log directories"): the
        limits of its open ones plus what its cordoned ones hold (in the snapshot), up to theirs;
        nothing in a directory being removed; unlimited where an open one's size is not known."""
        m, threshold = self.model, self.options.capacity_threshold
        held: dict[tuple[int, str | None], float] = {}
        for p in range(m.num_partitions):
            for b, path in zip(m.replica_ids(p), m.replica_log_dirs(p), strict=True):
                held[(b, path)] = held.get((b, path), 0.0) + float(m.size_bytes[p])
        op = self.options.operation
        removed = set(op.log_dirs) if op.type == "remove-disks" else set()
        room = np.full(len(brokers), math.inf)
        for i, broker in enumerate(brokers):
            if not broker.log_dirs:
                continue
            total = 0.0
            for d in broker.log_dirs:
                limit = math.inf if d.total_bytes is None else threshold * d.total_bytes
                if (broker.id, d.path) in removed:
                    continue
                total += min(held.get((broker.id, d.path), 0.0), limit) if d.cordoned else limit
            room[i] = total
        return room

    def _leader_tiers(self, brokers: list[Any], options: PlannerOptions) -> None:
        """``racks_of[g]``: the preferred leader racks in force for group ``g``'s topics (docs/goals.md,
        "Preferred leader racks"): its ResourceGroup's own ``preferredLeaderRacks``, else the policy's
        ``goals.preferredLeaderRacks``, which the topics in no group (index -1) follow too; none unless
        ``preferred-leader-racks`` is a hard goal. ``may_lead``: alive, not removed, not demoted, not
        excluded from leadership."""
        hard = PREFERRED_RACKS in options.hard_goals
        policy = options.preferred_leader_racks if hard else ()
        own = {g.name: g.preferred_leader_racks for g in options.resource_groups} if hard else {}
        self.racks_of = [own.get(name) or policy for name in self.names] + [policy]
        self.rack_name = [b.rack for b in brokers]
        no_lead = np.zeros(self.ids.size, bool)
        if "excluded-brokers" in options.hard_goals:
            no_lead |= np.isin(self.ids, options.excluded_brokers_for_leadership)
        if options.operation.type == "demote-brokers":
            no_lead |= np.isin(self.ids, options.operation.brokers)
        self.may_lead = self.active & ~no_lead

    def _groups(self, model: ClusterModel, options: PlannerOptions) -> None:
        """``broker_group`` and ``topic_group``: index into ``names``; -1 for a topic in no band."""
        b_count, groups = self.ids.size, options.resource_groups
        topics = list(model.topics)
        if not groups:
            self.names = ["cluster"]
            self.broker_group = np.zeros(b_count, np.int64)
            self.topic_group = np.zeros(len(topics), np.int64)
            self.named = 0
            return
        self.names = [g.name for g in groups]
        self.named = len(groups)
        self.broker_group = np.full(b_count, -1, np.int64)
        for g, group in enumerate(groups):
            self.broker_group[np.isin(self.ids, group.broker_ids)] = g
        self.topic_group = np.full(len(topics), -1, np.int64)
        for t, name in enumerate(topics):
            for g, group in enumerate(groups):
                if name in group.topic_names or any(re.fullmatch(p, name) for p in group.topic_patterns):
                    self.topic_group[t] = g
                    break
        op = options.operation
        if op.type == "move-topics" and op.target_group is not None:  # the topics move into that group
            self.topic_group[np.isin(topics, op.topics)] = self.names.index(op.target_group)
        if (self.broker_group < 0).any():  # topics in no group live on the brokers in no group
            self.names.append("(no group)")
            self.broker_group[self.broker_group < 0] = len(groups)
            self.topic_group[self.topic_group < 0] = len(groups)

    def where(self, b: int) -> str:
        return f"broker {int(self.ids[b])}"

    def group_name(self, g: int) -> str | None:
        return self.names[g] if g >= 0 else None

    def at_broker(self, goal: str, b: int, detail: str, where: str | None = None) -> Violation:
        group = self.group_name(int(self.broker_group[b]))
        return Violation(goal, where or self.where(b), detail, group=group)

    def at_partition(self, goal: str, p: int, detail: str) -> Violation:
        t = int(self.model.partition_topic[p])
        where = f"partition {self.model.topics[t]}-{int(self.model.partition_id[p])}"
        return Violation(
            goal, where, detail, group=self.group_name(int(self.topic_group[t])), topic=self.model.topics[t]
        )


def replica_array(layout: Layout, placement: Placement) -> Ints:
    """(P, width) broker indices of each partition's replicas in model order, -1 padded."""
    model = layout.model
    rows = [placement[(model.topic_name(p), int(model.partition_id[p]))] for p in range(model.num_partitions)]
    width = max((len(r) for r in rows), default=1)
    out = np.full((len(rows), max(width, 1)), -1, np.int64)
    for p, row in enumerate(rows):
        out[p, : len(row)] = [layout.index[b] for b in row]
    return out


def partition_loads(layout: Layout, rep: Ints) -> dict[str, tuple[Floats, Floats]]:
    """Per quantity, (leader load, follower load) per partition, as docs/goals.md defines them."""
    m = layout.model
    rf = (rep >= 0).sum(axis=1).astype(float)
    ones, zeros = np.ones(rf.size), np.zeros(rf.size)
    estimated = m.bytes_in / (40 * MIB) + m.bytes_out / (120 * MIB)
    cpu_leader = np.where(np.isfinite(m.cpu_leader), m.cpu_leader, estimated)
    return {
        "replicas": (ones, ones),
        "disk": (m.size_bytes, m.size_bytes),
        # Produce on the leader, replication into each follower: the same on every replica.
        "network-in": (m.bytes_in, m.bytes_in),
        # Consumers and replication to the followers, all on the leader.
        "network-out": (m.bytes_out + (rf - 1) * m.bytes_in, zeros),
        "cpu": (cpu_leader, m.bytes_in / (80 * MIB)),
        "leaders": (ones, zeros),
        "leader-bytes-in": (m.bytes_in, zeros),
    }


def broker_loads(layout: Layout, rep: Ints, parts: npt.NDArray[np.bool_] | None = None) -> dict[str, Floats]:
    """Per quantity, the load of each broker (only partitions in ``parts`` when given)."""
    valid = rep >= 0
    if parts is not None:
        valid = valid & parts[:, None]
    leader_slot = np.zeros(rep.shape, bool)
    leader_slot[:, 0] = True
    p_idx = np.broadcast_to(np.arange(rep.shape[0])[:, None], rep.shape)
    out = {}
    for name, (lead, follow) in partition_loads(layout, rep).items():
        weights = np.where(leader_slot, lead[p_idx], follow[p_idx])
        out[name] = np.bincount(rep[valid], weights=weights[valid], minlength=layout.ids.size)
    return out


def check(
    model: ClusterModel, options: PlannerOptions, placement: Placement, dirs: DirPlacement | None = None
) -> Verdict:
    """Every hard goal of ``options`` and every distribution goal's band, on ``placement`` (and its
    replicas' log directories ``dirs``: by default the snapshot's, see the module's docstring)."""
    layout = Layout(model, options)
    rep = replica_array(layout, placement)
    before = np.where(model.replicas >= 0, model.replicas, -1).astype(np.int64)
    found: list[Violation] = []
    hard = set(options.hard_goals)
    if model.broker_log_dirs:
        dirs = snapshot_dirs(model, placement) if dirs is None else dirs
        if CORDONS in hard:
            found += cordon_violations(layout, placement, dirs)
        if DIR_CAPACITY in hard:
            found += dir_capacity_violations(layout, dirs)
    loads = broker_loads(layout, rep)
    if "rack-awareness" in hard:
        found += rack_violations(layout, rep)
    if "replica-capacity" in hard:
        limit = options.max_replicas_per_broker
        found += [
            layout.at_broker("replica-capacity", b, f"{loads['replicas'][b]:.0f} replicas > {limit}")
            for b in np.flatnonzero(loads["replicas"] > limit)
        ]
    for goal, (quantity, _) in CAPACITY_GOALS.items():
        if goal in hard:
            found += capacity_violations(layout, goal, loads[quantity])
    if "resource-group-confinement" in hard:
        found += confinement_violations(layout, rep)
    if "excluded-brokers" in hard:
        found += exclusion_violations(layout, rep, before)
    if any(layout.racks_of):
        found += leader_rack_violations(layout, rep)
    for goal in options.distribution_goals:
        if goal not in DIRECTORY_GOALS:
            found += band_violations(layout, rep, goal)
    return Verdict(tuple(sorted(found)))


def rack_violations(layout: Layout, rep: Ints) -> list[Violation]:
    """Distinct racks when the group has as many racks as replicas, else at most ceil(rf / racks) per rack."""
    valid = rep >= 0
    racks = np.where(valid, layout.rack[np.maximum(rep, 0)], -1)
    n_racks = int(layout.rack.max()) + 1
    n_groups = len(layout.names)
    # Racks of the brokers that may host, per group; a topic in no band may go to any broker.
    host_racks = np.zeros((n_groups + 1, n_racks), bool)
    for g in range(n_groups):
        host_racks[g, layout.rack[layout.may_host & (layout.broker_group == g)]] = True
    host_racks[n_groups, layout.rack[layout.may_host]] = True
    group = layout.topic_group[layout.model.partition_topic]
    group = np.where(group < 0, n_groups, group)
    usable = host_racks[group]  # (P, racks)
    # An excluded (live) broker keeps its replica, and with it its rack.
    held = valid & layout.active[np.maximum(rep, 0)]
    rows = np.broadcast_to(np.arange(rep.shape[0])[:, None], rep.shape)
    usable[rows[held], racks[held]] = True
    available = np.maximum(usable.sum(axis=1), 1)
    rf = valid.sum(axis=1)
    allowed = -(-rf // available)  # ceil
    # A replica on a dead broker is down already: only live replicas can crowd a rack.
    live = valid & layout.alive[np.maximum(rep, 0)]
    same = (racks[:, :, None] == racks[:, None, :]) & live[:, :, None] & live[:, None, :]
    crowd = same.sum(axis=2).max(axis=1, initial=0)
    return [
        layout.at_partition(
            "rack-awareness",
            p,
            f"replicas {layout.ids[rep[p][rep[p] >= 0]].tolist()}: {crowd[p]} in one rack, "
            f"at most {allowed[p]} ({rf[p]} replicas, {available[p]} racks)",
        )
        for p in np.flatnonzero(crowd > allowed).tolist()
    ]


def capacity_violations(layout: Layout, goal: str, load: Floats) -> list[Violation]:
    """No broker above its limit (``Layout.limit``)."""
    limit = layout.limit[goal]
    over = np.isfinite(limit) & (load > limit * (1 + EPS) + EPS)
    return [
        layout.at_broker(goal, b, f"load {load[b]:.6g} above limit {limit[b]:.6g}")
        for b in np.flatnonzero(over).tolist()
    ]


def snapshot_dirs(model: ClusterModel, placement: Placement) -> DirPlacement:
    """The snapshot's directory of each replica of ``placement`` that its broker held before; None for
    a replica that arrives (a plan names its directory)."""
    out: DirPlacement = {}
    for p in range(model.num_partitions):
        key = (model.topic_name(p), int(model.partition_id[p]))
        held = dict(zip(model.replica_ids(p), model.replica_log_dirs(p), strict=True))
        for b in placement[key]:
            out[(*key, b)] = held.get(b)
    return out


def cordon_violations(layout: Layout, placement: Placement, dirs: DirPlacement) -> list[Violation]:
    """No new replica on a broker whose every directory is cordoned, and none into a cordoned directory
    (docs/goals.md, cordoned-log-dirs)."""
    m, found = layout.model, []
    cordoned_dirs = {(b.id, d.path) for b in m.brokers() for d in b.log_dirs if d.cordoned}
    for p in range(m.num_partitions):
        key = (m.topic_name(p), int(m.partition_id[p]))
        was = dict(zip(m.replica_ids(p), m.replica_log_dirs(p), strict=True))
        for b in placement[key]:
            arrived = b not in was
            if arrived and layout.cordoned[layout.index[b]]:
                found.append(layout.at_partition(CORDONS, p, f"new replica on cordoned broker {b}"))
            elif (b, dirs[(*key, b)]) in cordoned_dirs and (arrived or dirs[(*key, b)] != was[b]):
                found.append(layout.at_partition(CORDONS, p, f"replica into cordoned {b}:{dirs[(*key, b)]}"))
    return found


def dir_capacity_violations(layout: Layout, dirs: DirPlacement) -> list[Violation]:
    """No log directory holding more than capacityThreshold x its volume's totalBytes."""
    m = layout.model
    size = {(m.topic_name(p), int(m.partition_id[p])): float(m.size_bytes[p]) for p in range(m.num_partitions)}
    held: dict[tuple[int, str | None], float] = {}
    for (topic, partition, b), path in dirs.items():
        held[(b, path)] = held.get((b, path), 0.0) + size[(topic, partition)]
    found = []
    for broker in m.brokers():
        for d in broker.log_dirs:
            limit = math.inf if d.total_bytes is None else layout.options.capacity_threshold * d.total_bytes
            if held.get((broker.id, d.path), 0.0) > limit * (1 + EPS) + EPS:
                detail = f"{held[(broker.id, d.path)]:.6g} bytes above {limit:.6g}"
                where = f"broker {broker.id} {d.path}"
                found.append(layout.at_broker(DIR_CAPACITY, layout.index[broker.id], detail, where))
    return found


def confinement_violations(layout: Layout, rep: Ints) -> list[Violation]:
    """Every replica of a ResourceGroup's topics on one of that group's brokers."""
    group = layout.topic_group[layout.model.partition_topic]
    valid = rep >= 0
    outside = valid & (group[:, None] >= 0) & (group[:, None] < layout.named)
    outside &= layout.broker_group[np.maximum(rep, 0)] != group[:, None]
    return [
        layout.at_partition(
            "resource-group-confinement",
            p,
            f"replicas {layout.ids[rep[p][rep[p] >= 0]].tolist()} outside group '{layout.names[group[p]]}'",
        )
        for p in np.flatnonzero(outside.any(axis=1)).tolist()
    ]


def exclusion_violations(layout: Layout, rep: Ints, before: Ints) -> list[Violation]:
    """No new replica on a broker excluded from replicas; no partition led by a broker excluded from
    leadership while another of its live replicas could lead."""
    opts, found = layout.options, []
    valid = rep >= 0
    no_replicas = np.isin(layout.ids, opts.excluded_brokers_for_replicas)
    no_lead = np.isin(layout.ids, opts.excluded_brokers_for_leadership)
    width = max(rep.shape[1], before.shape[1])
    after_p = np.pad(rep, ((0, 0), (0, width - rep.shape[1])), constant_values=-1)
    before_p = np.pad(before, ((0, 0), (0, width - before.shape[1])), constant_values=-1)
    new = valid & ~(rep[:, :, None] == before_p[:, None, :]).any(axis=2)
    landed = new & no_replicas[np.maximum(rep, 0)]
    for p in np.flatnonzero(landed.any(axis=1)).tolist():
        found.append(layout.at_partition("excluded-brokers", p, f"new replica on {after_p[p].tolist()}"))
    if opts.operation.type == "demote-brokers":  # a demoted broker may not lead either
        no_lead = no_lead | np.isin(layout.ids, opts.operation.brokers)
    could_lead = valid & layout.alive[np.maximum(rep, 0)] & ~no_lead[np.maximum(rep, 0)]
    led_badly = valid[:, 0] & no_lead[np.maximum(rep[:, 0], 0)] & could_lead[:, 1:].any(axis=1)
    for p in np.flatnonzero(led_badly).tolist():
        found.append(layout.at_partition("excluded-brokers", p, f"led by excluded {layout.ids[rep[p, 0]]}"))
    return found


def leader_rack_violations(layout: Layout, rep: Ints) -> list[Violation]:
    """A partition with a replica on a broker that may lead in a rack of its group's list is led from
    the first rack of that list holding one (docs/goals.md, preferred-leader-racks)."""
    found = []
    for p in range(rep.shape[0]):
        racks = layout.racks_of[int(layout.topic_group[layout.model.partition_topic[p]])]
        row = [b for b in rep[p].tolist() if b >= 0]
        held = {layout.rack_name[b] for b in row if layout.may_lead[b]}
        want = next((r for r in racks if r in held), None)
        if want is not None and layout.rack_name[row[0]] != want:
            detail = f"led by {layout.ids[row[0]]}, not from {want}"
            found.append(layout.at_partition(PREFERRED_RACKS, p, detail))
    return found


def band(values: Floats, threshold: float, count: bool) -> tuple[float, float]:
    """[avg x (2 - t), avg x t], rounded outwards for counts."""
    avg = float(values.mean()) if values.size else 0.0
    lo, hi = avg * (2 - threshold), avg * threshold
    if count:
        lo, hi = math.floor(lo + EPS), math.ceil(hi - EPS)
    return lo, hi


@dataclass(frozen=True)
class Band:
    """One goal's values over the active brokers of one group (for a per-topic goal, of one topic)."""

    group: str
    topic: str | None
    members: Ints
    values: Floats
    lo: float
    hi: float

    def distance(self) -> Floats:
        """How far each member is outside the band (0 inside, within float noise)."""
        slack = EPS * max(1.0, abs(float(self.values.mean())) if self.values.size else 1.0)
        out: Floats = np.maximum(self.values - self.hi, 0) + np.maximum(self.lo - self.values, 0)
        return np.where(out > slack, out, 0.0)


def bands(layout: Layout, rep: Ints, goal: str) -> list[Band]:
    """A broker goal's band per group, around the group's average over its active brokers; a per-topic
    goal's per topic of a group, rounded outwards. The topic leader goal only weighs topics whose
    partitions' bytes-in vary by a coefficient of at most 0.5 (population deviation / mean)."""
    m, threshold, out = layout.model, layout.options.balance_threshold, []
    if goal in BROKER_GOALS:
        quantity, count = BROKER_GOALS[goal]
        load = broker_loads(layout, rep)[quantity]
        for g, name in enumerate(layout.names):
            for tier in leader_tiers(layout, g) if quantity in LEADER_BORNE else [layout.broker_group == g]:
                members = np.flatnonzero(layout.active & tier)
                out.append(Band(name, None, members, load[members], *band(load[members], threshold, count)))
        return out
    valid = rep >= 0
    if goal == "topic-leader-distribution":
        valid = valid & (np.arange(rep.shape[1]) == 0)[None, :]
    for t, topic in enumerate(m.topics):
        g, parts = int(layout.topic_group[t]), np.flatnonzero(m.partition_topic == t)
        if g < 0 or parts.size == 0:
            continue
        if goal == "topic-leader-distribution" and layout.racks_of[g]:
            continue  # the group's racks decide where its topics' partitions are led
        rates = m.bytes_in[parts]
        if goal == "topic-leader-distribution" and rates.mean() > 0 and rates.std() / rates.mean() > 0.5:
            continue
        members = np.flatnonzero(layout.active & (layout.broker_group == g))
        counts = np.bincount(rep[parts][valid[parts]], minlength=layout.ids.size)[members].astype(float)
        out.append(Band(layout.names[g], topic, members, counts, *band(counts, threshold, True)))
    return out


def leader_tiers(layout: Layout, g: int) -> list[npt.NDArray[np.bool_]]:
    """The brokers of group ``g`` per leader tier under its list (each listed rack one tier, the unlisted
    racks one), the tiers with brokers only; the whole group as one when it has no list."""
    in_group = layout.broker_group == g
    racks = layout.racks_of[g]
    if not racks:
        return [in_group]
    rack = np.array([r if r is not None else "" for r in layout.rack_name], dtype=object)
    tiers = [in_group & (rack == r) for r in racks] + [in_group & ~np.isin(rack, list(racks))]
    return [t for t in tiers if (t & layout.active).any()]


def band_violations(layout: Layout, rep: Ints, goal: str) -> list[Violation]:
    """Every active broker of each group (per topic, for a per-topic goal) within its band."""
    found = []
    for b in bands(layout, rep, goal):
        out = b.distance() > 0
        for broker, value in zip(b.members[out].tolist(), b.values[out].tolist(), strict=True):
            where = f"group '{b.group}' " + (f"topic {b.topic} " if b.topic else "") + layout.where(broker)
            detail = f"{value:.6g} outside [{b.lo:.6g}, {b.hi:.6g}]"
            found.append(Violation(goal, where, detail, group=b.group, topic=b.topic))
    return found


def distances(model: ClusterModel, options: PlannerOptions, placement: Placement) -> dict[str, float]:
    """Per distribution goal, the out-of-band distance summed over every band (0 when it holds): a
    broker goal's relative to its band's average ("relative to the group average", docs/goals.md,
    Balancedness), so that a plan moving a dead broker's load onto the others is judged against the
    averages it leaves; a per-topic goal's in replicas (or leaderships)."""
    layout = Layout(model, options)
    rep = replica_array(layout, placement)
    return {
        goal: sum(float(b.distance().sum()) / _scale(goal, b) for b in bands(layout, rep, goal))
        for goal in options.distribution_goals
        if goal not in DIRECTORY_GOALS
    }


def _scale(goal: str, band: Band) -> float:
    """What a band's distance is measured in: its average for a broker goal, one item for a per-topic one."""
    avg = float(band.values.mean()) if band.values.size else 0.0
    return avg if goal in BROKER_GOALS and avg > 0 else 1.0


def answers_for(options: PlannerOptions, violation: Violation) -> bool:
    """Whether the plan must mend ``violation`` (docs/goals.md, hard goals): everything, except what a
    rebalance limited with ``topics`` or ``groupsToBalance`` may not move and a topic in no group while
    every broker is in one (it "stays where it is", docs/crds.md)."""
    outside_topics = options.topics and violation.topic not in options.topics
    if violation.topic is not None and (violation.group is None or outside_topics):
        return False
    return not options.groups_to_balance or violation.group in options.groups_to_balance


Tolerated = Callable[[str, bool, list[Violation]], bool]


def summary_disagreements(
    verdict: Verdict, options: PlannerOptions, summary: dict[str, Any], tolerated: Tolerated | None = None
) -> list[str]:
    """Where the planner's summary says a goal holds or not and this checker finds otherwise (the
    distribution goals over the groups balanced: all, or ``groupsToBalance``), except those
    ``tolerated(goal, summary says it holds, violations found)`` names (tests/planner/known_gaps.py)."""
    claims = {goal: bool(ok) for goal, ok in summary["hardGoals"].items()}
    claims.update(
        {goal: bool(stats["holdsAfter"]) for goal, stats in summary["goals"].items() if goal not in DIRECTORY_GOALS}
    )
    found = Verdict(verdict.hard().violations + verdict.bands(options.groups_to_balance).violations)
    out = []
    for goal, says in claims.items():
        where = [v for v in found.violations if v.goal == goal]
        if says != (not where) and not (tolerated and tolerated(goal, says, where)):
            out.append(f"{goal}: summary says {'holds' if says else 'broken'}, checker finds {where or 'none'}")
    return out

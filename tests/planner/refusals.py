"""An independent judge of a planning refusal: each refusal docs/goals.md describes, recognised by its
shape, and its claim recomputed from the snapshot and the policy (which group lacks what, which
broker is over which limit, which partition has no rack left). A refusal of another shape, or one whose
numbers or brokers do not hold, is a defect: in particular "the plan would still break hard goal ...",
which is the planner's own final check catching a plan it made, never a fact about the cluster.

What is not recomputed: that a packing really does not exist (the capacity repair's "broker N would
carry ... and no broker of group G can take the excess"); only its broker, limit and group are checked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
from independent import CAPACITY_GOALS, Layout, broker_loads, partition_loads, replica_array
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.cluster import LogDir
from kafka_balancer.model.proposal import Proposal
from kafka_balancer.planner import PlannerOptions, PlanningError, plan

NUMBER = r"[-+0-9.e]+"
IDS = r"\[[-0-9, ]*\]"
QUANTITY_GOAL = {quantity: goal for goal, (quantity, _) in CAPACITY_GOALS.items()}


def parse_ids(text: str) -> set[int]:
    """``[0, 2-6, 9]`` (the planner's way of naming brokers) as a set of ids."""
    out: set[int] = set()
    for item in filter(None, (s.strip() for s in text.strip("[]").split(","))):
        first, _, last = item.partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return out


def _close(printed: str, value: float) -> bool:
    return math.isclose(float(printed), value, rel_tol=2e-5, abs_tol=1e-6)


class Judge:
    def __init__(self, model: ClusterModel, options: PlannerOptions) -> None:
        self.model, self.options = model, options
        self.layout = Layout(model, options)
        self.current = {(p.topic, p.partition): p.replicas for p in model.partitions()}
        self.rep = replica_array(self.layout, self.current)

    def group_index(self, name: str) -> int:
        return self.layout.names.index(name)

    def ids(self, mask: np.ndarray) -> set[int]:
        return set(self.layout.ids[mask].tolist())

    def hosts(self, g: int) -> np.ndarray:
        return self.layout.may_host & (self.layout.broker_group == g)

    def target_rf(self) -> np.ndarray:
        """Each partition's replication factor after the operation."""
        rf = (self.rep >= 0).sum(axis=1)
        op = self.options.operation
        if op.type == "change-replication-factor" and op.replication_factor is not None:
            rf = np.where(
                np.isin(np.array(self.model.topics)[self.model.partition_topic], op.topics), op.replication_factor, rf
            )
        return rf

    def kept_rep(self) -> np.ndarray:
        """The replicas that may stay where they are: ``move-topics`` takes its topics' replicas off every
        broker outside its destination (its target brokers, else its target group's brokers), so a broker
        there that takes no new replicas keeps none of them."""
        op, lay = self.options.operation, self.layout
        if op.type != "move-topics":
            return self.rep
        moving = np.isin(np.array(self.model.topics)[self.model.partition_topic], op.topics)
        if op.target_brokers:
            destination = np.isin(lay.ids, op.target_brokers)
        else:
            destination = lay.broker_group == self.group_index(str(op.target_group))
        leaving = moving[:, None] & (self.rep >= 0) & ~destination[np.maximum(self.rep, 0)]
        return np.where(leaving, -1, self.rep)

    # Each refusal's shape: (reason predicate, pattern, check of the claim).
    def group_total(self, reason: str, m: re.Match[str]) -> str | None:
        g, quantity = self.group_index(m["group"]), m["what"]
        if QUANTITY_GOAL.get(quantity) != reason:
            return f"reason {reason} names quantity {quantity}"
        lay, goal = self.layout, reason
        parts = lay.topic_group[self.model.partition_topic] == g
        rf = self.target_rf().astype(float)
        lead, follow = partition_loads(lay, self.rep)[quantity]
        if quantity == "network-out":
            lead = self.model.bytes_out + (rf - 1) * self.model.bytes_in
        total = float((lead[parts] + follow[parts] * (rf[parts] - 1)).sum())
        limit = lay.limit[goal]
        hosts = self.hosts(g)
        kept = lay.active & ~lay.may_host & (lay.broker_group == g)
        load = broker_loads(lay, self.kept_rep())[quantity]
        room = float(limit[hosts].sum() + np.minimum(limit[kept], load[kept]).sum())
        if parse_ids(m["ids"]) != self.ids(hosts):
            return f"brokers {m['ids']} are not group {m['group']}'s hosts {sorted(self.ids(hosts))}"
        if not (_close(m["total"], total) and _close(m["room"], room) and total > room):
            return f"recomputed {total:.6g} needed, {room:.6g} room"
        return None

    def group_replicas(self, reason: str, m: re.Match[str]) -> str | None:
        lay, g = self.layout, self.group_index(m["group"])
        per = self.options.max_replicas_per_broker
        hosts = self.hosts(g)
        kept = lay.active & ~lay.may_host & (lay.broker_group == g)
        held = broker_loads(lay, self.kept_rep())["replicas"]
        total = float(self.target_rf()[lay.topic_group[self.model.partition_topic] == g].sum())
        room = float(per * hosts.sum() + np.minimum(per, held[kept]).sum())
        if reason != "replica-capacity" or parse_ids(m["ids"]) != self.ids(hosts) or int(m["per"]) != per:
            return f"group {m['group']}'s hosts are {sorted(self.ids(hosts))}, maxReplicasPerBroker {per}"
        if not (_close(m["total"], total) and _close(m["room"], room) and total > room):
            return f"recomputed {total:.0f} replicas, room for {room:.0f}"
        return None

    def _loads(self, quantity: str) -> tuple[np.ndarray, np.ndarray]:
        """Each partition's (leader, follower) load after the operation (its replication factor)."""
        lead, follow = partition_loads(self.layout, self.rep)[quantity]
        if quantity == "network-out":
            lead = self.model.bytes_out + (self.target_rf() - 1) * self.model.bytes_in
        return lead, follow

    def largest_item(self, reason: str, m: re.Match[str]) -> str | None:
        lay, quantity, key = self.layout, m["what"], (m["topic"], int(m["partition"]))
        if QUANTITY_GOAL.get(quantity) != reason or key not in self.current:
            return f"reason {reason} names quantity {quantity} of {key}"
        p = self.model.partition_index(*key)
        lead, follow = self._loads(quantity)
        brokers = self.hosts(self.group_index(m["group"]))
        if m["where"] == "its leader":
            need = float(lead[p])
            brokers = brokers & ~np.isin(lay.ids, self.options.excluded_brokers_for_leadership)
        else:
            need = float(follow[p]) if self.target_rf()[p] > 1 else 0.0
        best = float(lay.limit[reason][brokers].max())
        if not (_close(m["need"], need) and _close(m["best"], best) and need > best):
            return f"recomputed {need:.6g} needed on {m['where']}, at most {best:.6g} allowed"
        return None

    def rack_share(self, reason: str, m: re.Match[str]) -> str | None:
        lay, quantity = self.layout, m["what"]
        if {**QUANTITY_GOAL, "replicas": "replica-capacity"}.get(quantity) != reason:
            return f"reason {reason} names quantity {quantity}"
        g = self.group_index(m["group"])
        hosts = self.hosts(g)
        racks = np.unique(lay.rack[hosts])
        members = hosts & (lay.rack == lay.rack[lay.index[min(parse_ids(m["ids"]))]])
        if racks.size != int(m["racks"]) or parse_ids(m["ids"]) != self.ids(members):
            return f"group {m['group']} has {racks.size} racks; that rack's hosts are {sorted(self.ids(members))}"
        parts = lay.topic_group[self.model.partition_topic] == g
        rf = self.target_rf()[parts]
        least = np.maximum(rf - (racks.size - 1) * np.ceil(rf / racks.size), 0)
        need = float((least * self._loads(quantity)[1][parts]).sum())
        if quantity == "replicas":
            room = float(self.options.max_replicas_per_broker * members.sum())
        else:
            room = float(lay.limit[reason][members].sum())
        if not (_close(m["need"], need) and _close(m["room"], room) and need > room):
            return f"recomputed {need:.6g} needed in the rack, {room:.6g} room"
        return None

    def packing(self, reason: str, m: re.Match[str]) -> str | None:
        lay = self.layout
        b = lay.index.get(int(m["broker"]))
        if b is None or QUANTITY_GOAL.get(m["what"]) != reason:
            return f"unknown broker or quantity for {reason}"
        limit = lay.limit[reason][b]
        group = lay.group_name(int(lay.broker_group[b]))
        if not _close(m["limit"], limit) or float(m["load"]) <= limit:
            return f"broker {m['broker']}'s limit is {limit:.6g}"
        if m["group"] != group and not (group is None and m["group"] == "cluster"):
            return f"broker {m['broker']} is in group {group}, not {m['group']}"
        return None

    def too_few_hosts(self, reason: str, m: re.Match[str]) -> str | None:
        g = self.group_index(m["group"])
        hosts = self.hosts(g)
        if reason != "replica-capacity" or parse_ids(m["ids"]) != self.ids(hosts) or int(m["n"]) != hosts.sum():
            return f"group {m['group']}'s hosts are {sorted(self.ids(hosts))}"
        lay = self.layout
        parts = lay.topic_group[self.model.partition_topic] == g
        kept = lay.active & ~lay.may_host & (lay.broker_group == g)
        if m["kept"] is not None and parse_ids(m["kept"]) != self.ids(kept):
            return f"group {m['group']}'s live brokers that take no new replicas are {sorted(self.ids(kept))}"
        # What stays needs no host: replicas on those brokers, and without resource-group-confinement
        # on any live broker outside the group (nothing moves them off).
        stays = (
            kept
            if "resource-group-confinement" in self.options.hard_goals
            else kept | (lay.active & (lay.broker_group != g))
        )
        on_kept = (stays[np.maximum(self.rep, 0)] & (self.rep >= 0)).sum(axis=1)
        short = self.target_rf()[parts] - on_kept[parts]
        if short.size == 0 or short.max() <= hosts.sum() or int(m["rf"]) not in self.target_rf()[parts]:
            return f"group {m['group']} needs at most {short.max(initial=0)} hosts"
        return None

    def too_few_targets(self, reason: str, m: re.Match[str]) -> str | None:
        op, lay = self.options.operation, self.layout
        if m["group"] is not None:
            targets = lay.broker_group == self.group_index(m["group"])
        else:
            targets = np.isin(lay.ids, op.target_brokers)
        hosts = targets & lay.may_host
        topics = np.isin(np.array(self.model.topics)[self.model.partition_topic], op.topics)
        rf = int(self.target_rf()[topics].max(initial=0))
        if reason != "replica-capacity" or parse_ids(m["ids"]) != self.ids(hosts) or int(m["rf"]) != rf:
            return f"targets that may host are {sorted(self.ids(hosts))}, rf {rf}"
        return None if hosts.sum() < rf else f"{hosts.sum()} hosts suffice for rf {rf}"

    def rf_beyond_hosts(self, reason: str, m: re.Match[str]) -> str | None:
        hosts = self.hosts(self.group_index(m["group"]))
        if reason != "replica-capacity" or parse_ids(m["ids"]) != self.ids(hosts):
            return f"group {m['group']}'s hosts are {sorted(self.ids(hosts))}"
        wanted = self.options.operation.replication_factor
        return None if int(m["rf"]) == wanted and hosts.sum() < wanted else f"{hosts.sum()} hosts, rf {wanted}"

    def no_rack_left(self, reason: str, m: re.Match[str]) -> str | None:
        lay, key = self.layout, (m["topic"], int(m["partition"]))
        if reason != "rack-awareness" or key not in self.current:
            return "not a rack-awareness refusal of a known partition"
        replicas = [int(x) for x in m["replicas"].split(",")]
        if replicas != list(self.current[key]):
            return f"{key} holds {self.current[key]}, not {replicas}"
        # The claim: the replicas that must move (off a dead or removed broker, out of another group,
        # out of a crowded rack) cannot all land on the named brokers with every rack within its share.
        g = int(lay.topic_group[self.model.topics.index(key[0])])
        hosts = lay.may_host & ((lay.broker_group == g) if g >= 0 else True)
        confined = g >= 0 and "resource-group-confinement" in self.options.hard_goals
        op = self.options.operation
        # move-topics onto named brokers: its topics' replicas elsewhere must move onto them.
        onto = set(op.target_brokers) if op.type == "move-topics" and key[0] in op.topics else None
        kept = [
            lay.index[b]
            for b in replicas
            if lay.active[lay.index[b]]
            and not (confined and lay.broker_group[lay.index[b]] != g)
            and (onto is None or b in onto)
        ]
        racks = set(lay.rack[hosts].tolist()) | {int(lay.rack[b]) for b in kept}
        rf = int(self.target_rf()[self.model.partition_index(*key)])
        allowed = math.ceil(rf / max(len(racks), 1))
        crowd = {r: min(sum(lay.rack[b] == r for b in kept), allowed) for r in racks}
        need = rf - sum(crowd.values())
        named = [lay.index[d] for d in parse_ids(m["ids"]) if d in lay.index and d not in replicas]
        free = {
            r: min(allowed - crowd[r], sum(bool(lay.may_host[d]) and lay.rack[d] == r for d in named)) for r in racks
        }
        if sum(free.values()) >= need:
            return f"{need} of {key}'s replicas must move; the named brokers take {sum(free.values())} spread"
        return None

    def outside_group(self, reason: str, m: re.Match[str]) -> str | None:
        g = self.group_index(m["group"])
        members = self.ids(self.layout.broker_group == g)
        named = parse_ids(m["ids"])
        outside = set(self.options.operation.target_brokers) - members
        return None if reason == "invalid-options" and named and named <= outside else f"outside: {outside}"

    def nowhere_to_go(self, reason: str, m: re.Match[str]) -> str | None:
        hosts = self.hosts(self.group_index(m["group"]))
        if m["targets"]:
            hosts &= np.isin(self.layout.ids, self.options.operation.target_brokers)
        return None if reason == "excluded-brokers" and not hosts.any() else f"{sorted(self.ids(hosts))} may host"

    def _dir(self, broker: str, path: str) -> LogDir | None:
        """The directory named, None when the cluster has no such one."""
        b = self.layout.index.get(int(broker))
        named = [d for d in self.model.log_dirs(b) if d.path == path] if b is not None else []
        return named[0] if named else None

    def dir_over_limit(self, reason: str, m: re.Match[str]) -> str | None:
        found = self._dir(m["broker"], m["path"])
        if reason != "log-dir-capacity" or found is None:
            return f"{m['broker']} {m['path']} is not a directory of the cluster"
        size = found.total_bytes
        limit = math.inf if size is None else self.options.capacity_threshold * size
        printed = float(m["limit"])
        if not math.isclose(printed, limit, rel_tol=5e-4) or float(m["held"]) <= printed:
            return f"the directory's limit is {limit:.6g}"
        return None

    def no_open_dir(self, reason: str, m: re.Match[str]) -> str | None:
        b = self.layout.index.get(int(m["broker"]))
        if reason != "log-dir-capacity" or b is None:
            return f"unknown broker {m['broker']}"
        op = self.options.operation
        removed = set(op.log_dirs) if op.type == "remove-disks" else set()
        closed = [
            (d.cordoned and self.layout.cordons) or (int(m["broker"]), d.path) in removed
            for d in self.model.log_dirs(b)
        ]
        return None if closed and all(closed) else f"broker {m['broker']} has an open directory"

    def dir_kept(self, reason: str, m: re.Match[str]) -> str | None:
        op = self.options.operation
        named = (int(m["broker"]), m["path"])
        ok = reason == "log-dir-capacity" and op.type == "remove-disks" and named in set(op.log_dirs)
        return None if ok and float(m["held"]) > 0 else f"{named} is not a directory being removed"


SHAPES: tuple[tuple[str, Callable[[Judge, str, re.Match[str]], str | None]], ...] = (
    (
        rf"group '(?P<group>[^']+)' needs (?P<total>{NUMBER}) (?P<what>\S+) but \d+% of its brokers' capacity "
        rf"(?P<ids>{IDS}) is (?P<room>{NUMBER}); add ",
        Judge.group_total,
    ),
    (
        rf"group '(?P<group>[^']+)' holds (?P<total>\d+) replicas but its \d+ brokers (?P<ids>{IDS}) allow "
        rf"(?P<room>\d+) \(maxReplicasPerBroker (?P<per>\d+)\); add ",
        Judge.group_replicas,
    ),
    (
        rf"partition (?P<topic>.+)-(?P<partition>\d+) needs (?P<need>{NUMBER}) (?P<what>\S+) on "
        rf"(?P<where>each replica|its leader) but no broker of group '(?P<group>[^']+)' that may (host|lead) it "
        rf"allows more than (?P<best>{NUMBER})",
        Judge.largest_item,
    ),
    (
        rf"rack '[^']+' of group '(?P<group>[^']+)' must hold at least (?P<need>{NUMBER}) (?P<what>\S+) "
        rf"\(rack-awareness keeps \d+ replica\(s\) of a partition in each of its (?P<racks>\d+) racks\) but its "
        rf"brokers (?P<ids>{IDS}) allow (?P<room>{NUMBER})",
        Judge.rack_share,
    ),
    (
        rf"broker (?P<broker>\d+) would carry (?P<load>{NUMBER}) (?P<what>\S+) above its limit (?P<limit>{NUMBER}) "
        rf"and no broker of group '(?P<group>[^']+)' \((?P<ids>{IDS})\) can take the excess",
        Judge.packing,
    ),
    (
        rf"group '(?P<group>[^']+)' has partitions with replication factor (?P<rf>\d+) but only (?P<n>\d+) brokers "
        rf"can host replicas \((?P<ids>{IDS})(?:; (?P<kept>{IDS}) take no new ones \([^)]*\))?\)",
        Judge.too_few_hosts,
    ),
    (
        rf"topics \[[^\]]*\] have replication factor (?P<rf>\d+) but (the target brokers|group '(?P<group>[^']+)') "
        rf"offer only \d+ brokers that can host replicas \((?P<ids>{IDS})\)",
        Judge.too_few_targets,
    ),
    (
        rf"field 'operation.replicationFactor' (?P<rf>\d+) needs \d+ brokers that can host replicas in resource "
        rf"group '(?P<group>[^']+)' of topics \[[^\]]*\], which has \d+ \((?P<ids>{IDS})\)",
        Judge.rf_beyond_hosts,
    ),
    (
        rf"partition (?P<topic>.+)-(?P<partition>\d+) \(replicas \[(?P<replicas>[-0-9, ]*)\]\) has no broker among "
        rf"(?P<ids>{IDS}) that keeps its racks spread",
        Judge.no_rack_left,
    ),
    (
        rf"field 'operation.targetBrokers' names brokers (?P<ids>{IDS}) outside resource group '(?P<group>[^']+)'",
        Judge.outside_group,
    ),
    (
        rf"broker (?P<broker>\d+) (?P<path>\S+) would hold (?P<held>{NUMBER}) bytes of replicas, above its limit "
        rf"(?P<limit>{NUMBER}) \(capacityThreshold of its volume's",
        Judge.dir_over_limit,
    ),
    (
        r"broker (?P<broker>\d+) has replicas to place but every log directory of it is cordoned or being removed",
        Judge.no_open_dir,
    ),
    (
        rf"broker (?P<broker>\d+) (?P<path>\S+) would still hold (?P<held>{NUMBER}) bytes: its partitions may not move",
        Judge.dir_kept,
    ),
    (
        r"group '(?P<group>[^']+)' has \d+ replicas to re-place but none of "
        r"(?P<targets>the target brokers)?.* can host them",
        Judge.nowhere_to_go,
    ),
)


def refusal_problem(model: ClusterModel, options: PlannerOptions, error: PlanningError) -> str | None:
    """None when ``error`` is a documented refusal whose claim holds on this cluster, else what is wrong."""
    judge = Judge(model, options)
    for pattern, verify in SHAPES:
        match = re.match(pattern, error.details)
        if match:
            problem = verify(judge, error.reason, match)
            return None if problem is None else f"{error.reason}: {error.details} -- but {problem}"
    return f"not a documented refusal: {error.reason}: {error.details}"


def planned_or_refused(model: ClusterModel, options: PlannerOptions) -> Proposal | None:
    """The plan, or None after checking that the refusal is one the docs describe, true of this cluster."""
    try:
        return plan(model, options)
    except PlanningError as error:
        refused = error
    assert refusal_problem(model, options, refused) is None, refusal_problem(model, options, refused)
    return None

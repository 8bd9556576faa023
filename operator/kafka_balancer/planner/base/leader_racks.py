"""Preferred leader racks (``preferredLeaderRacks`` of the policy's goals or of a ResourceGroup): which
rack each partition is to be led from, and which tier each broker's leaderships count in.

Every group has the list in force for it: its ResourceGroup's own ``preferredLeaderRacks``, else the
policy's ``goals.preferredLeaderRacks`` (so is the list of the topics in no group, and of the whole
cluster without groups). Under a list, each broker has a *leader tier*: the position of its rack in the
list, or one tier after the longest list for every unlisted rack together. A partition is to be led
from the most preferred tier, under its group's list, holding one of its replicas on a broker that may
lead (its *preferred tier*); a partition with no replica in a listed rack may be led from any of its
replicas. The goals leadership carries are balanced among the brokers of one tier of a group (tiers
under the group's own list; docs/goals.md, "Preferred leader racks"), since a rack that leads
everything carries more of them than one that leads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, ClusterModel
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.options import PlannerOptions, PlanningError

UNLISTED: Final = "(unlisted racks)"


@dataclass(frozen=True)
class LeaderTiers:
    """``tier[g, b]``: broker ``b``'s leader tier under group ``g``'s list (``listed`` when its rack is
    not on it, or the group has no list); ``racks[g]``: group ``g``'s list in force (empty: none)."""

    tier: Ints
    racks: tuple[tuple[str, ...], ...]

    @property
    def listed(self) -> int:
        """The length of the longest list: tiers below it are preferred racks, this one the unlisted."""
        return max(len(r) for r in self.racks)

    @property
    def prefers(self) -> BoolArray:
        """(G,) groups with a list in force."""
        return np.array([bool(r) for r in self.racks], dtype=np.bool_)

    def of_replicas(self, rep: Ints, group: Ints) -> Ints:
        """(n, width) the tier of each replica of ``rep`` (rows of partitions of groups ``group``)."""
        out: Ints = self.tier[group[:, None], np.maximum(rep, 0)]
        return out

    def own(self, broker_group: Ints) -> Ints:
        """(B,) each broker's tier under its own group's list (the tier its leaderships count in)."""
        out: Ints = self.tier[broker_group, np.arange(broker_group.size)]
        return out

    def names(self, g: int) -> list[str]:
        """The names of group ``g``'s tiers, by tier: its racks, then UNLISTED last (tiers past the end
        of a shorter list hold no broker: their name is empty)."""
        racks = self.racks[g]
        return [*racks, *[""] * (self.listed - len(racks)), UNLISTED]


def leader_tiers(model: ClusterModel, options: PlannerOptions, groups: list[str]) -> LeaderTiers | None:
    """The leader tiers of each of ``groups`` (the resolved groups' names: the options' resource groups,
    then the topics in no group or the whole cluster), or None when no list is in force.

    A rack no broker has is refused (a typo would silently prefer nothing), unless a broker is down:
    Kafka does not tell a down broker's rack, so a rack whose every broker is down (a zone outage)
    is not known either, and then it is simply skipped for the next listed rack."""
    own = {g.name: options.leader_racks_of(g) for g in options.resource_groups}
    racks = tuple(own.get(name) or options.leader_racks for name in groups)
    if not any(racks):
        return None
    known = sorted({r for r in model.broker_racks if r})
    unseen = any(r is None and not alive for r, alive in zip(model.broker_racks, model.broker_alive, strict=True))
    fields = [("goals.preferredLeaderRacks", options.leader_racks)]
    fields += [(f"resourceGroups[{name}].preferredLeaderRacks", listed) for name, listed in own.items()]
    for field_name, listed in fields:
        for i, rack in enumerate(listed):
            if rack not in known and not unseen:
                raise PlanningError(
                    "invalid-options",
                    f"field '{field_name}[{i}]' names rack {rack!r}, which no broker of the cluster "
                    f"has (racks: {', '.join(known) or 'none: no broker sets broker.rack'})",
                )
    longest = max(len(r) for r in racks)
    tier = np.full((len(groups), model.num_brokers), longest, dtype=np.int32)
    for g, listed in enumerate(racks):
        position = {r: i for i, r in enumerate(listed)}
        tier[g] = [position.get(r or "", longest) for r in model.broker_racks]
    return LeaderTiers(tier, racks)


def preferred_tier(tiers: LeaderTiers, rep: Ints, group: Ints, may_lead: BoolArray) -> Ints:
    """(n,) the preferred tier of each partition of ``rep`` (of groups ``group``): the lowest tier of a
    replica on a broker that may lead (``may_lead``, per broker); ``tiers.listed`` when none is in a
    listed rack."""
    safe = np.maximum(rep, 0)
    eligible = (rep != NO_BROKER) & may_lead[safe]
    listed = tiers.listed
    out: Ints = np.where(eligible, tiers.of_replicas(rep, group), listed).min(axis=1, initial=listed)
    return out


def misled(tiers: LeaderTiers, rep: Ints, group: Ints, may_lead: BoolArray) -> BoolArray:
    """(n,) partitions with a replica in a listed rack of their group's list (that may lead) led from
    another tier."""
    want = preferred_tier(tiers, rep, group, may_lead)
    leader = rep[:, :1]
    led_from = tiers.of_replicas(leader, group)[:, 0]
    out: BoolArray = (want < tiers.listed) & (leader[:, 0] != NO_BROKER) & (led_from != want)
    return out

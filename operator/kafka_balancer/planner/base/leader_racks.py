"""Preferred leader racks (``goals.preferredLeaderRacks``): which rack each broker's leaderships count in.

With racks listed, most preferred first, each broker has a *leader tier*: the position of its rack
in the list, or one tier after the last for every unlisted rack together. A partition is to be led
from the most preferred tier holding one of its replicas on a broker that may lead (its *preferred
tier*); a partition with no replica in a listed rack may be led from any of its replicas. The goals
leadership carries are balanced among the brokers of one tier of a group (docs/goals.md, "Preferred
leader racks"), since a rack that leads everything carries more of them than one that leads nothing.
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
    """Each broker's leader tier (``tier[b]``), and the tiers' names (the listed racks, then UNLISTED)."""

    tier: Ints
    names: tuple[str, ...]

    @property
    def listed(self) -> int:
        """Number of listed racks: tiers below it are preferred racks."""
        return len(self.names) - 1


def leader_tiers(model: ClusterModel, options: PlannerOptions) -> LeaderTiers | None:
    """The brokers' leader tiers, or None without preferred racks.

    A rack no broker has is refused (a typo would silently prefer nothing), unless a broker is down:
    Kafka does not tell a down broker's rack, so a rack whose every broker is down (a zone outage)
    is not known either, and then it is simply skipped for the next listed rack."""
    racks = options.leader_racks
    if not racks:
        return None
    known = sorted({r for r in model.broker_racks if r})
    unseen = any(r is None and not alive for r, alive in zip(model.broker_racks, model.broker_alive, strict=True))
    for i, rack in enumerate(racks):
        if rack not in known and not unseen:
            raise PlanningError(
                "invalid-options",
                f"field 'goals.preferredLeaderRacks[{i}]' names rack {rack!r}, which no broker of the cluster "
                f"has (racks: {', '.join(known) or 'none: no broker sets broker.rack'})",
            )
    position = {r: i for i, r in enumerate(racks)}
    tier = np.array([position.get(r or "", len(racks)) for r in model.broker_racks], dtype=np.int32)
    return LeaderTiers(tier, (*racks, UNLISTED))


def preferred_tier(tiers: LeaderTiers, rep: Ints, may_lead: BoolArray) -> Ints:
    """(P,) each partition's preferred tier: the lowest tier of a replica on a broker that may lead
    (``may_lead``, per broker); ``tiers.listed`` when none is in a listed rack."""
    safe = np.maximum(rep, 0)
    eligible = (rep != NO_BROKER) & may_lead[safe]
    out: Ints = np.where(eligible, tiers.tier[safe], tiers.listed).min(axis=1, initial=tiers.listed)
    return out


def misled(tiers: LeaderTiers, rep: Ints, may_lead: BoolArray) -> BoolArray:
    """(P,) partitions with a replica in a listed rack (that may lead) led from another tier."""
    want = preferred_tier(tiers, rep, may_lead)
    leader = rep[:, 0]
    out: BoolArray = (want < tiers.listed) & (leader != NO_BROKER) & (tiers.tier[np.maximum(leader, 0)] != want)
    return out

"""Balance figures, churn and a recommendation for one consumer group under each built-in assignor.

Churn is counted the way an operator feels it: partitions whose owner changes when one member leaves
(or one joins), starting from the assignment that assignor itself would have produced. ``revoked``
adds the protocol's cost: eager assignors (range, roundrobin, sticky) make every member give up all
its partitions during a rebalance, the cooperative one only the partitions that move.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka_balancer.consumers.eager import range_assign, roundrobin_assign
from kafka_balancer.consumers.group import ASSIGNOR_NAMES, Assignment, GroupSpec, Member, TopicPartition
from kafka_balancer.consumers.sticky import cooperative_sticky_assign, sticky_assign
from kafka_balancer.model.errors import ModelError

DEFAULT_NEW_MEMBER = "new-member"
# Each simulated leaver costs one run of every assignor: a 1,000-member group over 10,000 partitions
# would take minutes. Above this many members, leavers are an evenly spread sample in group order.
DEFAULT_MAX_LEAVERS = 50
COOPERATIVE = frozenset({"cooperative-sticky"})
# The work of a simulation, in partition-rounds: every assignor runs once per simulated leaver, plus
# once for the group as it is and once with a newcomer, and one run costs about 3-5 us per partition
# and about 5 times that per member (measured over 1,000 partitions with 100 to 20,000 members and
# over 100 members with 1,000 to 100,000 partitions). 60 million is about 2 to 5 minutes of CPU: the
# largest group MAX_GROUP_PARTITIONS allows at the default leavers fits, and so do 230,000 members at
# the default leavers, or 3,300 members all simulated leaving (--max-leavers 0) over 1,000 partitions.
MEMBER_WORK = 5
MAX_SIMULATION_WORK = 60_000_000


def _cooperative_final(group: GroupSpec) -> Assignment:
    return cooperative_sticky_assign(group)[1]


_ASSIGNORS: dict[str, Callable[[GroupSpec], Assignment]] = {
    "range": range_assign,
    "roundrobin": roundrobin_assign,
    "sticky": sticky_assign,
    "cooperative-sticky": _cooperative_final,
}


def assign(name: str, group: GroupSpec) -> Assignment:
    """The assignment ``name`` gives ``group`` (for cooperative-sticky: after its follow-up rebalance),
    with members in the group's order and each member's partitions sorted."""
    try:
        assignor = _ASSIGNORS[name]
    except KeyError:
        raise ValueError(f"assignor must be one of {', '.join(ASSIGNOR_NAMES)}, got {name!r}") from None
    result = assignor(group)
    return {m.id: sorted(result.get(m.id, [])) for m in group.members}


def owners(assignment: Mapping[str, list[TopicPartition]]) -> dict[TopicPartition, str]:
    return {tp: member for member, tps in assignment.items() for tp in tps}


def moved(before: Mapping[str, list[TopicPartition]], after: Mapping[str, list[TopicPartition]]) -> int:
    """Partitions owned in ``before`` whose owner differs in ``after`` (a partition nobody owned before
    costs nothing to hand out, so it does not count)."""
    old, new = owners(before), owners(after)
    return sum(1 for tp, member in old.items() if new.get(tp) != member)


@dataclass(frozen=True)
class Balance:
    """How evenly one assignment spreads partitions (and, when known, lag and message rate)."""

    partitions: dict[str, int]
    max_partitions: int
    min_partitions: int
    imbalance_ratio: float  # max / mean partitions per member; 1.0 is perfect
    lag: dict[str, float] | None = None
    lag_imbalance_ratio: float | None = None
    rate: dict[str, float] | None = None
    rate_imbalance_ratio: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "partitionsPerMember": self.partitions,
            "maxPartitions": self.max_partitions,
            "minPartitions": self.min_partitions,
            "imbalanceRatio": round(self.imbalance_ratio, 4),
        }
        if self.lag is not None:
            out["lagPerMember"] = self.lag
            out["lagImbalanceRatio"] = _round(self.lag_imbalance_ratio)
        if self.rate is not None:
            out["ratePerMember"] = self.rate
            out["rateImbalanceRatio"] = _round(self.rate_imbalance_ratio)
        return out


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def ratio(loads: list[float]) -> float:
    """max / mean over members; 1.0 for an empty or all-zero group (nothing to balance)."""
    if not loads:
        return 1.0
    mean = sum(loads) / len(loads)
    return max(loads) / mean if mean > 0 else 1.0


def balance(group: GroupSpec, assignment: Mapping[str, list[TopicPartition]]) -> Balance:
    counts = {m.id: len(assignment.get(m.id, [])) for m in group.members}
    values = list(counts.values()) or [0]
    lag = rate = None
    if group.lag:
        lag = {m: float(sum(group.lag.get(tp, 0.0) for tp in assignment.get(m, []))) for m in counts}
    if group.rate:
        rate = {m: float(sum(group.rate.get(tp, 0.0) for tp in assignment.get(m, []))) for m in counts}
    return Balance(
        partitions=counts,
        max_partitions=max(values),
        min_partitions=min(values),
        imbalance_ratio=ratio([float(v) for v in counts.values()]),
        lag=lag,
        lag_imbalance_ratio=None if lag is None else ratio(list(lag.values())),
        rate=rate,
        rate_imbalance_ratio=None if rate is None else ratio(list(rate.values())),
    )


def _revoked(name: str, before: Assignment, changed: int) -> int:
    """Partitions whose consumption pauses during the rebalance (eager: all of them)."""
    return changed if name in COOPERATIVE else sum(map(len, before.values()))


def leavers(group: GroupSpec, max_leavers: int | None) -> list[Member]:
    """The members whose departure is simulated: all of them, or ``max_leavers`` evenly spread ones
    (first and last included) so that the figures stay representative of the whole group."""
    members = list(group.members)
    if max_leavers is None or max_leavers <= 0 or len(members) <= max_leavers:
        return members
    if max_leavers == 1:
        return members[:1]
    step = (len(members) - 1) / (max_leavers - 1)
    return [members[round(i * step)] for i in range(max_leavers)]


def check_work(group: GroupSpec, max_leavers: int | None) -> None:
    """Refuse a simulation above MAX_SIMULATION_WORK before any assignor runs (docs/consumers.md, "Limits")."""
    partitions = sum(group.topics.values())
    simulated = len(leavers(group, max_leavers))
    work = (simulated + 2) * (partitions + MEMBER_WORK * len(group.members))
    if work > MAX_SIMULATION_WORK:
        raise ModelError(
            f"group: field 'members' has {len(group.members):,} members; {simulated:,} of them leaving over "
            f"{partitions:,} partitions is {work:,} partition-rounds of work, above the {MAX_SIMULATION_WORK:,} "
            'a simulation may take (docs/consumers.md, "Limits"); simulate fewer leavers (--max-leavers)'
        )


def leave_churn(
    name: str, group: GroupSpec, base: Assignment, leaving: list[Member] | None = None
) -> dict[str, dict[str, int]]:
    """For each leaver (default: every member): partitions moved if it alone left, those beyond its
    own, and those paused."""
    out: dict[str, dict[str, int]] = {}
    settled = group.with_owned(base)
    for member in group.members if leaving is None else leaving:
        rest = settled.without(member.id)
        after = assign(name, rest) if rest.members else {}
        changed = moved(base, after)
        out[member.id] = {
            "moved": changed,
            "movedBeyondLeaver": changed - len(base.get(member.id, [])),
            "revoked": _revoked(name, base, changed),
        }
    return out


def common_subscription(group: GroupSpec) -> tuple[str, ...]:
    """The subscription most members share (ties: the earliest member's) for a simulated newcomer."""
    counts = Counter(tuple(sorted(m.topics)) for m in group.members)
    best = max(counts.values())
    return next(tuple(sorted(m.topics)) for m in group.members if counts[tuple(sorted(m.topics))] == best)


def join_churn(name: str, group: GroupSpec, base: Assignment, newcomer: Member) -> dict[str, int]:
    after = assign(name, group.with_owned(base).joined(newcomer))
    changed = moved(base, after)
    return {"moved": changed, "revoked": _revoked(name, base, changed)}


def _switch_bounces(current: str | None, target: str) -> int:
    """Rolling restarts to change assignor: none if unchanged; two from an eager assignor to
    cooperative-sticky (Kafka's upgrade path lists both, then drops the old); otherwise one."""
    if current == target:
        return 0
    if target in COOPERATIVE and current not in COOPERATIVE:
        return 2
    return 1


def simulate(
    group: GroupSpec, *, new_member: str = DEFAULT_NEW_MEMBER, max_leavers: int | None = DEFAULT_MAX_LEAVERS
) -> dict[str, Any]:
    """Every assignor's assignment, balance and churn for ``group``, plus a recommendation.

    ``max_leavers`` bounds the members whose departure is simulated (None or 0: every member). A group
    whose simulation would take more than MAX_SIMULATION_WORK raises ModelError (check_work)."""
    if any(m.id == new_member for m in group.members):
        raise ValueError(f"new member id {new_member!r} is already a member; pick another")
    check_work(group, max_leavers)
    newcomer = Member(new_member, common_subscription(group))
    leaving = leavers(group, max_leavers)
    current = {m.id: sorted(m.owned) for m in group.members}
    results: dict[str, Any] = {}
    scores: dict[str, tuple[float, ...]] = {}
    for position, name in enumerate(ASSIGNOR_NAMES):
        base = assign(name, group)
        figures = balance(group, base)
        leaves = leave_churn(name, group, base, leaving)
        join = join_churn(name, group, base, newcomer)
        mean_beyond = sum(v["movedBeyondLeaver"] for v in leaves.values()) / max(1, len(leaves))
        mean_revoked = sum(v["revoked"] for v in leaves.values()) / max(1, len(leaves))
        results[name] = {
            "assignment": _nested(base),
            "balance": figures.to_dict(),
            "churnIfMemberLeaves": leaves,
            "churnIfMemberJoins": {"member": new_member, "topics": list(newcomer.topics), **join},
        }
        if group.has_current():
            results[name]["movesFromCurrent"] = moved(current, base)
        weighted = figures.lag_imbalance_ratio or figures.rate_imbalance_ratio or figures.imbalance_ratio
        # Partition balance first, then churn, then the cheaper protocol. Lag or rate balance only
        # breaks the remaining ties: no built-in assignor looks at them, so differences there are
        # accidents of today's offsets, not properties of the assignor.
        scores[name] = (
            round(figures.imbalance_ratio, 6),
            mean_beyond,
            mean_revoked,
            round(weighted, 6),
            float(-position),
        )
    best = min(ASSIGNOR_NAMES, key=lambda n: scores[n])
    recommendation: dict[str, Any] = {
        "assignor": best,
        "imbalanceRatio": results[best]["balance"]["imbalanceRatio"],
        "reason": _reason(best, results),
        "switch": {
            "from": group.assignor,
            "rollingBounces": _switch_bounces(group.assignor, best),
            "partitionsMoved": results[best].get("movesFromCurrent"),
        },
    }
    out: dict[str, Any] = {
        "assignors": results,
        "recommendation": recommendation,
        "leaversSimulated": {"members": len(group.members), "simulated": len(leaving)},
    }
    if group.has_current():
        out["current"] = {"assignor": group.assignor, "assignment": _nested(current),
                          "balance": balance(group, current).to_dict()}  # fmt: skip
    return out


def _reason(best: str, results: Mapping[str, Any]) -> str:
    ratio_best = results[best]["balance"]["imbalanceRatio"]
    leaves = results[best]["churnIfMemberLeaves"].values()
    beyond = max((v["movedBeyondLeaver"] for v in leaves), default=0)
    extra = "only the leaving member's partitions move" if beyond == 0 else f"up to {beyond} extra partitions move"
    return f"imbalance ratio {ratio_best:.2f} (max/mean partitions per member); when a member leaves {extra}"


def _nested(assignment: Mapping[str, list[TopicPartition]]) -> dict[str, dict[str, list[int]]]:
    out: dict[str, dict[str, list[int]]] = {}
    for member, tps in assignment.items():
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(tps):
            topics.setdefault(topic, []).append(partition)
        out[member] = topics
    return out

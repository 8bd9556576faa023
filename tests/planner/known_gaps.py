"""Where the independent checker (independent.py) and the planner disagree today, each named with its
reproducer in test_planner_independent_checker.py (a strict xfail: it fails loudly once the planner
is fixed, and this exception must then go). Nothing else is tolerated.

1. ``rack-awareness`` of a partition holding a replica on a broker excluded from new replicas, in a
   rack no other broker of its group that may host has: docs/goals.md says such a partition "needs
   hosts only for its other replicas", so that rack is one of its racks and the other replicas must
   spread over the rest; the planner counts only the racks of brokers that may host, so it neither
   mends nor reports e.g. [r0, r2(excluded), r0] while r1 has room.
2. ``rack-awareness`` of a topic in no group while every broker is in one: it "stays where it is"
   (docs/crds.md), so the plan need not mend it, but the summary says the goal holds although its
   replicas crowd a rack (docs/goals.md: what is left as it is is "reported in the summary's hardGoals").
3. (Fixed: the topics ``move-topics`` moves into ``targetGroup`` are judged in that group.)
4. The per-topic goals while a topic has replicas outside its group (a demotion or a limited rebalance
   cannot move them): the planner's average divides all of the topic's replicas by its group's
   brokers, the checker only those on them; docs/goals.md ("its replicas on each broker of its group")
   does not say which. Ambiguous, not a defect.
5. ``rack-awareness`` where a demotion leaves replicas on a dead broker: the planner counts them in
   their rack, the checker only live replicas (a dead one is down already). Ambiguous, not a defect.
"""

from __future__ import annotations

from independent import TOPIC_GOALS, Layout, Tolerated, Violation
from kafka_balancer.model import ClusterModel
from kafka_balancer.planner import PlannerOptions


def held_rack_partitions(model: ClusterModel, options: PlannerOptions) -> set[str]:
    """Partitions (as "partition t-p") with a replica on a live excluded broker whose rack no broker of
    the group that may host has (gap 1)."""
    lay = Layout(model, options)
    out = set()
    for p in model.partitions():
        g = int(lay.topic_group[model.topics.index(p.topic)])
        hosts = lay.may_host & ((lay.broker_group == g) if g >= 0 else True)
        racks = set(lay.rack[hosts].tolist())
        for b in p.replicas:
            i = lay.index[b]
            if lay.active[i] and not lay.may_host[i] and int(lay.rack[i]) not in racks:
                out.add(f"partition {p.topic}-{p.partition}")
    return out


def known_rack_gap(model: ClusterModel, options: PlannerOptions, violation: Violation) -> bool:
    """Gap 1: a rack-awareness violation the planner does not see."""
    return violation.goal == "rack-awareness" and violation.where in held_rack_partitions(model, options)


def known_gaps(model: ClusterModel, options: PlannerOptions, confined: bool = True) -> Tolerated:
    """The disagreements with the summary listed above, on this cluster (``confined``: every topic's
    replicas on its group's brokers after the plan)."""
    held = held_rack_partitions(model, options)
    dead = {b.id for b in model.brokers() if not b.alive}
    demoting_with_dead_replicas = options.operation.type == "demote-brokers" and any(
        set(p.replicas) & dead for p in model.partitions()
    )

    def tolerated(goal: str, summary_holds: bool, found: list[Violation]) -> bool:
        if goal == "rack-awareness" and summary_holds:
            return all(v.where in held or v.group is None for v in found)  # gaps 1 and 2
        if goal == "rack-awareness":
            return demoting_with_dead_replicas  # gap 5
        if goal in TOPIC_GOALS:
            return not summary_holds and not found and not confined  # gap 4
        return False

    return tolerated

"""The situations between reading the cluster and a proposal: the cluster read, the load analysed and
the imbalance measured, a new proposal made for a reason, no proposal yet."""

from __future__ import annotations

from kafka_balancer.controller import summaries
from kafka_balancer.controller.decision.actions import Event
from kafka_balancer.controller.decision.draft import Draft
from kafka_balancer.controller.decision.seen import ClusterSeen, NotAnalysed, Problem
from kafka_balancer.controller.status import PROPOSAL_READY, set_condition
from kafka_balancer.controller.triggers import Observed, Recorded, why_propose


def reading_cluster(nxt: Draft) -> bool:
    """Read the cluster: its id, live brokers, durability audit and consumer groups."""
    seen = nxt.seen
    if seen.cluster is None:
        return nxt.ask("cluster")
    if isinstance(seen.cluster, Problem):
        return nxt.stalled(seen.cluster)
    status = nxt.status
    status.durability, status.consumer_groups = seen.cluster.durability, seen.cluster.consumer_groups
    status.observed_cluster = seen.cluster.cluster
    return False


def analysing(nxt: Draft) -> bool:
    """The model to plan on: the live placement with the measured load (policies with a sample
    store). While the first usable analysis is pending the policy is Analysing; once a proposal
    exists, a later analysis hiccup does not hold back its approval: the live model stands in."""
    seen = nxt.seen
    if seen.analysis is None:
        return nxt.ask("analysis")
    if isinstance(seen.analysis, Problem):
        return nxt.stalled(seen.analysis)
    if isinstance(seen.analysis, NotAnalysed):
        if nxt.status.proposal is None:
            nxt.status.state = "Analysing"
            nxt.status.conditions = set_condition(
                nxt.status.conditions,
                PROPOSAL_READY,
                False,
                reason=seen.analysis.reason,
                message=seen.analysis.message,
                generation=seen.generation,
            )
            return True
        nxt.model = "live"
    else:
        nxt.model = seen.analysis
    if not seen.measured:
        return nxt.ask("imbalance", model=nxt.model)
    nxt.status.imbalance = seen.imbalance
    return False


def proposing(nxt: Draft) -> bool:
    """A new proposal, only for a reason (first one, planning inputs changed, schedule, imbalance,
    brokers changed): otherwise the id a person approved would keep changing under them."""
    spec, before, seen = nxt.spec, nxt.before, nxt.seen
    status = nxt.status
    proposal = status.proposal
    executed = summaries.executed_ids(status)
    pending = proposal is not None and proposal.moves + proposal.leader_changes > 0 and proposal.id not in executed
    assert isinstance(seen.cluster, ClusterSeen)  # reading_cluster ran before
    previous = tuple(before.observed_cluster.brokers) if before.observed_cluster else None
    reason = why_propose(
        spec,
        Observed(seen.now, seen.fingerprint, seen.cluster.alive, status.imbalance),
        Recorded(
            fingerprint=proposal.fingerprint if proposal else None,
            brokers=previous,
            last_schedule=summaries.parse_time(status.last_schedule_time),
            executing=False,
            pending=pending,
        ),
    )
    if reason is None:
        return False
    if reason == "Schedule":
        status.last_schedule_time = seen.now.replace(microsecond=0).isoformat().replace("+00:00", "Z")
    if seen.proposal is None:
        return nxt.ask("proposal", trigger=reason, model=nxt.model)
    if isinstance(seen.proposal, Problem):
        return nxt.stalled(seen.proposal)
    status.proposal = seen.proposal
    nxt.actions.append(Event("Normal", "ProposalCreated", summaries.describe(seen.proposal)))
    return False


def pending(nxt: Draft) -> bool:
    """No proposal yet."""
    if nxt.status.proposal is not None:
        return False
    nxt.status.state = "Pending"
    return True

"""The planner's answers the decision asks for: how balanced the cluster is now, and a proposal (stored
in ConfigMaps for review).

Both plan on the model the decision names ("measured" or "live", gathered first: controller.gathering)
with the spec as planner options, made once per reconciliation. Blocking (planner, Kubernetes client).
"""

from __future__ import annotations

import logging
from typing import Literal

from kafka_balancer.controller import summaries
from kafka_balancer.controller.decision.actions import Ask
from kafka_balancer.controller.gathering import Gathered
from kafka_balancer.controller.kubeapi import owner_reference
from kafka_balancer.controller.proposal_store import ConfigMapNotOurs, Owner, ProposalStore, ProposalTooLarge
from kafka_balancer.controller.services import Planner
from kafka_balancer.controller.status import ProposalStatus, now_iso
from kafka_balancer.controller.validation import Stall
from kafka_balancer.metrics import Metrics
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.summary import ProposalSummary
from kafka_balancer.planner import PlannerOptions
from kafka_balancer.planner.policy import options_from_policy

log = logging.getLogger(__name__)


def imbalance(
    gathered: Gathered, planner: Planner, metrics: Metrics, which: Literal["measured", "live"]
) -> float | None:
    """Measure the balance now (metrics, the onImbalance trigger); the watched resource's worst ratio."""
    spec, key = gathered.spec, gathered.metric_key
    model = _model(gathered, which)
    resource = spec.triggers.on_imbalance.resource if spec.triggers.on_imbalance else "disk"
    try:
        balance = planner.evaluate(model, spec, gathered.groups, options=_planner_options(gathered, model))
    except Exception as err:
        # A bad number here must not stop the policy: the proposal step reports planning errors.
        log.warning("imbalance of %s/%s not computed: %s", key.namespace, key.policy, err)
        return None
    metrics.set_balance(key, balance.groups, balance.balancedness)
    metrics.set_threshold(key, resource, summaries.threshold(spec))
    return round(balance.worst(resource), 4)


def propose(
    gathered: Gathered, planner: Planner, metrics: Metrics, proposals: ProposalStore, ask: Ask
) -> ProposalStatus:
    """Plan a proposal on the model ``ask`` names, store it for review, and report it as status."""
    spec, key = gathered.spec, gathered.metric_key
    model = _model(gathered, ask.model)
    with metrics.planning_seconds.labels(key.policy, key.namespace, key.cluster).time():
        try:
            proposal = planner.propose(model, spec, gathered.groups, options=_planner_options(gathered, model))
        except Exception as err:
            reason = getattr(err, "reason", None)
            if reason is None:
                raise
            raise Stall("UnsatisfiableGoal", str(err)) from None
    summary = ProposalSummary.of(proposal.summary)
    try:
        config_map = proposals.save(key.namespace, Owner(owner_reference(gathered.body)), proposal)
    except ProposalTooLarge as err:
        raise Stall("ProposalTooLarge", str(err)) from None
    except ConfigMapNotOurs as err:
        raise Stall("ConfigMapConflict", str(err)) from None
    moves, bytes_to_move = summary.moves, int(summary.bytes_to_move)
    metrics.set_proposal(key, moves=moves, bytes_to_move=bytes_to_move, leader_changes=len(proposal.leader_changes))
    return ProposalStatus(
        id=proposal.id,
        operation=spec.operation.type,
        moves=moves,
        partitions=len(proposal.plan),
        bytes_to_move=bytes_to_move,
        leader_changes=len(proposal.leader_changes),
        balancedness_before=summary.balancedness_before,
        balancedness_after=summary.balancedness_after,
        groups=summaries.group_rows(summary, spec),
        goals_violated=summary.goals_violated,
        goals_worsened_by_hard_goals=summary.goals_worsened_by_hard_goals,
        time_budget_reached=None if summary.time_budget_reached is None else summary.time_budget_reached.stage,
        config_map=config_map,
        created_at=now_iso(),
        trigger=ask.trigger,
        fingerprint=gathered.fingerprint,
    )


def _model(gathered: Gathered, which: Literal["measured", "live"]) -> ClusterModel:
    model = gathered.measured if which == "measured" and gathered.measured is not None else gathered.live
    assert model is not None  # the cluster was read first
    return model


def _planner_options(gathered: Gathered, model: ClusterModel) -> PlannerOptions:
    """The spec and its groups as planner options: made once per reconciliation, and so is the error
    making them raises (reported where it is used: not measured, or a Stall when proposing)."""
    if gathered.options is None:
        try:
            gathered.options = options_from_policy(gathered.spec, gathered.groups, model)
        except Exception as err:
            gathered.options = err
    if isinstance(gathered.options, Exception):
        raise gathered.options
    return gathered.options

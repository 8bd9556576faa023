"""controller.proposing: a spec the planner cannot take as options (here a group it names is not given)
is tried once a reconciliation, and its error is reported at each use: the imbalance is not measured
(the policy goes on), the proposal is Stalled with the planner's words."""

from __future__ import annotations

from typing import Any, cast

import pytest
from kafka_balancer.controller import proposing
from kafka_balancer.controller.decision.actions import Ask
from kafka_balancer.controller.gathering import Gathered
from kafka_balancer.controller.proposal_store import ProposalStore
from kafka_balancer.controller.services import ModulePlanner
from kafka_balancer.controller.validation import Stall
from kafka_balancer.metrics import Metrics, PolicyKey
from kafka_balancer.model.policy.parsing import parse_balance_policy_spec
from prometheus_client import CollectorRegistry

from .test_e2e import skewed_model


def test_planner_options_that_cannot_be_made_are_tried_once_and_stall_the_proposal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[Any] = []

    def options_from_policy(*args: Any) -> Any:
        made.append(args)
        return real(*args)

    real = proposing.options_from_policy
    monkeypatch.setattr(proposing, "options_from_policy", options_from_policy)
    spec = parse_balance_policy_spec({"cluster": {"bootstrapServers": "k:9092"}, "resourceGroups": ["east"]})
    body = {"metadata": {"namespace": "kafka", "name": "main", "uid": "u1"}}
    key = PolicyKey("main", "kafka", "c1")
    gathered = Gathered(("kafka", "main"), 1, body, spec, [], None, key, "f1", (), live=skewed_model())
    planner, metrics = ModulePlanner(), Metrics(CollectorRegistry())
    unused = cast(ProposalStore, object())  # nothing is stored: planning fails first

    assert proposing.imbalance(gathered, planner, metrics, "live") is None
    with pytest.raises(Stall) as stalled:
        proposing.propose(gathered, planner, metrics, unused, Ask("proposal", trigger="FirstProposal", model="live"))
    assert stalled.value.reason == "UnsatisfiableGoal"
    assert "field 'spec.resourceGroups' names ResourceGroup 'east', which was not given" in stalled.value.message
    assert len(made) == 1

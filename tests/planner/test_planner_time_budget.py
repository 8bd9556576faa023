"""goals.maxPlanningSeconds: the planner stops searching for balance when the budget is spent and
returns the placement reached, which holds every hard goal; the summary names the stage it cut short
and lists the goals still out of band. A capacity repair is never cut into a plan: it fails, saying so."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import pytest
from checks import placement_after
from independent import check, summary_disagreements
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.model.summary import ProposalSummary
from kafka_balancer.planner import OperationOptions, PlannerOptions, PlanningError, plan
from kafka_balancer.planner.base.budget import Budget
from kafka_balancer.planner.base.measures import goal_violation
from kafka_balancer.planner.base.resource_groups import resolve_groups
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.finishing import rebuild
from kafka_balancer.planner.pipeline.distribution import FINISHING
from kafka_balancer.planner.pipeline.stages import STAGES
from kafka_balancer.planner.tuning import TUNING

from bench.synthetic import skewed_cluster, with_disk_capacity


def _add_brokers() -> tuple[ClusterModel, PlannerOptions]:
    model = skewed_cluster(brokers=12, new_brokers=3, partitions=3000, seed=5, skew=2.0)
    return model, PlannerOptions(operation=OperationOptions("add-brokers", brokers=(9, 10, 11)))


def test_a_spent_budget_returns_the_hard_goals_placement_and_says_what_it_cut() -> None:
    model, options = _add_brokers()
    full = plan(model, options)
    assert "timeBudgetReached" not in full.summary
    assert full.summary["goalsViolated"] == []
    cut = plan(model, dataclasses.replace(options, max_planning_seconds=1e-9))
    summary = ProposalSummary.of(cut.summary)
    assert summary.time_budget_reached is not None
    assert summary.time_budget_reached.stage == "distribution goals"
    assert summary.time_budget_reached.seconds == 1e-9
    # Nothing to evacuate and no broker above a limit: the hard goals' stages moved nothing.
    assert summary.moves == 0
    verdict = check(model, options, placement_after(model, cut.plan))
    assert verdict.hard().violations == ()
    # The goals out of band are listed, and the independent checker agrees with the summary.
    assert "replica-distribution" in summary.goals_violated
    assert summary_disagreements(verdict, options, cut.summary) == []


def test_a_budget_spent_midway_keeps_the_moves_made_and_every_hard_goal(monkeypatch: pytest.MonkeyPatch) -> None:
    # A clock that ticks once per look at it: the same plan cuts at the same place on any machine.
    looks = [0]

    def ticking(seconds: float) -> Budget:
        def clock() -> float:
            looks[0] += 1
            return float(looks[0])

        return Budget(seconds, clock=clock)

    monkeypatch.setattr("kafka_balancer.planner.pipeline.Budget", ticking)
    model, options = _add_brokers()
    full = plan(model, dataclasses.replace(options, max_planning_seconds=3600))
    assert "timeBudgetReached" not in full.summary, "more looks at the clock than the test allows"
    cut = plan(model, dataclasses.replace(options, max_planning_seconds=looks[0] / 2))
    bounded = {stage.name for stage in (*STAGES, *FINISHING) if stage.bounded}
    assert cut.summary["timeBudgetReached"]["stage"] in bounded
    assert cut.summary["moves"] > 0
    verdict = check(model, options, placement_after(model, cut.plan))
    assert verdict.hard().violations == ()
    assert summary_disagreements(verdict, options, cut.summary) == []


def _counts_only_exchanges_even() -> ClusterModel:
    """Broker 0 holds 20 replicas of 1 byte, broker 1 two of 10 bytes at its disk limit (20.5): no
    one-way move evens the replica counts (each adds bytes to broker 1), one big replica handed back
    for ten small ones does (docs/goals.md, "Count exchanges")."""
    builder = ClusterBuilder()
    for b in range(2):
        builder.add_broker(b, rack=f"rack-{b}", disk_bytes=20.5 / 0.8)  # capacityThreshold 0.8
    sizes = [(f"small-{k % 4}", 0, 1.0) for k in range(20)] + [(f"big-{k}", 1, 10.0) for k in range(2)]
    for p, (topic, broker, size) in enumerate(sizes):
        builder.add_partition(topic, p, [broker], size_bytes=size, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    return builder.build()


def _clock_jumps_at(stage: str, share: float, *, tick: float = 0.0) -> Callable[[float], Budget]:
    """A budget whose clock stands still until the pipeline names ``stage``, then reads ``share`` of
    it, and ``tick`` seconds more at each later look."""

    def budget(seconds: float) -> Budget:
        made: list[Budget] = []
        looks = [0]

        def clock() -> float:
            if not made or made[0].stage != stage:
                return 0.0
            looks[0] += 1
            return share * seconds + tick * (looks[0] - 1)

        made.append(Budget(seconds, clock=clock))
        return made[0]

    return budget


def test_a_search_cut_short_still_evens_the_replica_counts_in_the_budgets_reserve(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model, options = _counts_only_exchanges_even(), PlannerOptions(max_planning_seconds=100)
    assert plan(model, options).summary["goalsViolated"] == []  # by the count exchanges' pass
    # The search's share of the budget is spent as that pass would start, and the round running
    # overran the whole budget: the replica-count goal's turn with the exchanges still gets the
    # reserve's length (5 s of 100) and evens the counts.
    monkeypatch.setattr("kafka_balancer.planner.pipeline.Budget", _clock_jumps_at("count exchanges", 1.2))
    cut = plan(model, options)
    assert cut.summary["timeBudgetReached"] == {"seconds": 100, "stage": "count exchanges"}
    assert "replica-distribution" not in cut.summary["goalsViolated"]
    assert cut.summary["moves"] == 11  # ten small replicas one way, one big one back
    verdict = check(model, options, placement_after(model, cut.plan))
    assert verdict.hard().violations == ()
    assert summary_disagreements(verdict, options, cut.summary) == []
    # A turn that outlasts the reserve stops at its next round: here before its first.
    monkeypatch.setattr("kafka_balancer.planner.pipeline.Budget", _clock_jumps_at("count exchanges", 0.97, tick=10))
    spent = plan(model, options)
    assert spent.summary["moves"] == 0
    assert "replica-distribution" in spent.summary["goalsViolated"]


def test_a_capacity_repair_the_budget_stops_fails_and_says_the_budget_stopped_it() -> None:
    model = with_disk_capacity(skewed_cluster(brokers=9, new_brokers=3, partitions=900, seed=2, skew=2.0), 1.3)
    options = PlannerOptions(operation=OperationOptions("add-brokers", brokers=(6, 7, 8)))
    plan(model, options)  # the repair succeeds given time
    with pytest.raises(PlanningError, match=r"goals.maxPlanningSeconds, 1e-09 s") as failed:
        plan(model, dataclasses.replace(options, max_planning_seconds=1e-9))
    assert failed.value.reason == "disk-capacity"


@pytest.mark.parametrize("seconds", [0.0, -1.0, math.nan, math.inf, 3601.0])
def test_a_budget_outside_its_range_is_refused_naming_the_field(seconds: float) -> None:
    with pytest.raises(PlanningError, match=r"goals.maxPlanningSeconds.*must be in \(0, 3600\]"):
        PlannerOptions(max_planning_seconds=seconds)


def test_the_budget_names_the_first_stage_it_cut() -> None:
    ticks = iter(range(100))
    budget = Budget(3.0, clock=lambda: float(next(ticks)))
    budget.stage = "a"
    assert not budget.spent()
    budget.stage = "b"
    assert not budget.spent()
    budget.stage = "c"
    assert budget.spent()
    budget.stage = "d"
    assert budget.spent()
    assert budget.cut_short == "c"


def test_the_seconds_left_end_where_the_search_stops_and_the_reserve_gets_its_own() -> None:
    now = [0.0]
    budget = Budget(20.0, clock=lambda: now[0])
    now[0] = 5.0
    assert budget.seconds_left() == pytest.approx(20.0 * (1 - TUNING.reserve_share) - 5.0)
    now[0] = 19.5
    assert budget.seconds_left() == 0.0
    assert budget.spent()
    with budget.reserve():  # the reserve's length from entering it, past the budget's end here
        assert budget.seconds_left() == pytest.approx(20.0 * TUNING.reserve_share)
    assert budget.seconds_left() == 0.0
    assert Budget().seconds_left() == math.inf


def test_a_refused_replan_still_leaves_the_replica_counts_their_turn_with_the_exchanges() -> None:
    # Broker 0 holds 20 one-byte replicas, broker 1 two of 10 bytes: only an exchange evens the
    # counts. The pass of every goal with the exchanges is refused here (this replan moves a big
    # replica onto broker 0, further from the band); the replica-count goal's own turn with them,
    # every other goal guarded, must still run although the budget is far from spent.
    model = _counts_only_exchanges_even()
    options = PlannerOptions(max_planning_seconds=100)
    st = State(model, options, resolve_groups(model, options))
    big = model.partition_index("big-0", 20)

    def worse(state: State) -> None:
        state.move(np.array([big]), np.array([0]), np.array([0], dtype=np.int32))

    assert goal_violation(st, "replica-distribution") > 0
    assert rebuild.exchange_pass(st, worse)
    assert goal_violation(st, "replica-distribution") == 0
    assert np.bincount(st.rep[:, 0], minlength=2).tolist() == [11, 11]

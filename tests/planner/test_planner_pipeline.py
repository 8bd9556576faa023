"""plan() is a list of named stages; each applies to some operations, and a trace records them."""

from __future__ import annotations

from kafka_balancer.planner import OperationOptions, PlannerOptions, Trace, plan
from kafka_balancer.planner.pipeline.distribution import FINISHING
from kafka_balancer.planner.pipeline.stages import STAGES

from bench.synthetic import skewed_cluster


def _stages(trace: Trace, depth: int = 0) -> list[str]:
    return [s.name for s in trace.steps if s.depth == depth]


def test_each_operation_runs_the_stages_that_apply_to_it() -> None:
    model = skewed_cluster(brokers=6, new_brokers=0, partitions=120, seed=3)
    rebalance, demote = Trace(), Trace()
    plan(model, PlannerOptions(), trace=rebalance)
    plan(model, PlannerOptions(operation=OperationOptions("demote-brokers", brokers=(0,))), trace=demote)
    # No log directories in this snapshot: no directory stage (tests/planner/test_planner_log_dirs.py).
    every = [stage.name for stage in STAGES if stage.name != "log directories"]
    racks = {f"leadership {way} preferred racks" for way in ("to", "back to")} | {
        f"leadership to preferred racks {when}" for when in ("again", "before the counts")
    }
    assert _stages(rebalance) == [s for s in every if s != "capacity by leadership" and s not in racks]
    # A demotion moves no data: no evacuation, no data-bound capacity repair, no distribution goals.
    assert _stages(demote) == ["operation", "leadership off excluded brokers", "capacity by leadership"]
    # Preferred leader racks: leadership onto them before the distribution goals and again at the end.
    preferring = Trace()
    plan(model, PlannerOptions(preferred_leader_racks=(model.broker_racks[0] or "",)), trace=preferring)
    assert _stages(preferring) == [s for s in every if s != "capacity by leadership"]
    finishing = [stage.name for stage in FINISHING if stage.name not in racks]
    assert _stages(rebalance, depth=1)[-len(finishing) :] == finishing


def test_a_trace_records_the_plan_without_changing_it() -> None:
    model = skewed_cluster(brokers=9, new_brokers=3, partitions=300, seed=11)
    options = PlannerOptions(operation=OperationOptions("add-brokers", brokers=(6, 7, 8)))
    trace = Trace()
    traced = plan(model, options, trace=trace)
    assert traced.id == plan(model, options).id
    top = [s for s in trace.steps if s.depth == 0]
    assert sum(s.moves_added for s in top) == traced.summary["moves"]
    assert top[-1].goals_out == tuple(traced.summary["goalsViolated"])

"""Strongly skewed clusters of many shapes at the headline sizes: every goal held or a true refusal, and
the distribution of plan time and bytes over the draws.

    .venv/bin/python -m bench.strong_skew_shapes --replicas 325000 --draws 6 --seed 1
    .venv/bin/python -m bench.strong_skew_shapes --replicas 1300000 --draws 3 --seed 2 --default-refusal

Each draw is a cluster of ``bench.strong_skew``'s generator with a shape drawn at random: placement
broker first or rack first (``bench.strong_skew.PLACEMENTS``), 100 to 20,000 topics (log-uniform,
Zipf-like partition counts), a topic's traffic tied to its partition count or independent of it
(log-normal per topic), network and disk each filled to 20-90% of what capacityThreshold allows,
3 to 9 racks, a share of rf 3 partitions from 0 to 1 (the rest rf 2), 96 to 270 brokers of which
3-8% new and empty, the busiest broker at 6 to 11 times the average; as many partitions as make
``--replicas`` replicas. The policy is the default one (time budget 60 s, counted in this process's
CPU seconds unless ``--wall-budget``: the machine is shared), adding the new brokers, with
``maxReplicasPerBroker`` 4,000, or the average over 0.60-0.85 where 4,000 is above 0.85 of the average
(1.3M replicas on 270 brokers are 4,815 a broker). ``--default-refusal`` also plans such draws at the
default 4,000 and times the refusal.

Every plan is judged by the planner tests' independent checker (tests/planner/independent.py: every
hard goal, every distribution goal's band, computed from the docs, not the planner's measures) and
every refusal by their refusal judge (tests/planner/refusals.py: a documented refusal whose claim
holds on the cluster). Prints one JSON line per draw: its shape, the plan's wall and CPU seconds, the
load average, bytes over the goals bound (``bench.synthetic.goals_lower_bound``), the hard goals
broken and distribution goals out of band as the checker finds them, where the planner's summary
disagrees; then min / median / max of plan wall and CPU seconds and of bytes/bound, and the draws
that failed (a goal broken or out of band, a false refusal).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, Final

import numpy as np
from kafka_balancer.model import ClusterModel
from kafka_balancer.planner import OperationOptions, PlannerOptions, PlanningError, pipeline, plan
from kafka_balancer.planner.base.budget import Budget

from bench.strong_skew import TRAFFIC, Shape, strong_skew_cluster
from bench.synthetic import goals_lower_bound

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "planner"))
# The planner tests' judges, from their folder (as the tests import them).
from checks import placement_after
from independent import check, summary_disagreements
from refusals import refusal_problem

DEFAULT_MAX_REPLICAS: Final = 4000
DRAWN_PLACEMENTS: Final = ("broker-first", "rack-first")


@dataclasses.dataclass(frozen=True)
class Draw:
    """One cluster shape of the draws and its replica limit."""

    shape: Shape
    max_replicas: int


def draw(rng: np.random.Generator, replicas: int) -> Draw:
    """One shape (see the module's docstring); the draws are made in a fixed order: a seed gives the
    same clusters."""
    brokers, racks = int(rng.integers(96, 271)), int(rng.integers(3, 10))
    rf3 = float(rng.uniform(0.0, 1.0))
    shape = Shape(
        brokers=brokers,
        racks=racks,
        new_brokers=max(1, round(brokers * float(rng.uniform(0.03, 0.08)))),
        topics=round(10 ** rng.uniform(2.0, math.log10(20_000))),
        partitions=round(replicas / (2.0 + rf3)),
        busiest=float(rng.uniform(6.0, 11.0)),
        network_fill=float(rng.uniform(0.2, 0.9)),
        disk_fill=float(rng.uniform(0.2, 0.9)),
        seed=int(rng.integers(0, 2**30)),
        placement=str(rng.choice(DRAWN_PLACEMENTS)),
        traffic=str(rng.choice(TRAFFIC)),
        rf3_share=rf3,
    )
    per_broker, cap = replicas / brokers, float(rng.uniform(0.60, 0.85))
    limit = DEFAULT_MAX_REPLICAS if per_broker <= 0.85 * DEFAULT_MAX_REPLICAS else math.ceil(per_broker / cap)
    return Draw(shape, limit)


def options_for(d: Draw, max_replicas: int) -> PlannerOptions:
    """The default policy with ``max_replicas``, the draw's new brokers added."""
    added = tuple(range(d.shape.brokers - d.shape.new_brokers, d.shape.brokers))
    return PlannerOptions(
        operation=OperationOptions("add-brokers", brokers=added), max_replicas_per_broker=max_replicas
    )


def shape_fields(d: Draw) -> dict[str, Any]:
    s = d.shape
    return {
        "brokers": s.brokers,
        "racks": s.racks,
        "new": s.new_brokers,
        "topics": s.topics,
        "partitions": s.partitions,
        "rf3": round(s.rf3_share, 2),
        "placement": s.placement,
        "traffic": s.traffic,
        "netFill": round(s.network_fill, 2),
        "diskFill": round(s.disk_fill, 2),
        "busiest": round(s.busiest, 1),
        "maxReplicas": d.max_replicas,
    }


def judged(model: ClusterModel, options: PlannerOptions) -> dict[str, Any]:
    """Plan ``model``; the plan's seconds and the judges' findings (see the module's docstring)."""
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        proposal = plan(model, options)
    except PlanningError as error:
        out: dict[str, Any] = {"wallSeconds": round(time.perf_counter() - wall, 2)}
        out |= {"cpuSeconds": round(time.process_time() - cpu, 2), "refused": f"{error.reason}: {error.details}"}
        out["falseRefusal"] = refusal_problem(model, options, error)
        return out
    out = {"wallSeconds": round(time.perf_counter() - wall, 2), "cpuSeconds": round(time.process_time() - cpu, 2)}
    summary, checked = proposal.summary, time.perf_counter()
    verdict = check(model, options, placement_after(model, proposal.plan))
    out["checkSeconds"] = round(time.perf_counter() - checked, 1)
    out.update(
        proposalId=proposal.id,
        moves=summary["moves"],
        bytesOverGoalsBound=round(summary["bytesToMove"] / max(goals_lower_bound(model), 1.0), 3),
        timeBudgetReached=bool(summary.get("timeBudgetReached")),
        hardGoalsBroken=sorted(verdict.hard().broken()),
        goalsOutOfBand=sorted(verdict.bands().broken()),
        summaryDisagrees=summary_disagreements(verdict, options, summary),
    )
    return out


def run(d: Draw, *, default_refusal: bool) -> dict[str, Any]:
    """One draw planned and judged (and, with ``default_refusal``, refused at the default limit)."""
    model = strong_skew_cluster(d.shape)
    row = {**shape_fields(d), "replicas": model.num_replicas}
    row |= judged(model, options_for(d, d.max_replicas))
    if default_refusal and d.max_replicas > DEFAULT_MAX_REPLICAS:
        at_default = judged(model, options_for(d, DEFAULT_MAX_REPLICAS))
        row["atDefaultLimit"] = {k: at_default.get(k) for k in ("wallSeconds", "cpuSeconds", "refused", "falseRefusal")}
    row["loadAverage"] = [round(x, 2) for x in os.getloadavg()]
    return row


def failed(row: dict[str, Any]) -> bool:
    """A goal broken or out of band, the summary wrong about one, or a refusal that is not true."""
    checks = ("hardGoalsBroken", "goalsOutOfBand", "summaryDisagrees", "falseRefusal")
    return any(row.get(k) for k in checks) or bool((row.get("atDefaultLimit") or {}).get("falseRefusal"))


def spread(values: list[float]) -> str:
    """min / median / max of ``values`` (none: -)."""
    if not values:
        return "-"
    return f"{min(values):.3g} / {float(np.median(values)):.3g} / {max(values):.3g}"


def table(rows: list[dict[str, Any]]) -> str:
    """The draws as one markdown row (see the module's docstring)."""
    planned = [r for r in rows if "refused" not in r]
    header = (
        "| draws | planned | refused | failing | plan wall s min / median / max | plan CPU s min / median / max "
        "| bytes/goals bound min / median / max |"
    )
    line = (
        f"| {len(rows)} | {len(planned)} | {len(rows) - len(planned)} | {sum(map(failed, rows))} "
        f"| {spread([r['wallSeconds'] for r in planned])} | {spread([r['cpuSeconds'] for r in planned])} "
        f"| {spread([r['bytesOverGoalsBound'] for r in planned])} |"
    )
    return f"{header}\n|---:|---:|---:|---:|---|---|---|\n{line}"


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.strong_skew_shapes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=325_000)
    parser.add_argument("--draws", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1, help="the numpy seed of the draws")
    parser.add_argument("--only", type=int, default=None, help="plan only draw N (0-based) of the seed")
    parser.add_argument("--default-refusal", action="store_true", help="also plan raised-limit draws at 4,000")
    parser.add_argument("--wall-budget", action="store_true", help="count the time budget in wall seconds")
    args = parser.parse_args()
    if not args.wall_budget:  # as the planner tests do (tests/planner/conftest.py): the machine is shared
        pipeline.Budget = lambda seconds: Budget(seconds, clock=time.process_time)  # type: ignore[attr-defined,assignment]
    rng = np.random.default_rng(args.seed)
    rows = []
    for i in range(args.draws):
        d = draw(rng, args.replicas)
        if args.only is not None and i != args.only:
            continue
        row = {"draw": i, **run(d, default_refusal=args.default_refusal)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    print(table(rows))
    for row in filter(failed, rows):
        print(f"failing: draw {row['draw']} of seed {args.seed}")


if __name__ == "__main__":
    main()

"""Random strongly skewed clusters, small and mid-sized: planned, or refused only where no placement exists.

    .venv/bin/python -m bench.strong_skew_draws --size small --seed 7 --draws 300   # about 3 minutes
    .venv/bin/python -m bench.strong_skew_draws --size mid --seed 11 --draws 60     # about 2 minutes

Clusters from ``bench.strong_skew``'s generator with random shapes. ``small`` draws the shapes of the
property test ``tests/planner/test_planner_feasibility.py`` (4-12 brokers in 2-3 racks, 20-120
partitions, network and disk filled 0.5-1.15 of what the limits allow, ``maxReplicasPerBroker`` the
average divided by 0.7-1.0), many more of them; ``mid`` draws groups beyond the capacity ladder's
search (6-24 brokers in 2-4 racks, 150-700 partitions, fills 0.6-1.0, the busiest broker at 4-10
times the average, limits the average divided by 0.80-0.98). Every refusal goes to the exact check
(``bench.feasibility.placement_exists``). Prints each false failure (or undecided check) as found,
then the counts and the slowest plan or refusal.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import numpy as np
from kafka_balancer.model import ClusterModel
from kafka_balancer.planner import OperationOptions, PlannerOptions, PlanningError, plan

from bench.feasibility import placement_exists
from bench.strong_skew import Shape, strong_skew_cluster

Draw = tuple[Shape, float]  # a shape, and the average replicas per broker over the replica limit


@dataclass(frozen=True)
class Ranges:
    """What a draw picks from (half-open integer ranges, closed float ranges)."""

    racks: tuple[int, int]
    per_rack: tuple[int, int]
    partitions: tuple[int, int]
    fill: tuple[float, float]  # network and disk, of what the limits allow
    busiest: tuple[float, float]  # the busiest broker's replicas over the average
    cap: tuple[float, float]  # the average replicas per broker over the replica limit
    partitions_per_topic: int
    new_brokers: Callable[[np.random.Generator, int, int], int]  # (rng, racks, brokers per rack)


def draw(rng: np.random.Generator, ranges: Ranges) -> Draw:
    """One cluster shape and limit (the draws in a fixed order: a seed gives the same clusters)."""
    racks, per_rack = int(rng.integers(*ranges.racks)), int(rng.integers(*ranges.per_rack))
    partitions, fill = int(rng.integers(*ranges.partitions)), float(rng.uniform(*ranges.fill))
    shape = Shape(
        brokers=racks * per_rack,
        racks=racks,
        new_brokers=ranges.new_brokers(rng, racks, per_rack),
        topics=max(3, partitions // ranges.partitions_per_topic),
        partitions=partitions,
        busiest=float(rng.uniform(*ranges.busiest)),
        network_fill=fill,
        disk_fill=fill,
        seed=int(rng.integers(0, 2**30)),
    )
    return shape, float(rng.uniform(*ranges.cap))


def _old_in_every_rack(rng: np.random.Generator, racks: int, per_rack: int) -> int:
    """0-2 new brokers, leaving an old one in every rack, and three in all (for a replication factor
    of 3 on two racks)."""
    return min(int(rng.integers(0, 3)), racks * (per_rack - 1), racks * per_rack - 3)


def _up_to_one_per_rack(rng: np.random.Generator, racks: int, _per_rack: int) -> int:
    return int(rng.integers(0, racks + 1))


SIZES: Final = {
    # The property test's shapes (tests/planner/test_planner_feasibility.py draws from these).
    "small": Ranges((2, 4), (2, 5), (20, 121), (0.5, 1.15), (2.0, 9.0), (0.7, 1.0), 8, _old_in_every_rack),
    # Groups of 300-2,100 replicas: more than the capacity ladder's search places (600).
    "mid": Ranges((2, 5), (3, 7), (150, 700), (0.6, 1.0), (4.0, 10.0), (0.8, 0.98), 10, _up_to_one_per_rack),
}


def options_for(model: ClusterModel, shape: Shape, cap: float) -> PlannerOptions:
    """The new brokers added, the replica limit the average over ``cap`` (rounded up)."""
    added = tuple(range(shape.brokers - shape.new_brokers, shape.brokers))
    return PlannerOptions(
        operation=OperationOptions("add-brokers", brokers=added) if added else OperationOptions(),
        max_replicas_per_broker=int(np.ceil(model.num_replicas / shape.brokers / cap)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.strong_skew_draws", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--seed", type=int, default=7, help="the numpy seed of the draws")
    parser.add_argument("--draws", type=int, default=300)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    counts: Counter[str] = Counter()
    slowest = 0.0
    for _ in range(args.draws):
        shape, cap = draw(rng, SIZES[args.size])
        model = strong_skew_cluster(shape)
        options = options_for(model, shape, cap)
        started = time.perf_counter()
        try:
            plan(model, options)
        except PlanningError as error:
            seconds = time.perf_counter() - started
            exists = placement_exists(model, options, time_limit=60.0)
            outcome = {True: "refused, a placement exists", False: "refused, none exists", None: "undecided"}[exists]
            if exists is not False:
                print(f"{outcome}: {shape} limit {options.max_replicas_per_broker}: {error}", flush=True)
        else:
            seconds = time.perf_counter() - started
            outcome = "planned"
        counts[outcome] += 1
        slowest = max(slowest, seconds)
    print(json.dumps({**counts, "slowestSeconds": round(slowest, 2)}))


if __name__ == "__main__":
    main()

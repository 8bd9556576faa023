"""Tight replica limits on smaller strongly skewed clusters: planned, or refused only where no placement exists.

    .venv/bin/python -m bench.strong_skew_limits              # 24 plans, about 5 minutes
    .venv/bin/python -m bench.strong_skew_limits --seeds 2 --brokers 24

Clusters from ``bench.strong_skew``'s generator: 24 brokers (3 racks, 3 new, 300 topics, 8,000
partitions), 36 (6 racks, 6 new, 400 topics, 8,000) and 48 (6 racks, 6 new, 600 topics, 12,000), for
each seed, each with ``maxReplicasPerBroker`` the average replicas per broker divided by 0.90 and by
0.95 (rounded down), the policy's default time budget. Prints one JSON line per plan; where the
planner refuses, the exact check (``bench.feasibility.placement_exists``) says whether a placement
exists ("placementExists": true is a false failure, null that the solver ran out of time).
"""

from __future__ import annotations

import argparse
import json
from typing import Final

from kafka_balancer.planner import OperationOptions, PlannerOptions

from bench.feasibility import placement_exists
from bench.strong_skew import Shape, run, strong_skew_cluster

# (brokers, racks, new brokers, topics, partitions)
SIZES: Final = ((24, 3, 3, 300, 8000), (36, 6, 6, 400, 8000), (48, 6, 6, 600, 12000))
FILLS: Final = (0.90, 0.95)  # the average replicas per broker over the limit


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.strong_skew_limits", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1,2,3,4", help="comma-separated generator seeds")
    parser.add_argument("--brokers", default="", help="comma-separated sizes to run (24, 36, 48); all by default")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    sizes = {int(b) for b in args.brokers.split(",") if b} or {size[0] for size in SIZES}
    for brokers, racks, new, topics, partitions in SIZES:
        if brokers not in sizes:
            continue
        for seed in seeds:
            shape = Shape(
                brokers=brokers, racks=racks, new_brokers=new, topics=topics, partitions=partitions, seed=seed
            )
            model = strong_skew_cluster(shape)
            added = tuple(range(brokers - new, brokers))
            for fill in FILLS:
                options = PlannerOptions(
                    operation=OperationOptions("add-brokers", brokers=added),
                    max_replicas_per_broker=int(model.num_replicas / brokers / fill),
                )
                out = {"seed": seed, "fill": fill, "maxReplicasPerBroker": options.max_replicas_per_broker}
                out |= run(shape, options)
                if "refused" in out:
                    out["placementExists"] = placement_exists(model, options, time_limit=120.0)
                print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

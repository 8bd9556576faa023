"""Plan time on small clusters: every case of ``bench.random_operations`` in a range of seeds.

    .venv/bin/python -m bench.small_plans --seeds 0-1199

Prints the cases, how many planned, the total and the slowest plan times, and the seeds of the
slowest. Small clusters should plan in well under a second; a few seconds is a finishing pass
doing far more work than the cluster's size calls for.
"""

from __future__ import annotations

import argparse
import time

from kafka_balancer.planner import PlanningError, plan

from bench.random_operations import OPERATIONS, random_case
from bench.synthetic import seed_range

SLOW: float = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=seed_range, default=seed_range("0-299"), help="e.g. 0-1199")
    args = parser.parse_args()
    times: list[tuple[float, int, str]] = []
    planned = 0
    for seed in args.seeds:
        kind = OPERATIONS[seed % len(OPERATIONS)]
        model, options = random_case(seed, kind)
        start = time.perf_counter()
        try:
            plan(model, options)
            planned += 1
        except PlanningError:
            pass  # a refusal is timed as well: it ran the same passes up to the reason
        times.append((time.perf_counter() - start, seed, kind))
    ordered = sorted(times, reverse=True)
    total = sum(t for t, _, _ in times)
    p99 = ordered[len(ordered) // 100][0]
    print(f"{len(times)} cases, {planned} planned, {total:.1f} s in all")
    print(f"slowest {ordered[0][0]:.2f} s, 99th percentile {p99:.2f} s, over {SLOW:.0f} s: ", end="")
    print(sum(t > SLOW for t, _, _ in times))
    print("slowest seeds: " + ", ".join(f"{s} ({k}, {t:.2f} s)" for t, s, k in ordered[:5]))


if __name__ == "__main__":
    main()

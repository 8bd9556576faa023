"""Every benchmark with its default (issue-sized) arguments, one process each: `make bench`.

    .venv/bin/python -m bench.run_all [--only planner,read_cluster]

Each benchmark prints its own figures; this runner adds the wall time of each and stops at the
first one that fails. Heavy: the whole set takes tens of minutes on the 2-core machine, which is
why none of it is part of `make test`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

# (name, module arguments): the order puts the quick, foundational figures first.
BENCHMARKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("model_memory", ("bench.model_memory",)),
    ("read_cluster", ("bench.read_cluster",)),
    ("plan_oracle", ("bench.plan_oracle", "--check")),  # plans changed: stop before measuring them
    ("planner_quality", ("bench.planner", "quality")),
    ("planner_table", ("bench.planner", "table")),
    ("strong_skew", ("bench.strong_skew",)),
    ("strong_skew_limits", ("bench.strong_skew_limits",)),
    ("strong_skew_draws_small", ("bench.strong_skew_draws", "--size", "small")),
    ("strong_skew_draws_mid", ("bench.strong_skew_draws", "--size", "mid", "--seed", "11", "--draws", "60")),
    ("strong_skew_shapes_325k", ("bench.strong_skew_shapes", "--replicas", "325000", "--draws", "6", "--seed", "1")),
    ("strong_skew_shapes_1.3m", ("bench.strong_skew_shapes", "--replicas", "1300000", "--draws", "3", "--seed", "2")),
    ("small_plans", ("bench.small_plans",)),
    ("executor_pipe", ("bench.executor_pipe", "--waves")),
    ("analysis_day", ("bench.analysis_day",)),
    ("consumer_groups", ("bench.consumer_groups",)),
    ("durability_audit", ("bench.durability_audit",)),
    # Real Kafka brokers (make kafka): the machine's own speed, unlike the emulated figures above.
    ("real_cluster_start", ("bench.real_cluster_start",)),
    ("real_copy_rate", ("bench.real_copy_rate",)),
    ("demo", ("bench.demo",)),
    ("real_scale", ("bench.real_scale",)),
)


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.run_all", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated names: " + ", ".join(n for n, _ in BENCHMARKS))
    args = parser.parse_args()
    wanted = {n.strip() for n in args.only.split(",") if n.strip()}
    unknown = wanted - {n for n, _ in BENCHMARKS}
    if unknown:
        parser.error(f"--only: unknown benchmark(s) {', '.join(sorted(unknown))}")
    for name, module_args in BENCHMARKS:
        if wanted and name not in wanted:
            continue
        print(f"== {name}: python -m {' '.join(module_args)}", flush=True)
        started = time.monotonic()
        code = subprocess.call([sys.executable, "-m", *module_args])
        print(f"== {name}: exit {code}, {time.monotonic() - started:.1f} s wall", flush=True)
        if code != 0:
            sys.exit(code)


if __name__ == "__main__":
    main()

"""Durability audit time on a large synthetic cluster (the audit is vectorised over the model arrays).

    .venv/bin/python -m bench.durability_audit [--partitions 130000] [--topics 7000] [--dead-brokers 2]

Prints one line per measurement; not part of the default test run.
"""

from __future__ import annotations

import argparse
import time

from kafka_balancer.durability import audit

from bench.synthetic import skewed_cluster


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=130_000)
    parser.add_argument("--topics", type=int, default=7_000)
    parser.add_argument("--brokers", type=int, default=48)
    parser.add_argument("--dead-brokers", type=int, default=2)
    args = parser.parse_args()
    model = skewed_cluster(
        brokers=args.brokers, new_brokers=0, partitions=args.partitions, topics=args.topics,
        dead_brokers=args.dead_brokers,
    )  # fmt: skip
    start = time.perf_counter()
    report = audit(model)
    took = time.perf_counter() - start
    print(
        f"audit {model.num_partitions} partitions, {len(model.topics)} topics, {model.num_brokers} brokers "
        f"({args.dead_brokers} down): {took:.2f} s; {len(report.flagged)} topics flagged, "
        f"{report.at_risk_total} partitions at risk {report.risk_counts}"
    )


if __name__ == "__main__":
    main()

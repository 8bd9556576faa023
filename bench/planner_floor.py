"""How few bytes any plan could move with the per-topic goals too: a linear-programming estimate.

    .venv/bin/pip install scipy      # once; only this estimate needs it
    .venv/bin/python -m bench.planner_floor            # the four quality clusters of bench.planner

The issue's lower bound counts disk only: max(disk above 1.10 x avg, disk below 0.90 x avg). A plan
that must also bring every topic's replica count per broker into its band moves at least what this
LP finds: variables are each topic's final replica count per broker (fractional), each topic's
partitions count at the topic's mean size, constraints are the topic bands, the broker replica-count
and disk bands, and rack spread (per topic, at most one replica per partition in each rack); the
cost is the bytes arriving on each broker. It is a relaxation (fractional counts, mean sizes,
no network/leader goals), so it estimates the floor, not a plan; printed over the disk-only bound.
"""

from __future__ import annotations

import numpy as np
from kafka_balancer.model.cluster import NO_BROKER, ClusterModel

from bench.synthetic import disk_lower_bound, skewed_cluster

CASES = [
    {"brokers": 12, "new_brokers": 3, "partitions": 2000, "rf": 3, "seed": 7, "skew": 1.0},
    {"brokers": 15, "new_brokers": 3, "partitions": 5000, "rf": 3, "seed": 1, "skew": 2.0},
    {"brokers": 24, "new_brokers": 6, "partitions": 20000, "rf": 3, "seed": 2, "skew": 1.0},
    {"brokers": 30, "new_brokers": 6, "partitions": 20000, "rf": 2.5, "seed": 4, "skew": 2.0},
]
THRESHOLD = 1.10


def floor_over_bound(model: ClusterModel, racks: int = 3) -> float:
    try:
        from scipy.optimize import linprog
        from scipy.sparse import coo_matrix, csr_matrix, hstack, identity, vstack
    except ImportError as exc:  # pragma: no cover - a bench-only dependency
        raise SystemExit("bench.planner_floor needs scipy: .venv/bin/pip install scipy") from exc
    nb, nt = model.num_brokers, len(model.topics)
    valid = model.replicas != NO_BROKER
    part = np.repeat(np.arange(model.num_partitions), valid.sum(axis=1))
    counts = np.zeros((nt, nb))
    np.add.at(counts, (model.partition_topic[part], model.replicas[valid]), 1)
    partitions = np.bincount(model.partition_topic, minlength=nt).astype(np.float64)
    size = np.bincount(model.partition_topic, weights=model.size_bytes, minlength=nt) / np.maximum(partitions, 1)
    total = counts.sum(axis=1)
    avg_t = total / nb
    lo_t, hi_t = np.floor(avg_t * (2 - THRESHOLD) + 1e-9), np.ceil(avg_t * THRESHOLD - 1e-9)
    disk = (counts * size[:, None]).sum(axis=0)
    avg_disk, avg_count = disk.sum() / nb, counts.sum() / nb
    n = nt * nb
    cell = np.arange(n)
    broker, topic = cell % nb, cell // nb
    rack = np.arange(nb) % racks
    zero = csr_matrix((nb, n))
    per_broker = coo_matrix((np.ones(n), (broker, cell)), shape=(nb, n))
    disk_rows = coo_matrix((np.repeat(size, nb), (broker, cell)), shape=(nb, n))
    per_rack = coo_matrix((np.ones(n), (topic * racks + rack[broker], cell)), shape=(nt * racks, n))
    # Variables: final counts x (n), then arrivals u (n) with u >= x - counts.
    a_ub = vstack(
        [
            hstack([identity(n), -identity(n)]),
            hstack([per_broker, zero]),
            hstack([-per_broker, zero]),
            hstack([disk_rows, zero]),
            hstack([-disk_rows, zero]),
            hstack([per_rack, csr_matrix((nt * racks, n))]),
        ]
    ).tocsr()
    b_ub = np.concatenate(
        [
            counts.ravel(),
            np.full(nb, np.ceil(avg_count * THRESHOLD - 1e-9)),
            -np.full(nb, np.floor(avg_count * (2 - THRESHOLD) + 1e-9)),
            np.full(nb, avg_disk * THRESHOLD),
            -np.full(nb, avg_disk * (2 - THRESHOLD)),
            np.repeat(partitions, racks),
        ]
    )
    a_eq = hstack([coo_matrix((np.ones(n), (topic, cell)), shape=(nt, n)), csr_matrix((nt, n))]).tocsr()
    bounds = [(lo_t[t], hi_t[t]) for t in topic.tolist()] + [(0.0, None)] * n
    cost = np.concatenate([np.zeros(n), np.repeat(size, nb)])
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=total, bounds=bounds, method="highs")
    if res.status != 0:
        raise SystemExit(f"LP not solved: {res.message}")
    return float(res.fun / disk_lower_bound(model))


def main() -> None:
    print("brokers (new) | partitions | skew | LP floor with per-topic goals / disk-only bound")
    for case in CASES:
        model = skewed_cluster(**case)
        ratio = floor_over_bound(model)
        print(
            f"{case['brokers']} ({case['new_brokers']}) | {case['partitions']:,} | {case['skew']} | {ratio:.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

"""How few bytes any plan could move with the per-topic goals too: a linear-programming lower bound.

    .venv/bin/python -m bench.planner_floor            # the four quality clusters of bench.planner
    .venv/bin/python -m bench.planner_floor --shape mixed-rf --seeds 1-8
    .venv/bin/python -m bench.planner_floor --scale-rows 1   # the scale table's first row (the 2nd: > 50 min)

The issue's lower bound counts disk only: max(disk above 1.10 x avg, disk below 0.90 x avg). A plan
that must also bring every topic's replica count per broker into its band moves at least what this
LP finds. It is a relaxation of the real problem, so its optimum is a true lower bound: every plan
that holds the topic bands, the broker replica-count and disk bands and rack spread is a feasible
point of it with the same cost. Per (topic, broker) cell it has the final count x, the replicas
that leave k and arrive u (x = count - k + u), the bytes that leave L and arrive A. What makes it
valid with real, unequal partition sizes: k replicas of a cell take at least the k smallest and at
most the k largest of its sizes with them (L between those two piecewise-linear envelopes), an
arriving replica is between the topic's smallest and largest partition, and each topic's arriving
bytes equal its leaving bytes. Rack spread: per topic and rack at most one replica per partition.
Cost: the bytes that leave (= the bytes a plan copies). Leader and network goals are left out, and
counts are fractional, which can only lower the bound. Printed over the disk-only bound.

``--integer`` solves it with whole replica counts (a mixed-integer program, HiGHS branch and cut;
about 2 minutes per 20k-partition cluster) and prints the MIP's best bound: still a valid floor,
and the gap to the LP shows what fractional counts were worth.

``--by-rf`` splits each topic's cells by partition replication factor and uses that a partition
with one replica per rack (rf = racks) keeps one per rack: its replicas, up to relabelling which one
went where (same bytes), only change broker inside their rack, so that class's replicas and bytes
are conserved per rack and arrivals are priced from the sizes in that rack. A tighter model, still
a relaxation; about 15 minutes per 20k-partition cluster (the LP doubles in size).
"""

from __future__ import annotations

import argparse

import numpy as np
from kafka_balancer.model.cluster import NO_BROKER, ClusterModel

from bench.synthetic import SCALE_ROWS, SHAPES, disk_lower_bound, scale_row, seed_range, skewed_cluster

CASES = [
    {"brokers": 12, "new_brokers": 3, "partitions": 2000, "rf": 3, "seed": 7, "skew": 1.0},
    {"brokers": 15, "new_brokers": 3, "partitions": 5000, "rf": 3, "seed": 1, "skew": 2.0},
    {"brokers": 24, "new_brokers": 6, "partitions": 20000, "rf": 3, "seed": 2, "skew": 1.0},
    {"brokers": 30, "new_brokers": 6, "partitions": 20000, "rf": 2.5, "seed": 4, "skew": 2.0},
]
THRESHOLD = 1.10


class _Rows:
    """Sparse inequality (or equality) rows, ``sum(coef * var) <= rhs``, added in vectorised blocks."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []
        self.rhs: list[np.ndarray] = []
        self.count = 0

    def add(self, terms: list[tuple[np.ndarray, np.ndarray | float]], rhs: np.ndarray) -> None:
        """One row per entry of ``rhs``; each term is (variable index per row, coefficient per row)."""
        index = np.arange(rhs.size) + self.count
        for var, coef in terms:
            self.rows.append(index)
            self.cols.append(np.asarray(var))
            self.vals.append(np.broadcast_to(np.asarray(coef, dtype=np.float64), index.shape))
        self.rhs.append(np.asarray(rhs, dtype=np.float64))
        self.count += rhs.size

    def grouped(self, groups: np.ndarray, var: np.ndarray, coef: np.ndarray | float, rhs: np.ndarray) -> None:
        """One row per group id (0..len(rhs)-1): the sum over members of coef * var <= rhs."""
        self.rows.append(groups + self.count)
        self.cols.append(var)
        self.vals.append(np.broadcast_to(np.asarray(coef, dtype=np.float64), var.shape))
        self.rhs.append(np.asarray(rhs, dtype=np.float64))
        self.count += rhs.size

    def matrix(self, columns: int) -> tuple[object, np.ndarray]:
        from scipy.sparse import coo_matrix

        shape = (self.count, columns)
        a = coo_matrix((np.concatenate(self.vals), (np.concatenate(self.rows), np.concatenate(self.cols))), shape=shape)
        return a.tocsr(), np.concatenate(self.rhs)


def floor_over_bound(model: ClusterModel, *, integer: bool = False, by_rf: bool = False) -> float:
    from scipy.optimize import Bounds, LinearConstraint, linprog, milp

    nb, nt = model.num_brokers, len(model.topics)
    valid = model.replicas != NO_BROKER
    part_rf = valid.sum(axis=1)
    part = np.repeat(np.arange(model.num_partitions), part_rf)
    # Bytes in units of the mean replica: coefficients near 1. In units of the disk-only bound they
    # go down to 1e-7, and HiGHS' MIP presolve then called a feasible model (a real plan is a
    # point of it) infeasible.
    unit = float(model.size_bytes[part].mean()) or 1.0
    size = model.size_bytes[part] / unit
    rack_of = np.unique(np.asarray(model.broker_racks), return_inverse=True)[1]
    racks = int(rack_of.max()) + 1
    # Cells: (topic, class, broker). One class per topic, or with --by-rf one per replication factor.
    part_class = np.unique(part_rf, return_inverse=True)[1] if by_rf else np.zeros_like(part_rf)
    classes = int(part_class.max(initial=0)) + 1
    tclass_of_part = model.partition_topic.astype(np.int64) * classes + part_class
    cell_of = tclass_of_part[part] * nb + model.replicas[valid]
    n = nt * classes * nb
    counts = np.bincount(cell_of, minlength=n).astype(np.float64)
    disk0 = np.bincount(model.replicas[valid], weights=size, minlength=nb)
    tclass, broker = np.arange(n) // nb, np.arange(n) % nb
    topic = tclass // classes
    total_t = np.bincount(topic, weights=counts, minlength=nt)
    avg_t = total_t / nb
    lo_t, hi_t = np.floor(avg_t * (2 - THRESHOLD) + 1e-9), np.ceil(avg_t * THRESHOLD - 1e-9)
    # Where a class's replicas may go. A partition with one replica per rack keeps one per rack, so
    # (up to relabelling which replica went where, same bytes) each of its replicas stays in its
    # rack: that class's replicas and bytes are conserved per rack. Otherwise per topic and class.
    one_per_rack = np.zeros(classes, dtype=np.bool_)
    if by_rf:
        racks_held = np.zeros((model.num_partitions, racks), dtype=np.int64)
        np.add.at(racks_held, (part, rack_of[model.replicas[valid]]), 1)
        spans = (racks_held == 1).all(axis=1)  # exactly one replica in every rack (so rf = racks)
        one_per_rack = np.bincount(part_class[~spans], minlength=classes) == 0
    in_rack = one_per_rack[tclass % classes]
    pool = tclass * (racks + 1) + np.where(in_rack, rack_of[broker], racks)
    pool = np.unique(pool, return_inverse=True)[1]
    pools = int(pool.max()) + 1
    smallest = np.full(pools, np.inf)
    largest = np.zeros(pools)
    np.minimum.at(smallest, pool[cell_of], size)
    np.maximum.at(largest, pool[cell_of], size)
    smallest[~np.isfinite(smallest)] = 0.0  # a pool nothing starts in: nothing can arrive there either
    avg_disk, avg_count = disk0.sum() / nb, counts.sum() / nb
    x, k, u, out, arr = (np.arange(n) + i * n for i in range(5))  # variable blocks

    # The j-th smallest (and largest) replica of each cell, with the sum of those before it.
    order = np.lexsort((size, cell_of))
    c_sorted, s_sorted = cell_of[order], size[order]
    first = np.searchsorted(c_sorted, c_sorted, side="left")
    rank = np.arange(c_sorted.size) - first
    before_small = np.cumsum(s_sorted) - s_sorted
    before_small -= before_small[first]
    order_desc = np.lexsort((-size, cell_of))
    l_sorted = size[order_desc]
    before_large = np.cumsum(l_sorted) - l_sorted
    before_large -= before_large[first]

    ub = _Rows()
    # L >= sum of the j smallest + (k - j) x the (j+1)-th smallest, for every j (convex envelope).
    ub.add([(out[c_sorted], -1.0), (k[c_sorted], s_sorted)], -(before_small - s_sorted * rank))
    # L <= sum of the j largest + (k - j) x the (j+1)-th largest (concave envelope).
    ub.add([(out[c_sorted], 1.0), (k[c_sorted], -l_sorted)], before_large - l_sorted * rank)
    # Arriving bytes: between the smallest and largest partition of the pool per replica.
    ub.add([(arr, 1.0), (u, -largest[pool])], np.zeros(n))
    ub.add([(arr, -1.0), (u, smallest[pool])], np.zeros(n))
    # Broker replica-count and disk bands.
    ub.grouped(broker, x, 1.0, np.full(nb, np.ceil(avg_count * THRESHOLD - 1e-9)))
    ub.grouped(broker, x, -1.0, -np.full(nb, np.floor(avg_count * (2 - THRESHOLD) + 1e-9)))
    disk_rows = np.r_[broker, broker]
    ub.grouped(disk_rows, np.r_[out, arr], np.r_[-np.ones(n), np.ones(n)], avg_disk * THRESHOLD - disk0)
    ub.grouped(disk_rows, np.r_[out, arr], np.r_[np.ones(n), -np.ones(n)], disk0 - avg_disk * (2 - THRESHOLD))
    if classes > 1:  # the topic band holds the sum over the classes of (topic, broker)
        ub.grouped(topic * nb + broker, x, 1.0, np.repeat(hi_t, nb))
        ub.grouped(topic * nb + broker, x, -1.0, -np.repeat(lo_t, nb))
    # Rack spread: per topic (and class) and rack at most one replica per partition.
    partitions_tc = np.bincount(tclass_of_part, minlength=nt * classes).astype(np.float64)
    ub.grouped(tclass * racks + rack_of[broker], x, 1.0, np.repeat(partitions_tc, racks))

    eq = _Rows()
    eq.add([(x, 1.0), (k, 1.0), (u, -1.0)], counts)  # x = count - k + u
    eq.grouped(np.r_[pool, pool], np.r_[k, u], np.r_[np.ones(n), -np.ones(n)], np.zeros(pools))  # replicas of a pool
    eq.grouped(np.r_[pool, pool], np.r_[out, arr], np.r_[np.ones(n), -np.ones(n)], np.zeros(pools))  # and its bytes

    a_ub, b_ub = ub.matrix(5 * n)
    a_eq, b_eq = eq.matrix(5 * n)
    bounds = np.zeros((5 * n, 2))
    bounds[:, 1] = np.inf
    if classes == 1:
        bounds[x, 0], bounds[x, 1] = lo_t[topic], hi_t[topic]
    bounds[k, 1] = counts
    cost = np.zeros(5 * n)
    cost[out] = 1.0
    bound_units = disk_lower_bound(model) / unit or 1.0
    if integer:
        whole = np.zeros(5 * n)
        whole[: 3 * n] = 1  # x, k, u: replica counts
        constraints = [LinearConstraint(a_ub, -np.inf, b_ub), LinearConstraint(a_eq, b_eq, b_eq)]
        # A 0.2% gap or 15 minutes is plenty for a floor: the best bound is valid whenever it stops.
        options = {"mip_rel_gap": 0.002, "time_limit": 900.0}
        box = Bounds(bounds[:, 0], bounds[:, 1])
        mip = milp(cost, constraints=constraints, integrality=whole, bounds=box, options=options)
        if mip.status not in (0, 1) or mip.mip_dual_bound is None:
            raise SystemExit(f"MIP not solved: {mip.message}")
        return float(mip.mip_dual_bound) / bound_units
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if res.status != 0:
        raise SystemExit(f"LP not solved: {res.message}")
    return float(res.fun) / bound_units


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.planner_floor")
    parser.add_argument("--shape", choices=sorted(SHAPES), help="other seeds of one shape instead of the four")
    parser.add_argument("--seeds", type=seed_range, default=seed_range("1-8"), help="e.g. 1-8 (with --shape)")
    parser.add_argument("--integer", action="store_true", help="whole replica counts (MIP; its best bound)")
    parser.add_argument("--by-rf", action="store_true", help="cells per replication factor; full-rack ones per rack")
    parser.add_argument("--scale-rows", type=int, default=0, help="the first N rows of `bench.planner table` instead")
    args = parser.parse_args()
    cases = [{**SHAPES[args.shape], "seed": s} for s in args.seeds] if args.shape else CASES
    if args.scale_rows:
        cases = [scale_row(*row) for row in SCALE_ROWS[: args.scale_rows]]
    print("brokers (new) | partitions | skew | seed | LP floor with per-topic goals / disk-only bound")
    for case in cases:
        ratio = floor_over_bound(skewed_cluster(**case), integer=args.integer, by_rf=args.by_rf)
        print(
            f"{case['brokers']} ({case['new_brokers']}) | {case['partitions']:,} | {case['skew']} | {case['seed']} "
            f"| {ratio:.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

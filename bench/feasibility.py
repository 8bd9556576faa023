"""Is a planning failure the cluster's or the planner's? An exact check of the hard goals.

    .venv/bin/python -m bench.feasibility --seeds 0-2999
    .venv/bin/python -m bench.feasibility --seeds 0-2999 --show 10   # and list the first 10 misses

For each seed, ``bench.random_operations`` draws a small cluster and an operation (the kinds in
turn). Where the planner fails, a mixed-integer program (scipy's HiGHS) looks for any placement
that keeps every hard goal the operation answers for: replica x[p, b] and leader y[p, b] binaries,
each partition's replication factor (the new one for change-replication-factor), rack spread
(at most ceil(rf / racks of its group's hosting brokers) per rack), group confinement, no replica
on a dead or removed broker, none new on a broker excluded from replicas (it keeps what it holds),
no leader on one excluded from leadership or demoted, and every broker under its limits of
replicas, disk, network in and out and CPU, counted the planner's way (``state.partition_loads``).
What the operation pins is pinned: demote-brokers moves no replica (so it answers only for network
out, CPU and leadership; a partition none of whose replicas may lead keeps its leader); a removed
broker's replicas go onto its ``targetBrokers`` (a partition has as many replicas on targets that
did not hold it as it had on removed brokers; its other replicas may move); move-topics puts the
topics on its targets (or in the target group); partitions of a group without brokers keep their
live replicas (and are held to the rack spread only where they keep it now, and keep their leader
where none of those may lead: they are not the plan's to mend). Distribution goals are left out.
Rebalances limited to some topics or groups are skipped (they answer only for what they move).

A "miss" is a failure for which the program finds a placement: the planner's to fix, or an input
the planner refuses by design (``targetBrokers`` outside the topics' group, a target that crowds a
rack where moving another replica of the partition would free one); the listing says which.
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter
from typing import Any

import numpy as np
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.cluster import NO_BROKER
from kafka_balancer.planner import PlannerOptions, PlanningError, plan
from kafka_balancer.planner.base.resource_groups import resolve_groups
from kafka_balancer.planner.base.state import State, partition_loads
from kafka_balancer.planner.catalogue import CATALOGUE

from bench.random_operations import OPERATIONS, random_case
from bench.synthetic import seed_range


def placement_exists(model: ClusterModel, options: PlannerOptions, time_limit: float = 60.0) -> bool | None:
    """Whether some placement keeps every hard goal (None: the solver ran out of time)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    st = State(model, options, resolve_groups(model, options))
    op = options.operation
    n_parts, n_brokers = model.num_partitions, model.num_brokers
    held = np.zeros((n_parts, n_brokers), dtype=bool)
    for k in range(model.replicas.shape[1]):
        on = model.replicas[:, k] != NO_BROKER
        held[np.flatnonzero(on), model.replicas[on, k]] = True
    rf = held.sum(axis=1)
    topic = np.array([model.topics[t] for t in model.partition_topic])
    if op.type == "change-replication-factor" and op.replication_factor is not None:
        rf = np.where(np.isin(topic, op.topics), op.replication_factor, rf)
    lead, follow = partition_loads(model, rf)
    group = st.groups.partition.copy()
    if op.type == "move-topics" and op.target_group is not None:
        group[np.isin(topic, op.topics)] = st.groups.names.index(op.target_group)

    allowed = np.zeros((n_parts, n_brokers), dtype=bool)
    racks_of = np.zeros(n_parts)
    lower = np.zeros((n_parts, n_brokers))
    for g in range(len(st.groups.names)):
        members = st.groups.broker == g
        hosts = st.can_host & (members if members.any() else True)
        rows = group == g
        racks_of[rows] = max(1, np.unique(st.rack[hosts]).size)
        allowed[rows] = hosts | (held[rows] & st.active & (members if members.any() else True))
        if not members.any():  # not balanced: their live replicas stay
            lower[rows] = held[rows] & st.active
    if op.type == "move-topics" and op.target_group is None:
        named = np.isin(model.broker_ids, op.target_brokers)
        allowed[np.isin(topic, op.topics)] &= named
    upper_x = allowed.astype(float)
    upper_y = (allowed & st.can_lead).astype(float)
    # A pinned partition none of whose replicas may lead keeps its leader (docs/goals.md, excluded-brokers).
    pinned = lower.astype(bool)
    keeps = (pinned.sum(axis=1) >= rf) & ~(pinned & st.can_lead).any(axis=1)
    upper_y[keeps] = pinned[keeps]
    if op.type == "demote-brokers":
        lower, upper_x = held.astype(float), held.astype(float)
        # A partition none of whose replicas may lead keeps its leader (docs/goals.md, excluded-brokers).
        may_lead = held & st.can_lead
        upper_y = np.where(may_lead.any(axis=1)[:, None], may_lead, held).astype(float)

    rows_i: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def add(terms: list[tuple[int, float]], low: float, high: float) -> None:
        row = len(lo)
        for col, val in terms:
            rows_i.append(row)
            cols.append(col)
            vals.append(val)
        lo.append(low)
        hi.append(high)

    def x(p: int, b: int) -> int:
        return p * n_brokers + b

    def y(p: int, b: int) -> int:
        return n_parts * n_brokers + p * n_brokers + b

    racks = sorted(set(st.rack.tolist()))
    for p in range(n_parts):
        add([(x(p, b), 1.0) for b in range(n_brokers)], rf[p], rf[p])
        add([(y(p, b), 1.0) for b in range(n_brokers)], 1, 1)
        for b in range(n_brokers):
            add([(y(p, b), 1.0), (x(p, b), -1.0)], -np.inf, 0)
        cap = math.ceil(rf[p] / racks_of[p])
        # A pinned partition (group without brokers) that already crowds a rack is not the plan's to mend.
        crowded = lower[p].any() and np.bincount(st.rack[lower[p] > 0]).max() > cap
        if options.hard("rack-awareness") and op.type != "demote-brokers" and not crowded:  # demote moves no replica
            for r in racks:
                add([(x(p, b), 1.0) for b in np.flatnonzero(st.rack == r).tolist()], 0, cap)
    if op.type == "remove-brokers" and op.target_brokers:
        targets = np.isin(model.broker_ids, op.target_brokers)
        for p in np.flatnonzero(held[:, st.removed].any(axis=1)).tolist():
            # As many replicas on targets that did not hold the partition as it had on removed brokers.
            need = int(held[p, st.removed].sum())
            add([(x(p, b), 1.0) for b in np.flatnonzero(targets & ~held[p]).tolist()], need, np.inf)
    # demote-brokers answers only for the limits leadership carries (network out, CPU).
    carried = [q for _, q in CATALOGUE.capacity_goals if CATALOGUE.leadership_carries(q)]
    quantities = carried if op.type == "demote-brokers" else range(CATALOGUE.size)
    for b in range(n_brokers):
        for q in quantities:
            if math.isfinite(st.limit[b, q]):
                terms = [(x(p, b), float(follow[p, q])) for p in range(n_parts)]
                terms += [(y(p, b), float(lead[p, q] - follow[p, q])) for p in range(n_parts)]
                add(terms, -np.inf, float(st.limit[b, q]))
    size = 2 * n_parts * n_brokers
    matrix = coo_matrix((vals, (rows_i, cols)), shape=(len(lo), size)).tocsr()
    bounds = Bounds(
        np.concatenate([lower.ravel(), np.zeros(n_parts * n_brokers)]),
        np.concatenate([upper_x.ravel(), upper_y.ravel()]),
    )
    result: Any = milp(
        np.zeros(size),
        constraints=LinearConstraint(matrix, lo, hi),
        integrality=np.ones(size),
        bounds=bounds,
        options={"time_limit": time_limit},
    )
    return {0: True, 2: False}.get(int(result.status))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="0-999")
    parser.add_argument("--show", type=int, default=0, help="list the first N misses")
    args = parser.parse_args()
    started = time.perf_counter()
    outcome: Counter[str] = Counter()
    misses: Counter[str] = Counter()
    shown = 0
    for seed in seed_range(args.seeds):
        kind = OPERATIONS[seed % len(OPERATIONS)]
        model, options = random_case(seed, kind)
        if options.topics or options.groups_to_balance:
            outcome["skipped (limited rebalance)"] += 1
            continue
        try:
            plan(model, options)
        except PlanningError as error:
            exists = placement_exists(model, options)
            label = {True: "failed, a placement exists", False: "failed, none exists", None: "failed, undecided"}
            outcome[label[exists]] += 1
            if exists:
                misses[f"{kind}: {error.reason}"] += 1
                if shown < args.show:
                    shown += 1
                    print(f"seed {seed} {kind}: {error}")
        else:
            outcome["planned"] += 1
    for what, count in sorted(outcome.items()):
        print(f"{count:6d}  {what}")
    for what, count in sorted(misses.items()):
        print(f"  {count:4d}  miss: {what}")
    print(f"{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()

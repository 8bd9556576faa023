"""Strongly skewed clusters, shaped like the ones that need a balancer most (issue 36), and the
planner on them.

    .venv/bin/python -m bench.strong_skew                        # 96 brokers (6 new), 130k partitions
    .venv/bin/python -m bench.strong_skew --brokers 270 --new-brokers 18 --topics 20000 --partitions 433000
    .venv/bin/python -m bench.strong_skew --max-replicas 8000 --max-seconds 600

Topics have Zipf-like partition counts; each partition has replication factor 2 or 3 (half each, or
``--rf3-share`` of rf 3), its replicas spread over the racks and, within a rack, on a broker drawn with
a Zipf-like preference, so that the busiest broker holds about ``--busiest`` times the average
replicas, bytes and traffic (``--placement``: how racks and brokers are drawn, see PLACEMENTS; the
default "turns" is issue 36's); the new brokers start empty. ``--traffic``: a topic's traffic tied to
its partition count or independent of it (TRAFFIC). Every broker has the same disk and network
capacity, such that the cluster's total network-in is ``--network-fill`` of what capacityThreshold
allows (disk and network-out ``--disk-fill``); no partition carries more than 10% of one broker's
limit. The policy is the default one (maxReplicasPerBroker 4,000 unless ``--max-replicas``). Prints
one JSON line: the cluster's shape, the plan's time, what it moved against the disk-only lower bound
(``bytesOverBound``) and against the bound that also counts what the replica-count and per-topic
bands force off and onto each broker (``bytesOverGoalsBound``, bench.synthetic.goals_lower_bound),
the goals left out of band and how far the per-topic ones are, or the refusal. Many shapes of this
generator at the headline sizes: bench.strong_skew_shapes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import time
from typing import Any

import numpy as np
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.quantities import network_out_rows
from kafka_balancer.planner import OperationOptions, PlannerOptions, PlanningError, plan

from bench.synthetic import broker_disk, disk_lower_bound, goals_lower_bound, place_replicas

THRESHOLD = 0.8  # the default capacityThreshold
LARGEST_SHARE = 0.1  # of one broker's limit, at most, for one partition's load

# How a partition's replicas are placed (``Shape.placement``):
# - "turns": replica k in the rack after replica k-1's (the first drawn at random), a broker inside it
#   by a Zipf-like weight over the whole cluster's brokers, shuffled (issue 36's clusters);
# - "broker-first": each replica on a broker drawn by that cluster-wide weight among the racks the
#   partition has no replica in yet, so the skew lies across racks as much as inside them;
# - "rack-first": distinct racks drawn at random, then a broker inside each by a Zipf-like weight of
#   its own rack, so every rack holds the same share and the skew lives inside every rack.
PLACEMENTS = ("turns", "broker-first", "rack-first")
# A topic's traffic (``Shape.traffic``): "tied" draws each partition's (log-normal per topic), so a
# topic's traffic grows with its partitions; "independent" draws each topic's total (log-normal) and
# shares it among its partitions, so some small topics are hot and some big ones cold.
TRAFFIC = ("tied", "independent")


@dataclasses.dataclass(frozen=True)
class Shape:
    brokers: int = 96
    racks: int = 6
    new_brokers: int = 6
    topics: int = 7000
    partitions: int = 130_000
    busiest: float = 9.0  # the busiest broker's replicas over the average broker's
    network_fill: float = 0.71
    disk_fill: float = 0.6
    seed: int = 1
    placement: str = "turns"  # PLACEMENTS
    traffic: str = "tied"  # TRAFFIC
    rf3_share: float = 0.5  # partitions of replication factor 3 (the rest 2)


def strong_skew_cluster(shape: Shape) -> ClusterModel:
    """A cluster of ``shape`` (see the module's docstring)."""
    rng = np.random.default_rng(shape.seed)
    old = shape.brokers - shape.new_brokers
    rack_of = np.arange(shape.brokers) % shape.racks
    weight = np.zeros(shape.brokers)
    weight[:old] = rng.permutation(_zipf_weights(old, rack_of[:old], shape.busiest))
    counts = _zipf_counts(rng, shape.topics, shape.partitions)
    if shape.rf3_share == 0.5:  # issue 36's draw, kept so that its clusters stay the same
        part_rf = rng.choice(np.array([2, 3]), size=shape.partitions)
    else:
        part_rf = np.where(rng.random(shape.partitions) < shape.rf3_share, 3, 2)
    topic_of = np.repeat(np.arange(shape.topics), counts).astype(np.int32)
    partition_id = (np.arange(shape.partitions) - np.repeat(np.cumsum(counts) - counts, counts)).astype(np.int32)
    if shape.placement == "turns":
        replicas = place_replicas(rng, weight, rack_of, part_rf)
    else:
        replicas = _place(rng, shape, rack_of, part_rf)
    # Traffic per topic (lognormal), retention 6 h to 3 days, consumers reading 0.5 to 3 times.
    bytes_in = rng.lognormal(13.0, 1.5, shape.topics)[topic_of] * rng.lognormal(0.0, 0.3, shape.partitions)
    if shape.traffic == "independent":  # the topic's total, shared among its partitions
        bytes_in *= shape.partitions / shape.topics / counts[topic_of]
    size = bytes_in * rng.uniform(6 * 3600, 3 * 86400, shape.topics)[topic_of]
    model = ClusterModel(
        broker_ids=np.arange(shape.brokers, dtype=np.int32),
        broker_racks=tuple(f"rack-{r}" for r in rack_of),
        broker_alive=np.ones(shape.brokers, dtype=np.bool_),
        capacity=np.full((shape.brokers, 4), np.nan),
        topics=tuple(f"topic-{t:05d}" for t in range(shape.topics)),
        topic_min_isr=np.zeros(shape.topics, dtype=np.int32),
        topic_unclean_election=np.full(shape.topics, -1, dtype=np.int8),
        partition_topic=topic_of,
        partition_id=partition_id,
        replicas=replicas,
        isr_mask=replicas >= 0,
        leader=replicas[:, 0].copy(),
        size_bytes=size,
        bytes_in=bytes_in,
        bytes_out=bytes_in * rng.uniform(0.5, 3.0, shape.topics)[topic_of],
        messages_in=bytes_in / 1024.0,
        cpu_leader=np.full(shape.partitions, np.nan),
        cluster_name=f"strong-skew-{shape.brokers}b-{shape.partitions}p-seed{shape.seed}",
    )
    return _with_capacities(model, shape)


def _zipf_weights(n: int, racks: np.ndarray, busiest: float) -> np.ndarray:
    """Weights ``rank ** -s``, with ``s`` found so that the busiest broker's expected share of its
    rack's replicas is ``busiest`` times the average broker's."""
    ranks = np.arange(1, n + 1, dtype=float)

    def ratio(s: float) -> float:
        w = ranks**-s
        share = w / np.bincount(racks, weights=w)[racks]  # of its rack's replicas (each rack gets 1/R)
        return float(share.max() / share.mean())

    low, high = 0.0, 8.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if ratio(mid) < busiest else (low, mid)
    weights: np.ndarray = ranks**-low
    return weights


def _place(rng: np.random.Generator, shape: Shape, rack_of: np.ndarray, part_rf: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
    """Each partition's replicas (-1 padded) by ``shape.placement`` (see PLACEMENTS), one per rack; the
    new brokers (the last ``shape.new_brokers``) get none."""
    old = shape.brokers - shape.new_brokers
    count, width = part_rf.size, int(part_rf.max())
    replicas = np.full((count, width), -1, dtype=np.int32)
    weight = np.zeros(shape.brokers)
    if shape.placement == "rack-first":
        racks = np.argsort(rng.random((count, shape.racks)), axis=1)[:, :width]
        for r in range(shape.racks):
            members = np.flatnonzero(rack_of[:old] == r)
            weight[members] = rng.permutation(_zipf_weights(members.size, np.zeros(members.size, int), shape.busiest))
        for k in range(width):
            for r in range(shape.racks):
                rows = np.flatnonzero(racks[:, k] == r)
                members = np.flatnonzero((rack_of == r) & (weight > 0))
                replicas[rows, k] = _drawn(rng, members, weight[members], rows.size)
    else:
        weight[:old] = rng.permutation(_zipf_weights(old, np.zeros(old, int), shape.busiest))
        brokers = np.flatnonzero(weight > 0)
        used = np.zeros((count, shape.racks), dtype=np.bool_)
        for k in range(width):
            rows = np.arange(count)
            while rows.size:  # redraw the replicas that landed in a rack the partition has already
                pick = _drawn(rng, brokers, weight[brokers], rows.size)
                ok = ~used[rows, rack_of[pick]]
                replicas[rows[ok], k] = pick[ok]
                used[rows[ok], rack_of[pick[ok]]] = True
                rows = rows[~ok]
    replicas[np.arange(width)[None, :] >= part_rf[:, None]] = -1
    return replicas


def _drawn(rng: np.random.Generator, members: np.ndarray, weight: np.ndarray, n: int) -> np.ndarray:  # type: ignore[type-arg]
    """``n`` of ``members`` drawn with probability proportional to ``weight``."""
    cum = np.cumsum(weight)
    pick = np.searchsorted(cum, rng.random(n) * cum[-1], side="right")
    out: np.ndarray = members[np.minimum(pick, members.size - 1)]  # type: ignore[type-arg]
    return out


def _zipf_counts(rng: np.random.Generator, topics: int, partitions: int) -> np.ndarray:
    """Partitions per topic, Zipf-like (exponent 1), every topic at least one, ``partitions`` in all."""
    share = 1.0 / np.arange(1, topics + 1)
    counts = np.maximum(1, np.floor(share / share.sum() * (partitions - topics)).astype(np.int64) + 1)
    counts[0] += partitions - counts.sum()
    return rng.permutation(counts)


def _with_capacities(model: ClusterModel, shape: Shape) -> ClusterModel:
    """Equal brokers with room for ``network_fill`` / ``disk_fill`` of the load at capacityThreshold;
    each partition's traffic and size cut to a tenth of one broker's limit."""
    rf = (model.replicas >= 0).sum(axis=1)
    bytes_in, bytes_out, size = model.bytes_in.copy(), model.bytes_out.copy(), model.size_bytes.copy()
    for _ in range(3):  # the cut lowers the totals, which lowers the limits: a few turns settle it
        net_in = (bytes_in * rf).sum() / (shape.network_fill * THRESHOLD * shape.brokers)
        net_out = network_out_rows(bytes_in, bytes_out, rf)[0].sum() / (shape.disk_fill * THRESHOLD * shape.brokers)
        disk = (size * rf).sum() / (shape.disk_fill * THRESHOLD * shape.brokers)
        scale = np.minimum(1.0, LARGEST_SHARE * THRESHOLD * net_in / np.maximum(bytes_in, 1e-9))
        scale = np.minimum(scale, LARGEST_SHARE * THRESHOLD * net_out / np.maximum(bytes_out + 2 * bytes_in, 1e-9))
        bytes_in, bytes_out = bytes_in * scale, bytes_out * scale
        size = np.minimum(size, LARGEST_SHARE * THRESHOLD * disk)
    capacity = np.full((model.num_brokers, 4), np.nan)
    capacity[:, 0], capacity[:, 1], capacity[:, 2] = disk, net_in, net_out
    return dataclasses.replace(
        model, bytes_in=bytes_in, bytes_out=bytes_out, size_bytes=size, messages_in=bytes_in / 1024.0, capacity=capacity
    )


def run(shape: Shape, options: PlannerOptions) -> dict[str, Any]:
    model = strong_skew_cluster(shape)
    replicas = np.bincount(model.replicas[model.replicas >= 0], minlength=model.num_brokers)
    old = replicas[: shape.brokers - shape.new_brokers]
    disk = broker_disk(model)[: shape.brokers - shape.new_brokers]
    out: dict[str, Any] = {
        "brokers": shape.brokers,
        "partitions": shape.partitions,
        "replicas": model.num_replicas,
        "busiestReplicasOverAvg": round(float(old.max() / replicas.mean()), 2),
        "busiestDiskOverAvg": round(float(disk.max() / broker_disk(model).mean()), 2),
    }
    started = time.perf_counter()
    try:
        proposal = plan(model, options)
    except PlanningError as error:
        out.update(refused=str(error), planSeconds=round(time.perf_counter() - started, 2))
        return out
    summary = proposal.summary
    bound = disk_lower_bound(model)
    out.update(
        planSeconds=round(time.perf_counter() - started, 2),
        peakRssMiB=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        moves=summary["moves"],
        bytesOverBound=round(summary["bytesToMove"] / bound, 3) if bound else None,
        bytesOverGoalsBound=round(summary["bytesToMove"] / goals_lower_bound(model), 3) if bound else None,
        hardGoalsBroken=[g for g, ok in summary["hardGoals"].items() if not ok],
        goalsViolated=summary["goalsViolated"],
        replicasMaxOverAvg=summary["goals"]["replica-distribution"]["after"],
        # Replicas (then leaderships) above or below their topic's band on some broker, before -> after.
        topicSlotsOutOfBand={
            goal: [summary["goals"][goal]["violationBefore"], summary["goals"][goal]["violationAfter"]]
            for goal in ("topic-replica-distribution", "topic-leader-distribution")
        },
        timeBudgetReached=summary.get("timeBudgetReached"),
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.strong_skew")
    defaults, choices = Shape(), {"placement": PLACEMENTS, "traffic": TRAFFIC}
    for field in dataclasses.fields(Shape):
        flag, default = "--" + field.name.replace("_", "-"), getattr(defaults, field.name)
        parser.add_argument(flag, type=type(default), default=default, choices=choices.get(field.name))
    parser.add_argument("--max-replicas", type=int, default=4000)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    args = parser.parse_args()
    shape = Shape(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Shape)})
    new = tuple(range(shape.brokers - shape.new_brokers, shape.brokers))
    options = PlannerOptions(
        operation=OperationOptions("add-brokers", brokers=new) if new else OperationOptions(),
        max_replicas_per_broker=args.max_replicas,
        max_planning_seconds=args.max_seconds,
    )
    print(json.dumps(run(shape, options)))


if __name__ == "__main__":
    main()

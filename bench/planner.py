"""Planner benchmarks: quality on skewed clusters and time/memory at scale (not part of `make test`).

    .venv/bin/python -m bench.planner quality            # goals and bytes vs the lower bound
    .venv/bin/python -m bench.planner scale --partitions 130000 --brokers 96 --rf 2.46
    .venv/bin/python -m bench.planner table              # time vs replicas, each size in its own process
    .venv/bin/python -m bench.planner brokers            # time vs brokers (1,000-10,000), ~100 partitions each
    .venv/bin/python -m bench.planner seeds --shape mixed-rf --seeds 1-8   # one shape, many seeds
    .venv/bin/python -m bench.planner capacity --disk-capacity 1.3         # disks near full
    .venv/bin/python -m bench.planner offline --disk-capacity 1.3          # fix-offline-replicas, disks near full

Each scale run is a fresh process so that the peak RSS it reports is that size's own.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import platform
import resource
import subprocess
import sys
import time
from typing import Any

import numpy as np
from kafka_balancer.model.policy.fields import MAX_PLANNING_SECONDS_LIMIT
from kafka_balancer.planner import OperationOptions, PlannerOptions, PlanningError, plan

from bench.synthetic import (
    SCALE_ROWS,
    SHAPES,
    broker_disk,
    disk_lower_bound,
    seed_range,
    skewed_cluster,
    with_disk_capacity,
    with_log_dirs,
)


def _spread(summary: dict[str, Any]) -> dict[str, tuple[float, float]]:
    after = summary["groups"]["cluster"]["after"]
    return {k: (round(v["maxOverAvg"], 3), round(v["minOverAvg"], 3)) for k, v in after.items() if k != "brokers"}


# The benches measure the search to its end, so that their figures do not depend on the machine's
# speed; goals.maxPlanningSeconds's default (60 s) would cut the largest rows (scale --max-seconds).
SEARCH_TO_THE_END = MAX_PLANNING_SECONDS_LIMIT


def run_case(
    *,
    brokers: int,
    new: int,
    partitions: int,
    rf: float,
    seed: int,
    skew: float,
    max_replicas: int = 4000,
    disk_capacity: float | None = None,
    racks: int = 3,
    budget: float = SEARCH_TO_THE_END,
    leader_racks: int = 0,
    log_dirs: int = 0,
) -> dict[str, Any]:
    started = time.perf_counter()
    model = skewed_cluster(
        brokers=brokers, new_brokers=new, partitions=partitions, rf=rf, seed=seed, skew=skew, racks=racks
    )
    if disk_capacity is not None:
        model = with_disk_capacity(model, disk_capacity)
    if log_dirs:
        model = with_log_dirs(model, log_dirs, seed=seed)
    generated = time.perf_counter() - started
    op = OperationOptions("add-brokers", brokers=tuple(range(brokers - new, brokers))) if new else OperationOptions()
    started, cpu = time.perf_counter(), time.process_time()
    try:
        # The first ``leader_racks`` racks as preferredLeaderRacks (docs/goals.md, "Preferred leader racks").
        preferred = tuple(sorted({r for r in model.broker_racks if r})[:leader_racks])
        options = PlannerOptions(
            operation=op,
            max_replicas_per_broker=max_replicas,
            preferred_leader_racks=preferred,
            max_planning_seconds=budget,
        )
        proposal = plan(model, options)
    except PlanningError as error:
        return {
            "brokers": brokers,
            "partitions": partitions,
            "replicas": model.num_replicas,
            "refused": str(error),
            "planSeconds": round(time.perf_counter() - started, 2),
            "planCpuSeconds": round(time.process_time() - cpu, 2),
            "peakRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    summary = dict(proposal.summary)
    bound = disk_lower_bound(model)
    return {
        "brokers": brokers,
        "newBrokers": new,
        "partitions": partitions,
        "replicas": model.num_replicas,
        "seed": seed,
        "skew": skew,
        "generateSeconds": round(generated, 2),
        "planSeconds": round(seconds, 2),
        "planCpuSeconds": round(cpu, 2),
        "peakRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "moves": summary["moves"],
        "leaderChanges": summary["leaderChanges"],
        "bytesToMove": summary["bytesToMove"],
        "lowerBound": bound,
        "bytesOverBound": round(summary["bytesToMove"] / bound, 3) if bound else None,
        "balancedness": [summary["balancednessBefore"], summary["balancednessAfter"]],
        "goalsViolated": summary["goalsViolated"],
        "timeBudgetReached": summary.get("timeBudgetReached"),
        # Out-of-band distance (replica/leader slots) of the per-topic goals, before -> after.
        "topicSpread": {
            g: [summary["goals"][g]["violationBefore"], summary["goals"][g]["violationAfter"]]
            for g in ("topic-replica-distribution", "topic-leader-distribution")
            if g in summary["goals"]
        },
        "spreadAfter": _spread(summary),
        "leadersRounded": _leaders_rounded(summary),
        **_leader_racks(summary),
        **_log_dirs(summary),
    }


def _leader_racks(summary: dict[str, Any]) -> dict[str, Any]:
    """With preferred leader racks: partitions led from outside their rack before -> after, and the
    leader count's max/avg per group and leader tier after."""
    racks = summary.get("preferredLeaderRacks")
    if racks is None:
        return {}
    tiers = {k: round(v["maxOverAvg"], 3) for k, v in racks["after"]["leaders"].items()}
    return {"leaderRacks": {"misled": [racks["misledBefore"], racks["misledAfter"]], "leadersMaxOverAvg": tiers}}


def _log_dirs(summary: dict[str, Any]) -> dict[str, Any]:
    """On JBOD brokers: directories out of their broker's band before -> after, the largest directory
    over its target after, and the replicas and bytes moved between a broker's directories."""
    dirs = summary.get("logDirs")
    if dirs is None:
        return {}
    return {
        "logDirsOutOfBand": [dirs["before"]["outOfBand"], dirs["after"]["outOfBand"]],
        "logDirMaxOverTarget": round(dirs["after"]["maxOverTarget"], 3),
        "movesBetweenDirs": dirs["movesBetweenDirs"],
        "bytesBetweenDirs": dirs["bytesBetweenDirs"],
    }


def _leaders_rounded(summary: dict[str, Any]) -> bool:
    """Every broker's leader count at the group average rounded down or up."""
    for group in summary["groups"].values():
        leaders = group["after"]["leaders"]
        avg = leaders["avg"]
        if leaders["maxOverAvg"] * avg > math.ceil(avg) + 1e-6 or leaders["minOverAvg"] * avg < math.floor(avg) - 1e-6:
            return False
    return True


def quality(args: argparse.Namespace) -> None:
    cases = [
        {"brokers": 12, "new": 3, "partitions": 2000, "rf": 3, "seed": 7, "skew": 1.0},
        {"brokers": 15, "new": 3, "partitions": 5000, "rf": 3, "seed": 1, "skew": 2.0},
        {"brokers": 24, "new": 6, "partitions": 20000, "rf": 3, "seed": 2, "skew": 1.0},
        {"brokers": 30, "new": 6, "partitions": 20000, "rf": 2.5, "seed": 4, "skew": 2.0},
    ]
    for case in cases[: args.cases]:
        print(json.dumps(run_case(**case)))


def scale(args: argparse.Namespace) -> None:
    result = run_case(
        brokers=args.brokers,
        new=args.new_brokers,
        partitions=args.partitions,
        rf=args.rf,
        seed=args.seed,
        skew=1.0,
        max_replicas=args.max_replicas,
        disk_capacity=args.disk_capacity,
        racks=args.racks,
        budget=args.max_seconds,
        leader_racks=args.preferred_leader_racks,
        log_dirs=args.log_dirs,
    )
    print(json.dumps(result))


def table(args: argparse.Namespace) -> None:
    sizes = SCALE_ROWS
    print(f"machine: {platform.machine()} {platform.processor() or ''} python {platform.python_version()}")
    columns = "partitions | brokers | replicas | wall s | CPU s | peak RSS MiB | moves | bytes/bound | balancedness"
    print(f"| {columns} | goals not held | topic replica / leader slots out of band |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|")
    for partitions, brokers, rf in sizes[: args.sizes]:
        cmd = [sys.executable, "-m", "bench.planner", "scale", "--partitions", str(partitions)]
        cmd += ["--brokers", str(brokers), "--rf", str(rf), "--new-brokers", str(brokers // 12)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(
            f"| {partitions:,} | {brokers} | {r['replicas']:,} | {r['planSeconds']} | {r['planCpuSeconds']} | "
            f"{r['peakRssMiB']} | "
            f"{r['moves']:,} | {r['bytesOverBound']} | {r['balancedness'][0]} -> {r['balancedness'][1]} | "
            f"{', '.join(r['goalsViolated']) or '-'} | {_topic_slots(r)} |",
            flush=True,
        )


# `brokers`: many brokers at a fixed density (~100 partitions per broker, rf 3, 10 racks).
BROKER_ROWS = (1000, 2000, 5000, 10000)
PARTITIONS_PER_BROKER = 100
BROKER_RACKS = 10


def brokers(args: argparse.Namespace) -> None:
    """Time and memory against the broker count: each size in its own process, with a deadline;
    a size the planner refuses prints its refusal."""
    print(f"machine: {platform.machine()} {platform.processor() or ''} python {platform.python_version()}")
    print(f"{PARTITIONS_PER_BROKER} partitions per broker, rf 3, {BROKER_RACKS} racks, brokers // 12 new; "
          f"deadline {args.deadline} s per size")  # fmt: skip
    print("| brokers | partitions | replicas | wall s | CPU s | peak RSS MiB | moves | bytes/bound | goals not held |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for count in args.rows:
        partitions = count * PARTITIONS_PER_BROKER
        cmd = [sys.executable, "-m", "bench.planner", "scale", "--partitions", str(partitions), "--rf", "3"]
        cmd += ["--brokers", str(count), "--new-brokers", str(count // 12), "--racks", str(BROKER_RACKS)]
        used = _children_cpu()
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.deadline, check=True).stdout
        except subprocess.TimeoutExpired:  # killed and waited for: its CPU time is in the children's
            cpu = round(_children_cpu() - used, 1)
            print(f"| {count:,} | {partitions:,} | | no answer after {args.deadline} | {cpu} | | | | |", flush=True)
            continue
        r = json.loads(out.strip().splitlines()[-1])
        head = f"| {count:,} | {partitions:,} | {r['replicas']:,} | {r['planSeconds']} | {r['planCpuSeconds']} | "
        head += f"{r['peakRssMiB']} | "
        if "refused" in r:
            print(f"{head}refused: {r['refused']} | | |", flush=True)
            continue
        goals = ", ".join(r["goalsViolated"]) or "-"
        print(f"{head}{r['moves']:,} | {r['bytesOverBound']} | {goals} |", flush=True)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def seeds(args: argparse.Namespace) -> None:
    """Bytes over the disk-only bound and the goals not held, seed by seed, for one shape."""
    shape = SHAPES[args.shape]
    print(f"shape {args.shape}: {shape}")
    print("| seed | plan s | moves | bytes/bound | goals not held | leader counts at the rounded average |")
    print("|---:|---:|---:|---:|---|---|")
    over = []
    for seed in args.seeds:
        r = run_case(
            brokers=shape["brokers"],
            new=shape["new_brokers"],
            partitions=shape["partitions"],
            rf=shape["rf"],
            seed=seed,
            skew=shape["skew"],
        )
        if r["bytesOverBound"] is not None and r["bytesOverBound"] > args.limit:
            over.append(seed)
        print(
            f"| {seed} | {r['planSeconds']} | {r['moves']:,} | {r['bytesOverBound']} | "
            f"{', '.join(r['goalsViolated']) or '-'} | {'yes' if r['leadersRounded'] else 'no'} |",
            flush=True,
        )
    print(f"seeds over {args.limit}x the bound: {', '.join(map(str, over)) or 'none'}")


def capacity(args: argparse.Namespace) -> None:
    """Clusters whose heaviest brokers start above the disk limit (disk capacity = factor x the average use)."""
    print(f"disk capacity {args.disk_capacity} x the average broker's use (limit {0.8 * args.disk_capacity:.3g}x)")
    print("| seed | plan s | moves | bytes/bound | goals not held |")
    print("|---:|---:|---:|---:|---|")
    for seed in args.seeds:
        r = run_case(
            brokers=args.brokers,
            new=args.new_brokers,
            partitions=args.partitions,
            rf=3,
            seed=seed,
            skew=1.0,
            disk_capacity=args.disk_capacity,
        )
        print(
            f"| {seed} | {r['planSeconds']} | {r['moves']:,} | {r['bytesOverBound']} | "
            f"{', '.join(r['goalsViolated']) or '-'} |",
            flush=True,
        )


def offline(args: argparse.Namespace) -> None:
    """fix-offline-replicas at scale: the broker of median disk use dies on an even cluster whose disks
    are near full (capacity = factor x the average use), so its replicas need room on the others."""
    model = skewed_cluster(
        brokers=args.brokers, new_brokers=0, partitions=args.partitions, rf=args.rf, seed=args.seed, skew=0.0
    )
    if args.disk_capacity is not None:
        model = with_disk_capacity(model, args.disk_capacity)
    disk = broker_disk(model)
    over = int((disk > 0.8 * model.capacity[:, 0]).sum())
    victim = int(np.argsort(disk, kind="stable")[disk.size // 2])
    alive = model.broker_alive.copy()
    alive[victim] = False
    model = dataclasses.replace(model, broker_alive=alive)
    offline_replicas = int((model.replicas == victim).sum())
    print(
        f"{model.num_replicas:,} replicas, {over} brokers above the disk limit before broker "
        f"{int(model.broker_ids[victim])} died with {offline_replicas:,}"
    )
    started = time.perf_counter()
    try:
        options = PlannerOptions(
            operation=OperationOptions("fix-offline-replicas"),
            max_replicas_per_broker=args.max_replicas,
            max_planning_seconds=SEARCH_TO_THE_END,
        )
        proposal = plan(model, options)
    except PlanningError as error:
        print(f"failed after {time.perf_counter() - started:.2f} s: {error}")
        return
    seconds = time.perf_counter() - started
    moves = int(proposal.summary["moves"])
    print(
        f"planned in {seconds:.2f} s, peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB: "
        f"{moves:,} replica moves ({moves - offline_replicas:,} beyond the offline replicas, to make room), "
        f"{proposal.summary['bytesToMove'] / 1e12:,.1f} TB"
    )


def _topic_slots(result: dict[str, Any]) -> str:
    spread = result["topicSpread"]
    return " / ".join(f"{int(a):,} -> {int(b):,}" for a, b in spread.values())


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.planner")
    sub = parser.add_subparsers(dest="command", required=True)
    q = sub.add_parser("quality")
    q.add_argument("--cases", type=int, default=4)
    q.set_defaults(func=quality)
    s = sub.add_parser("scale")
    s.add_argument("--partitions", type=int, default=130000)
    s.add_argument("--brokers", type=int, default=96)
    s.add_argument("--rf", type=float, default=2.46)
    s.add_argument("--new-brokers", type=int, default=8)
    s.add_argument("--seed", type=int, default=1)
    # 1.3M replicas on 270 brokers is ~4,800 per broker: above Kafka's 4,000 guidance, as in the reports.
    s.add_argument("--max-replicas", type=int, default=12000)
    s.add_argument("--disk-capacity", type=float, default=None, help="x the average broker's disk use")
    s.add_argument("--racks", type=int, default=3)
    s.add_argument("--max-seconds", type=float, default=SEARCH_TO_THE_END, help="the planner's time budget")
    s.add_argument("--preferred-leader-racks", type=int, default=0, help="lead from the first N racks")
    s.add_argument("--log-dirs", type=int, default=0, help="JBOD: N log directories per broker (bench.synthetic)")
    s.set_defaults(func=scale)
    e = sub.add_parser("seeds")
    e.add_argument("--shape", choices=sorted(SHAPES), default="mixed-rf")
    e.add_argument("--seeds", type=seed_range, default=seed_range("1-8"), help="e.g. 1-8")
    e.add_argument("--limit", type=float, default=1.15, help="bytes/bound the issue allows")
    e.set_defaults(func=seeds)
    c = sub.add_parser("capacity")
    c.add_argument("--partitions", type=int, default=20000)
    c.add_argument("--brokers", type=int, default=24)
    c.add_argument("--new-brokers", type=int, default=6)
    c.add_argument("--disk-capacity", type=float, default=1.3)
    c.add_argument("--seeds", type=seed_range, default=seed_range("1-4"), help="e.g. 1-4")
    c.set_defaults(func=capacity)
    o = sub.add_parser("offline")
    o.add_argument("--partitions", type=int, default=130000)
    o.add_argument("--brokers", type=int, default=96)
    o.add_argument("--rf", type=float, default=2.46)
    o.add_argument("--seed", type=int, default=1)
    o.add_argument("--disk-capacity", type=float, default=1.3, help="x the average broker's disk use")
    o.add_argument("--max-replicas", type=int, default=12000)  # as scale
    o.set_defaults(func=offline)
    t = sub.add_parser("table")
    t.add_argument("--sizes", type=int, default=4)
    t.set_defaults(func=table)
    b = sub.add_parser("brokers")
    b.add_argument("--rows", type=lambda text: [int(x) for x in text.split(",")], default=list(BROKER_ROWS))
    b.add_argument("--deadline", type=float, default=900.0, help="seconds per size before it counts as no answer")
    b.set_defaults(func=brokers)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()

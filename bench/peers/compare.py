"""Side by side with open-source peers on the same synthetic clusters (not part of `make test`).

    .venv/bin/python -m bench.peers.compare --partitions 2000 [--partitions 20000] [--skip ku-genetic]
        [--threshold 1.06]   (extra kafka-balancer rows with a tighter balanceThreshold)

Peers run in their own venvs (never the project's: kafka-tools overwrites kafka-python's package):

    python3 -m venv bench/peers/.venvs/kafka-utils && bench/peers/.venvs/kafka-utils/bin/pip install kafka-utils
    python3 -m venv bench/peers/.venvs/kafka-tools && bench/peers/.venvs/kafka-tools/bin/pip install kafka-tools six

Every tool gets the same cluster (bench/synthetic.py: 3 equal racks, skewed weights, new empty
brokers) and each result is judged here by the same code: time, replica/size/leader spread
(max/avg over brokers), partitions whose replicas crowd a rack, replica moves and bytes moved.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kafka_balancer.model import ClusterModel
from kafka_balancer.planner import PlannerOptions, plan

from bench.synthetic import skewed_cluster

HERE = Path(__file__).resolve().parent
PEERS = {
    "ku-count": ("kafka-utils", "run_kafka_utils.py", "count"),
    "ku-genetic": ("kafka-utils", "run_kafka_utils.py", "genetic"),
    "kt-size": ("kafka-tools", "run_kafka_tools.py", "size"),
    "kt-count": ("kafka-tools", "run_kafka_tools.py", "count"),
    "kt-rackaware": ("kafka-tools", "run_kafka_tools.py", "rackaware"),
    "kt-leader": ("kafka-tools", "run_kafka_tools.py", "leader"),
}
Assignment = dict[tuple[str, int], list[int]]


def judge(model: ClusterModel, before: Assignment, after: Assignment) -> dict[str, Any]:
    sizes = {(p.topic, p.partition): p.size_bytes for p in model.partitions()}
    rack = {b.id: b.rack for b in model.brokers()}
    nracks = len(set(rack.values()))
    replicas: Counter[int] = Counter(dict.fromkeys(rack, 0))
    disk: Counter[int] = Counter(dict.fromkeys(rack, 0))
    leaders: Counter[int] = Counter(dict.fromkeys(rack, 0))
    per_topic: Counter[tuple[str, int]] = Counter()
    crowded = moves = 0
    moved_bytes = 0.0
    for key, reps in after.items():
        for b in reps:
            replicas[b] += 1
            disk[b] += int(sizes[key])
            per_topic[(key[0], b)] += 1
        leaders[reps[0]] += 1
        if max(Counter(rack[b] for b in reps).values()) > math.ceil(len(reps) / nracks):
            crowded += 1
        added = set(reps) - set(before[key])
        moves += len(added)
        moved_bytes += len(added) * sizes[key]

    def spread(c: Counter[int]) -> float:
        avg = sum(c.values()) / len(c)
        return round(max(c.values()) / avg, 3) if avg else 1.0

    return {
        "topicSlotsOut": _topic_slots_out(per_topic, list(rack)),
        "replicaSpread": spread(replicas),
        "sizeSpread": spread(disk),
        "leaderSpread": spread(leaders),
        "rackViolations": crowded,
        "moves": moves,
        "bytesMoved": moved_bytes,
    }


def _topic_slots_out(per_topic: Counter[tuple[str, int]], brokers: list[int]) -> int:
    """(topic, broker) replica counts outside the topic's band: [floor(0.9 x avg), ceil(1.1 x avg)] of the
    topic's replicas over all brokers (kafka-balancer's topic-replica-distribution goal at its default)."""
    totals: Counter[str] = Counter()
    for (topic, _), n in per_topic.items():
        totals[topic] += n
    out = 0
    for topic, total in totals.items():
        avg = total / len(brokers)
        lo, hi = math.floor(avg * 0.9 + 1e-9), math.ceil(avg * 1.1 - 1e-9)
        out += sum(max(0, lo - per_topic[(topic, b)]) + max(0, per_topic[(topic, b)] - hi) for b in brokers)
    return out


def fewest_moves_for_even_counts(model: ClusterModel) -> int:
    """Replica moves any plan needs to bring every broker to the average replica count rounded down
    or up (the best replica max/avg there is): each broker below the rounded-down average must
    receive the difference, each one above the rounded-up average must give it away."""
    counts = Counter(dict.fromkeys((b.id for b in model.brokers()), 0))
    for p in model.partitions():
        counts.update(p.replicas)
    avg = sum(counts.values()) / len(counts)
    short = sum(max(0, math.floor(avg) - c) for c in counts.values())
    excess = sum(max(0, c - math.ceil(avg)) for c in counts.values())
    return max(short, excess)


def run_peer(name: str, source: Path, workdir: Path) -> tuple[Assignment, float, float]:
    venv, script, mode = PEERS[name]
    python = HERE / ".venvs" / venv / "bin" / "python"
    target = workdir / f"{name}.json"
    subprocess.run([str(python), str(HERE / script), mode, str(source), str(target)], check=True, capture_output=True)
    out = json.loads(target.read_text())
    return {(t, p): list(r) for t, p, r in out["partitions"]}, out["seconds"], out["cpuSeconds"]


def compare(partitions: int, skip: set[str], thresholds: list[float]) -> None:
    brokers = 12 if partitions <= 5000 else 24
    model = skewed_cluster(brokers=brokers, new_brokers=brokers // 4, partitions=partitions, seed=7)
    before = {(p.topic, p.partition): list(p.replicas) for p in model.partitions()}
    rows: list[tuple[str, float, float, dict[str, Any]]] = [("before", 0.0, 0.0, judge(model, before, before))]
    for threshold in [None, *thresholds]:
        options = PlannerOptions() if threshold is None else PlannerOptions(balance_threshold=threshold)
        started, cpu = time.perf_counter(), time.process_time()
        proposal = plan(model, options)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        ours = dict(before)
        for t in proposal.plan.partitions:
            ours[(t.topic, t.partition)] = list(t.replicas)
        name = "kafka-balancer" if threshold is None else f"kafka-balancer, balanceThreshold {threshold}"
        rows.append((name, seconds, cpu, judge(model, before, ours)))
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "cluster.json"
        data = {
            "brokers": {str(b.id): b.rack for b in model.brokers()},
            "partitions": [[p.topic, p.partition, list(p.replicas), p.size_bytes] for p in model.partitions()],
        }
        source.write_text(json.dumps(data))
        for name in PEERS:
            if name in skip:
                continue
            after, seconds, cpu = run_peer(name, source, Path(tmp))
            rows.append((name, seconds, cpu, judge(model, before, after)))
    print(
        f"\n{partitions:,} partitions, {model.num_replicas:,} replicas, {brokers} brokers ({brokers // 4} new), 3 racks"
    )
    columns = (
        "wall s | CPU s | replica max/avg | size max/avg | leader max/avg | topic slots out | rack violations "
        "| moves | TB moved"
    )
    print(f"| tool | {columns} |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, seconds, cpu, r in rows:
        print(
            f"| {name} | {seconds:.2f} | {cpu:.2f} | {r['replicaSpread']} | {r['sizeSpread']} | {r['leaderSpread']} | "
            f"{r['topicSlotsOut']:,} | {r['rackViolations']} | {r['moves']:,} | {r['bytesMoved'] / 1e12:.1f} |",
            flush=True,
        )
    fewest = fewest_moves_for_even_counts(model)
    print(f"fewest replica moves for even replica counts (average rounded down or up): {fewest:,}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.peers.compare")
    parser.add_argument("--partitions", type=int, action="append", default=[])
    parser.add_argument("--skip", action="append", default=[], choices=sorted(PEERS))
    parser.add_argument("--threshold", type=float, action="append", default=[])
    args = parser.parse_args()
    for partitions in args.partitions or [2000]:
        compare(partitions, set(args.skip), args.threshold)


if __name__ == "__main__":
    main()

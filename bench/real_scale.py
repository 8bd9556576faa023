"""Real Kafka at the design's density: 6 brokers in 3 racks, about 4,000 replicas each once balanced.

    .venv/bin/python -m bench.real_scale [--replicas 23400] [--topics 300] [--durable-topics 30] [--record-topics 150]
                                         [--data-mb 1000] [--throttle 10MB/s] [--heap-mb 1024]
                                         [--only ours]

One sitting builds the same cluster twice (bench/real_scale_cluster.py: every partition on brokers 1-4,
preferred leaders on the higher ids, then a rolling restart of brokers 1-4 that leaves most partitions
led by another replica than their first), one after the other, and runs on each:

* ours: the operator (kopf, its own process, against the sandbox's Kubernetes API emulator) until a
  Manual BalancePolicy's status holds its proposal (bench/real_scale_operator.py); then
  ``kafka-balancer snapshot``, ``plan`` (the proposal: replica moves and leader changes), ``execute``
  of the proposal under the throttle (moves with the executor's per-broker limits, then the preferred-
  leader elections of every leader change), then broker 1 restarts and ``snapshot``, ``plan`` and
  ``execute`` again bring leadership back (a proposal of elections only);
* Kafka's tools on the second cluster: the same plan file through ``kafka-reassign-partitions --execute
  --throttle`` and ``--verify`` until done, then ``kafka-leader-election --election-type PREFERRED
  --all-topic-partitions``; after the same restart of broker 1, the same election again.

Each command runs in its own process: wall time, its CPU time (user+sys) and peak memory. From outside
(bench/real_scale_watch.py) every 2 s: each partition's ISR against its min ISR, the brokers' throttle
rates, and the leaders before and after. Before and after, the end offset and a digest of every record
of every partition with records, and afterwards what is left: throttles on any broker or topic,
reassignments in progress. Prints one table; the load average is printed with each step.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from kafka_balancer.executor import parse_rate
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import (
    FOLLOWER_THROTTLE_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLE_RATE,
    LEADER_THROTTLED_REPLICAS,
)
from kafka_balancer.sandbox.ports import free_port_range
from kafka_balancer.sandbox.real import RealCluster, RealClusterOptions
from kafka_balancer.sandbox.traffic import read_digests

from bench import real_scale_runs as runs
from bench.real_scale_cluster import BROKERS, RACKS, Layout, LayoutOptions, build, layout, wait_in_sync
from bench.real_scale_operator import reconcile
from bench.real_scale_watch import Seen, Watch

RESTARTED = 1
# The brokers' own settings of a dense cluster: logs recovered with more threads after a restart.
DENSE_BROKER_CONFIGS = {"num.recovery.threads.per.data.dir": "2"}


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


class Sitting:
    """One side's cluster and the figures it gives, as rows of the final table."""

    def __init__(self, side: str, args: argparse.Namespace, plan: Layout, folder: Path) -> None:
        self.side = side
        self.args = args
        self.layout = plan
        self.folder = folder
        self.rows: dict[str, str] = {}
        self.cluster = RealCluster(
            RealClusterOptions(
                brokers=BROKERS,
                racks=RACKS,
                log_dirs=1,
                port_base=free_port_range(BROKERS + 1),
                heap_mb=args.heap_mb,
                broker_configs=DENSE_BROKER_CONFIGS,
                data_dir=folder / "kafka",
                # A dense broker loads thousands of logs before it registers, and hands thousands of
                # leaderships over before it stops: minutes each on a loaded 2-core machine.
                start_timeout_s=1800.0,
                stop_timeout_s=900.0,
            )
        )

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    def note(self, name: str, m: runs.Measured, extra: str = "") -> None:
        self.rows[name] = f"{m.wall:7.1f} s (CPU {m.cpu:6.1f} s, {m.rss_mb:5.0f} MB{', ' + extra if extra else ''})"
        print(f"  {self.side} {name}: {self.rows[name]} [load {load()}]", flush=True)

    def watch(self) -> Watch:
        return Watch(self.bootstrap, self.layout.min_isr(), list(range(1, BROKERS + 1)))

    def start(self) -> dict[tuple[str, int], tuple[int, str]]:
        started = time.monotonic()
        self.cluster.start()
        steps = build(self.cluster, self.layout)
        took = ", ".join(f"{k} {v:.0f} s" for k, v in steps.items())
        print(f"  {self.side}: cluster started and built in {time.monotonic() - started:.0f} s ({took})", flush=True)
        return read_digests(self.bootstrap, self.layout.with_records())

    def restart(self) -> None:
        self.cluster.stop_broker(RESTARTED)
        self.cluster.start_broker(RESTARTED)
        wait_in_sync(self.bootstrap, self.layout.partitions)

    def moved(self, seen: Seen) -> str:
        return (
            f"{seen.leader_changes} leader changes, throttled {seen.throttled_seconds:.0f} s, "
            f"lowest ISR - min ISR {seen.lowest_margin}, {len(seen.below_min_isr)} below min ISR"
        )

    def leftovers(self) -> str:
        adapter = KafkaAdapter(ConnectionSpec(self.bootstrap, request_timeout_s=60))
        try:
            ongoing = adapter.list_reassignments()
            topics = adapter.topic_configs(sorted(t.name for t in self.layout.topics))
            brokers = adapter.broker_configs(range(1, BROKERS + 1))
        finally:
            adapter.close()
        listed = [t for t, c in topics.items() if any(c.get(k) for k in _LISTS)]
        rated = [b for b, c in brokers.items() if any(c.get(k) not in (None, _UNSET) for k in _RATES)]
        return f"{len(ongoing)} reassignments, {len(listed)} topics and {len(rated)} brokers with throttles"


_LISTS = (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)
_RATES = (LEADER_THROTTLE_RATE, FOLLOWER_THROTTLE_RATE)
_UNSET = str(2**63 - 1)  # Kafka's default rate: no throttle


def run_ours(s: Sitting) -> None:
    snap, work = s.folder / "snapshot.json", s.folder
    m, proposal = reconcile(s.bootstrap, work)
    s.note(
        "operator: first proposal", m, f"{proposal.get('moves')} moves, {proposal.get('leaderChanges')} leader changes"
    )
    s.note("snapshot", runs.snapshot(s.bootstrap, snap))
    m = runs.plan(snap, work)
    summary = (work / "summary.json").read_text()
    s.note("plan", m, summary_line(summary))
    with s.watch() as w:
        m = runs.execute(s.bootstrap, work / "proposal.json", s.args.throttle, work / "state.json")
    s.note("execute", m, s.moved(w.seen))
    s.rows["left after execute"] = s.leftovers()
    s.restart()
    again = work / "after-restart"
    again.mkdir()
    s.note("snapshot after restart", runs.snapshot(s.bootstrap, again / "snapshot.json"))
    m = runs.plan(again / "snapshot.json", again)
    s.note("plan after restart", m, summary_line((again / "summary.json").read_text()))
    with s.watch() as w:
        m = runs.execute(s.bootstrap, again / "proposal.json", s.args.throttle, again / "state.json")
    s.note("elect after restart", m, f"{w.seen.leader_changes} leader changes")


def run_kafka(s: Sitting, plan_file: Path) -> None:
    # The same reassignments without the log directories the plan names: those are the other cluster's
    # paths (every broker has one directory, so they choose nothing).
    plan = json.loads(plan_file.read_text())
    for entry in plan["partitions"]:
        entry.pop("log_dirs", None)
    plain = s.folder / "plan.json"
    plain.write_text(json.dumps(plan))
    with s.watch() as w:
        m = runs.kafka_reassign(s.bootstrap, plain, parse_rate(s.args.throttle))
        e = runs.kafka_elect_all(s.bootstrap)
    s.note("reassign (execute + verify)", m, f"{m.calls} calls")
    s.note("elect all", e)
    s.note("reassign + elect", m + e, s.moved(w.seen))
    s.rows["left after execute"] = s.leftovers()
    s.restart()
    with s.watch() as w:
        e = runs.kafka_elect_all(s.bootstrap)
    s.note("elect after restart", e, f"{w.seen.leader_changes} leader changes")


def summary_line(text: str) -> str:
    import json

    summary = json.loads(text)
    return f"{summary['moves']} moves, {summary['bytesToMove'] / 1e6:.0f} MB, {summary['leaderChanges']} leader changes"


def sitting(side: str, args: argparse.Namespace, plan: Layout, root: Path) -> Sitting:
    folder = root / side
    folder.mkdir()
    s = Sitting(side, args, plan, folder)
    try:
        before = s.start()
        if side == "ours":
            run_ours(s)
        else:
            run_kafka(s, root / "ours" / "plan.json")
        after = read_digests(s.bootstrap, plan.with_records())
        lost = [k for k, v in before.items() if after.get(k) != v]
        s.rows["records"] = f"{len(before)} partitions read back, {len(lost)} changed" + (
            f": {lost[:5]}" if lost else ""
        )
    finally:
        s.cluster.stop()
        shutil.rmtree(folder / "kafka", ignore_errors=True)
    return s


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.real_scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=LayoutOptions.replicas)
    parser.add_argument("--topics", type=int, default=LayoutOptions.topics)
    parser.add_argument("--durable-topics", type=int, default=LayoutOptions.durable_topics)
    parser.add_argument("--record-topics", type=int, default=LayoutOptions.record_topics)
    parser.add_argument("--data-mb", type=int, default=LayoutOptions.data_bytes // 1_000_000)
    parser.add_argument("--throttle", default="10MB/s", help="replication throttle per broker, both sides")
    parser.add_argument("--heap-mb", type=int, default=1024, help="heap of each broker JVM")
    # Kafka's tools run the plan our side makes in the same sitting: they cannot run alone.
    parser.add_argument("--only", choices=("ours",), help="our side only, without Kafka's tools")
    args = parser.parse_args()
    plan = layout(
        LayoutOptions(args.replicas, args.topics, args.durable_topics, args.record_topics, args.data_mb * 1_000_000)
    )
    print(
        f"{len(plan.topics)} topics, {plan.partitions} partitions, {plan.replicas} replicas "
        f"({plan.replicas / BROKERS:.0f} per broker once balanced), {len(plan.records)} topics with "
        f"{plan.data_bytes / 1e6:.0f} MB of records; throttle {args.throttle}, heap {args.heap_mb} MB [load {load()}]",
        flush=True,
    )
    root = Path(tempfile.mkdtemp(prefix="real-scale-"))
    try:
        sides = [args.only] if args.only else ["ours", "kafka"]
        done = [sitting(side, args, plan, root) for side in sides]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for s in done:
        print(f"\n{s.side}")
        for name, value in s.rows.items():
            print(f"  {name:28s} {value}")


if __name__ == "__main__":
    main()

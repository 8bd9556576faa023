"""Copy rate of an execution on real Kafka brokers: bytes copied per second as a share of B x T.

    .venv/bin/python -m bench.real_copy_rate [--throttle 10MB/s] [--receivers 3] [--sources 3]
                                             [--seconds 45] [--partitions 30] [--per-broker 5]
                                             [--poll 1] [--runs 2] [--record-bytes 4096]
                                             [--batch-bytes 65536] [--all-at-once]
                                             [--broker-config KEY=VALUE ...] [--trace]

A local KRaft cluster (kafka_balancer.sandbox.real) of ``--sources`` + ``--receivers`` brokers; one
topic of ``--partitions`` partitions with one replica each, all on the source brokers, filled with
B x T x ``--seconds`` bytes (equal partitions, records and producer batches of the given sizes). The
plan moves every partition onto a receiver, the same bytes onto each; ``kafka-balancer execute
--throttle T`` runs it (the CLI, in its own process). Run 2 moves everything back (the old sources
receive), and so on for ``--runs``. ``--all-at-once`` runs the same plan without the executor, for
comparison: the same throttles, every move submitted at once (what Kafka's throttle allows by itself).

Throttle T on B receiving brokers allows at most B x T bytes/s (with at least as many sources as
receivers, each source's leader throttle allows what its receiver takes). The copy window runs from
the first poll (every 0.2 s, from this process) where ListPartitionReassignments lists a reassignment
to the last one where it lists any; the bytes are the moved replicas' sizes (DescribeLogDirs) before
the run. The receivers' bytes, read every second, give the rate of the middle of the run (without
its first and last 5 s) apart from the whole.

The record batches matter: Kafka's replication quota counts every byte of a fetch response, and a
follower's fetch (``replica.fetch.max.bytes``, 1 MiB per partition) ends with the part of a batch
that did not fit, which the follower drops and fetches again. Batches near 1 MiB (a librdkafka
producer's default ``batch.size`` is 1 MB) waste up to a batch per fetch: ``--batch-bytes 1000000``
shows it.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafka_balancer.executor import parse_rate
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import TopicPartition
from kafka_balancer.kafka.throttles import remove_throttles, set_throttles
from kafka_balancer.model import PartitionTarget, ReassignmentPlan
from kafka_balancer.sandbox.ports import free_port_range
from kafka_balancer.sandbox.real import RealCluster, RealClusterOptions
from kafka_balancer.sandbox.traffic import RecordWriter, TopicSpec, create_topics

TOPIC = "copy"
CLI = Path(sys.executable).parent / "kafka-balancer"
EDGE_S = 5.0  # the start and the end of a run, left out of its middle


@dataclass
class Watch:
    """What this process sees of a run: the copy window and the receivers' bytes over time."""

    first: float | None = None  # first poll that listed a reassignment
    # Last poll that listed one: every move can end at once mid-run, so polls go on until execute ends.
    last: float | None = None
    received: list[tuple[float, int]] = field(default_factory=list)  # (time, bytes on the receivers)

    def bytes_at(self, when: float) -> float:
        """The receivers' bytes at ``when``, linear between the readings around it."""
        for (t0, n0), (t1, n1) in itertools.pairwise(self.received):
            if t0 <= when <= t1:
                return n0 + (n1 - n0) * (when - t0) / (t1 - t0)
        raise SystemExit(f"no size readings around {when:.1f}: the run is too short to have a middle")

    def per_second(self) -> str:
        steps = itertools.pairwise(self.received)
        return " ".join(f"{(n1 - n0) / (t1 - t0) / 1e6:.0f}" for (t0, n0), (t1, n1) in steps)


def _watch(bootstrap: str, receivers: set[int], done: threading.Event, watch: Watch) -> None:
    adapter = KafkaAdapter(ConnectionSpec(bootstrap, request_timeout_s=10))
    next_size = 0.0
    try:
        while not done.is_set():
            now = time.monotonic()
            if adapter.list_reassignments():
                watch.first = now if watch.first is None else watch.first
                watch.last = now
            if watch.first is not None and now >= next_size:
                sizes = adapter.replica_sizes()
                watch.received.append((now, sum(n for (_, b), n in sizes.items() if b in receivers)))
                next_size = now + 1.0
            time.sleep(0.2)
    finally:
        adapter.close()


def fill(bootstrap: str, sources: list[int], total_bytes: int, args: argparse.Namespace) -> float:
    """Create the topic on the sources and write ``total_bytes``, the same into every partition;
    the seconds it took."""
    create_topics(bootstrap, [TopicSpec(TOPIC, tuple((sources[p % len(sources)],) for p in range(args.partitions)))])
    writer = RecordWriter(bootstrap, record_bytes=args.record_bytes, batch_bytes=args.batch_bytes)
    started = time.monotonic()
    writer.write(TOPIC, range(args.partitions), total_bytes // args.partitions // args.record_bytes)
    writer.flush(300)
    return time.monotonic() - started


@dataclass(frozen=True)
class Run:
    bytes: int  # the moved replicas' sizes before the run
    seconds: float  # the copy window
    middle_rate: float  # bytes/s on the receivers without the first and last EDGE_S seconds
    wall: float  # the whole run: throttles, submissions, the copy, elections, removing the throttles


def run_execute(bootstrap: str, plan: ReassignmentPlan, args: argparse.Namespace) -> None:
    """``kafka-balancer execute`` with the throttle, as an operator runs it."""
    with tempfile.TemporaryDirectory(prefix="copy-rate-") as tmp:
        plan_file = Path(tmp) / "plan.json"
        plan_file.write_text(plan.dumps())
        command = [str(CLI), "execute", "--bootstrap-servers", bootstrap, "--plan", str(plan_file), "--quiet"]
        command += ["--throttle", args.throttle, "--state", str(Path(tmp) / "state.json")]
        command += ["--concurrent-moves-per-broker", str(args.per_broker), "--poll-interval", f"{args.poll:g}"]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"execute failed ({result.returncode}): {result.stdout[-800:]} {result.stderr[-800:]}")


def run_all_at_once(bootstrap: str, plan: ReassignmentPlan, args: argparse.Namespace) -> None:
    """Kafka's own ceiling, without the executor: the same throttles, every move submitted at once,
    then wait until Kafka lists none."""
    port = KafkaAdapter(ConnectionSpec(bootstrap))
    try:
        model = port.read_cluster(with_sizes=False)
        moves = {
            TopicPartition(t.topic, t.partition): (
                model.replica_ids(model.partition_index(t.topic, t.partition)),
                t.replicas,
            )
            for t in plan.partitions
        }
        record = set_throttles(port, parse_rate(args.throttle), moves)
        try:
            port.alter_reassignments({tp: target for tp, (_, target) in moves.items()})
            while port.list_reassignments():
                time.sleep(0.2)
        finally:
            remove_throttles(port, record)
    finally:
        port.close()


def measure(bootstrap: str, plan: ReassignmentPlan, receivers: set[int], args: argparse.Namespace) -> Run:
    """Run the plan (``--all-at-once`` or ``kafka-balancer execute``) and measure the copy from outside."""
    adapter = KafkaAdapter(ConnectionSpec(bootstrap))
    try:
        moved = sum(n for (tp, b), n in adapter.replica_sizes().items() if b not in receivers and tp.topic == TOPIC)
    finally:
        adapter.close()
    watch, done = Watch(), threading.Event()
    watcher = threading.Thread(target=_watch, args=(bootstrap, receivers, done, watch), daemon=True)
    watcher.start()
    started = time.monotonic()
    try:
        (run_all_at_once if args.all_at_once else run_execute)(bootstrap, plan, args)
    finally:
        wall = time.monotonic() - started
        done.set()
        watcher.join(timeout=30)
    if watch.first is None or watch.last is None:
        raise SystemExit("no reassignment was seen: the copy window is unknown")
    if args.trace:
        print("  receivers, MB/s each second:", watch.per_second())
    start, end = watch.first + EDGE_S, watch.last - EDGE_S
    middle = (watch.bytes_at(end) - watch.bytes_at(start)) / (end - start)
    return Run(moved, watch.last - watch.first, middle, wall)


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.real_copy_rate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--throttle", default="10MB/s", help="T, the replication throttle per broker")
    parser.add_argument("--receivers", type=int, default=3, help="B, brokers receiving replicas")
    parser.add_argument("--sources", type=int, default=3, help="brokers holding the data at first")
    parser.add_argument("--seconds", type=float, default=45.0, help="the run's length at B x T")
    parser.add_argument("--partitions", type=int, default=30, help="partitions (= moves) of the topic")
    parser.add_argument("--per-broker", type=int, default=5, help="--concurrent-moves-per-broker")
    parser.add_argument("--poll", type=float, default=1.0, help="--poll-interval of execute, seconds")
    parser.add_argument("--runs", type=int, default=2, help="executions (each moves everything back)")
    parser.add_argument("--record-bytes", type=int, default=4096, help="size of the records written")
    parser.add_argument("--batch-bytes", type=int, default=65536, help="the producer's batch.size")
    parser.add_argument(
        "--all-at-once", action="store_true", help="no executor: the same throttles, every move submitted at once"
    )
    parser.add_argument(
        "--broker-config", action="append", default=[], metavar="KEY=VALUE", help="server.properties of every broker"
    )
    parser.add_argument("--trace", action="store_true", help="print the receivers' copy rate of every second")
    args = parser.parse_args()
    throttle = parse_rate(args.throttle)
    if args.sources < args.receivers:
        parser.error("--sources must be >= --receivers: each source's leader throttle is T as well")
    brokers = args.sources + args.receivers
    total = int(throttle * args.receivers * args.seconds)
    configs = dict(item.split("=", 1) for item in args.broker_config)
    options = RealClusterOptions(
        brokers=brokers, racks=min(3, brokers), port_base=free_port_range(brokers + 1), broker_configs=configs
    )
    print(
        f"{brokers} brokers, {args.partitions} partitions of {total / args.partitions / 1e6:.1f} MB "
        f"({total / 1e9:.2f} GB; records {args.record_bytes} B, batches {args.batch_bytes} B), "
        f"T={throttle / 1e6:g} MB/s, B={args.receivers}, {args.per_broker} moves per broker, poll {args.poll:g} s"
        + "".join(f", {k}={v}" for k, v in configs.items()),
        flush=True,
    )
    with RealCluster(options) as cluster:
        holders, takers = list(range(1, args.sources + 1)), list(range(args.sources + 1, brokers + 1))
        print(f"filled in {fill(cluster.bootstrap_servers, holders, total, args):.1f} s", flush=True)
        how = "every move at once, no executor" if args.all_at_once else "kafka-balancer execute"
        print(f"{how}\nrun  T MB/s  B  bytes MB  seconds  rate MB/s   share  middle  (ideal s, wall s)")
        for run in range(1, args.runs + 1):
            plan = ReassignmentPlan.of(
                PartitionTarget(TOPIC, p, (takers[p % len(takers)],)) for p in range(args.partitions)
            )
            m = measure(cluster.bootstrap_servers, plan, set(takers), args)
            allowed = throttle * len(takers)
            rate = m.bytes / m.seconds
            print(
                f"{run:3d}  {throttle / 1e6:6.1f}  {len(takers)}  {m.bytes / 1e6:8.1f}  {m.seconds:7.1f}  "
                f"{rate / 1e6:9.2f}  {rate / allowed:6.1%}  {m.middle_rate / allowed:6.1%}"
                f"  ({m.bytes / allowed:.1f}, {m.wall:.1f})",
                flush=True,
            )
            holders, takers = takers, holders[: len(takers)]


if __name__ == "__main__":
    main()

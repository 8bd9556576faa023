"""Pipe utilisation of the executor: achieved copy rate against what the throttle allows.

    .venv/bin/python -m bench.executor_pipe [--throttle 50MB/s] [--receivers 3] [--moves 300]
                                            [--per-broker 5] [--waves]

A cluster of ``--sources`` brokers holds the data; ``--receivers`` new brokers each receive
replicas of random sizes (20-200 MB, fixed seed), about the same number of bytes each. The executor runs the
plan over TCP with the real clients against the emulator, on the emulator's manual clock (so the
figures are emulated seconds, independent of this machine's speed). Throttle T on B receiving
brokers allows at most B x T bytes/s; the achieved rate is the bytes copied divided by the time
from the first submission to the last completion, both read from the emulator's side.

``--waves`` also runs the same plan the way batch executors do (submit a batch of at most
``--per-broker`` moves onto each broker, wait until every move of it finished, submit the next),
for comparison: once in plan order, and once in the order the executor starts moves in (its default
strategy), so that what waves cost is told apart from what the order gains.
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass

from kafka_balancer.executor import Executor, ExecutorOptions, Limits, MemoryExecutionStore, parse_rate
from kafka_balancer.executor.scheduler import strategy_named
from kafka_balancer.executor.tasks import build_tasks
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import TopicPartition
from kafka_balancer.kafka.throttles import remove_throttles, set_throttles
from kafka_balancer.model import ClusterBuilder, ClusterModel, PartitionTarget, ReassignmentPlan
from kafka_balancer.sandbox import EmulatedCluster
from kafka_balancer.sandbox.state import ClusterState


@dataclass
class Window:
    """First tick with a reassignment in flight, and the latest completion, in emulated seconds."""

    first: float | None = None
    last: float = 0.0

    def __call__(self, state: ClusterState) -> None:
        if self.first is None and state.reassigning:
            self.first = state.clock  # the tick after the first submission: exact to one tick
        if state.completed:
            self.last = max(self.last, state.completed[-1][2])


def build(sources: int, receivers: int, moves: int, seed: int) -> tuple[ClusterModel, ReassignmentPlan, float]:
    rng = random.Random(seed)
    b = ClusterBuilder(cluster_name="pipe-bench")
    for i in range(1, sources + receivers + 1):
        b.add_broker(i, rack=f"rack-{i % 3}")
    targets = []
    copied = 0.0
    # Each move goes to the receiver with the fewest bytes so far, as a planner balancing the new
    # brokers would do, so that B x T is the rate the plan can reach at best.
    incoming = dict.fromkeys(range(sources + 1, sources + receivers + 1), 0.0)
    for p in range(moves):
        replicas = [1 + (p + k) % sources for k in range(3)]
        size = rng.uniform(20e6, 200e6)
        b.add_partition("data", p, replicas, size_bytes=size)
        new = min(incoming, key=lambda r: (incoming[r], r))
        incoming[new] += size
        targets.append(PartitionTarget("data", p, (replicas[0], replicas[1], new)))
        copied += size
    return b.build(), ReassignmentPlan.of(targets), copied


def run_executor(model: ClusterModel, plan: ReassignmentPlan, throttle: int, per_broker: int, poll: float) -> Window:
    with EmulatedCluster.start(model) as cluster:
        window = Window()
        cluster.on_tick(window)
        port = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=30))
        try:
            options = ExecutorOptions(
                throttle_bytes_per_sec=throttle, limits=Limits(per_broker=per_broker), poll_interval_seconds=poll
            )
            result = Executor(port, plan, MemoryExecutionStore(), options, clock=cluster).run()
        finally:
            port.close()
        assert result.state.value == "Completed", result.reason
        return window


def in_executor_order(model: ClusterModel, plan: ReassignmentPlan) -> ReassignmentPlan:
    """The plan's moves in the order the executor starts them (its default strategy)."""
    tasks = strategy_named(ExecutorOptions().strategy).order(build_tasks(plan, model, {}), model)
    by_tp = {(t.topic, t.partition): t for t in plan.partitions}
    return ReassignmentPlan(tuple(by_tp[(t.tp.topic, t.tp.partition)] for t in tasks))


def waves_of(
    plan: ReassignmentPlan, current: dict[tuple[str, int], tuple[int, ...]], per_broker: int
) -> list[list[PartitionTarget]]:
    """Batches as a batch executor forms them: in order, at most ``per_broker`` moves onto each broker."""
    left, batches = list(plan.partitions), []
    while left:
        batch, counts, rest = [], dict[int, int](), []
        for t in left:
            adding = [b for b in t.replicas if b not in current[(t.topic, t.partition)]]
            if all(counts.get(b, 0) < per_broker for b in adding):
                batch.append(t)
                for b in adding:
                    counts[b] = counts.get(b, 0) + 1
            else:
                rest.append(t)
        batches.append(batch)
        left = rest
    return batches


def run_waves(model: ClusterModel, plan: ReassignmentPlan, throttle: int, per_broker: int, poll: float) -> Window:
    """A batch executor: throttle and submit a batch (``per_broker`` moves onto each broker), wait for all
    of them, repeat."""
    with EmulatedCluster.start(model) as cluster:
        window = Window()
        cluster.on_tick(window)
        port = KafkaAdapter(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=30))
        try:
            current = {(p.topic, p.partition): tuple(p.replicas) for p in model.partitions()}
            for chunk in waves_of(plan, current, per_broker):
                moves = {
                    TopicPartition(t.topic, t.partition): (current[(t.topic, t.partition)], t.replicas) for t in chunk
                }
                record = set_throttles(port, throttle, moves)
                port.alter_reassignments({tp: target for tp, (_, target) in moves.items()})
                while port.list_reassignments():
                    cluster.advance(poll)
                remove_throttles(port, record)
        finally:
            port.close()
        return window


def report(name: str, window: Window, copied: float, allowed: float, wall: float) -> None:
    elapsed = window.last - (window.first or 0.0)
    rate = copied / elapsed
    print(
        f"{name:24s} copied {copied / 1e9:6.2f} GB in {elapsed:7.1f} emulated s: {rate / 1e6:7.1f} MB/s "
        f"= {100 * rate / allowed:5.1f}% of B x T = {allowed / 1e6:.0f} MB/s   (wall {wall:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--throttle", default="50MB/s", help="T, per broker")
    parser.add_argument("--sources", type=int, default=6, help="brokers holding the data")
    parser.add_argument("--receivers", type=int, default=3, help="B, brokers receiving replicas")
    parser.add_argument("--moves", type=int, default=300, help="replica moves in the plan")
    parser.add_argument("--per-broker", type=int, default=5, help="concurrentMovesPerBroker")
    parser.add_argument("--poll", type=float, default=1.0, help="executor poll interval, emulated s")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--waves", action="store_true", help="also run a batch-wave executor for comparison")
    args = parser.parse_args()
    throttle = parse_rate(args.throttle)
    model, plan, copied = build(args.sources, args.receivers, args.moves, args.seed)
    allowed = throttle * args.receivers
    print(
        f"{args.moves} moves onto B={args.receivers} brokers from {args.sources}, T={throttle / 1e6:.0f} MB/s, "
        f"{args.per_broker} moves per broker, poll {args.poll:g} s"
    )
    t0 = time.perf_counter()
    window = run_executor(model, plan, throttle, args.per_broker, args.poll)
    report("executor", window, copied, allowed, time.perf_counter() - t0)
    if args.waves:
        t0 = time.perf_counter()
        window = run_waves(model, plan, throttle, args.per_broker, args.poll)
        report("waves", window, copied, allowed, time.perf_counter() - t0)
        t0 = time.perf_counter()
        ordered = in_executor_order(model, plan)
        window = run_waves(model, ordered, throttle, args.per_broker, args.poll)
        report("waves, executor's order", window, copied, allowed, time.perf_counter() - t0)


if __name__ == "__main__":
    main()

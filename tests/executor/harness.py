"""Helpers for executor tests against the Kafka emulator over TCP, with the real clients.

Everything asserted here is observed from the emulator's side (its state under its lock, at
every tick, and the requests it served), never from the executor's own counters.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kafka_balancer.kafka.port import (
    FOLLOWER_THROTTLE_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLE_RATE,
    LEADER_THROTTLED_REPLICAS,
    LOG_DIR_THROTTLE_RATE,
)
from kafka_balancer.model import ClusterBuilder, ClusterModel, PartitionTarget, ReassignmentPlan
from kafka_balancer.sandbox import EmulatedCluster
from kafka_balancer.sandbox.state import ClusterState

THROTTLE_KEYS = (LEADER_THROTTLE_RATE, FOLLOWER_THROTTLE_RATE, LOG_DIR_THROTTLE_RATE)
THROTTLED_REPLICA_KEYS = (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)


@dataclass
class Observer:
    """Checks "nothing lost" at every emulator tick and records what the emulator saw.

    - no partition's ISR is ever smaller than before execution started, except for replicas on
      brokers a test stopped on purpose (``faulted``);
    - no partition ever loses a replica it had at the start unless all its current replicas are
      in sync (KIP-455 drops the old replicas only once the new ones caught up);
    - the most reassignments in flight per broker (adding or removing a replica there) and in total.
    """

    initial_isr: dict[tuple[str, int], set[int]]
    initial_replicas: dict[tuple[str, int], set[int]]
    faulted: set[int] = field(default_factory=set)
    violations: list[str] = field(default_factory=list)
    max_per_broker: Counter[int] = field(default_factory=Counter)
    max_total: int = 0
    ticks: int = 0
    last_replicas: dict[tuple[str, int], set[int]] = field(default_factory=dict)
    # Throttle configs seen during the run: broker ids with a rate, (topic, partition, broker)
    # listed as follower-throttled (a replica being added) and as leader-throttled.
    rate_brokers: set[int] = field(default_factory=set)
    follower_throttled: set[tuple[str, int, int]] = field(default_factory=set)
    leader_throttled: set[tuple[str, int, int]] = field(default_factory=set)

    def __call__(self, state: ClusterState) -> None:
        self.ticks += 1
        per_broker = state.reassignments_per_broker()
        for b, n in per_broker.items():
            self.max_per_broker[b] = max(self.max_per_broker[b], n)
        self.max_total = max(self.max_total, len(state.reassigning))
        for b, broker in state.brokers.items():
            if any(k in broker.configs for k in THROTTLE_KEYS):
                self.rate_brokers.add(b)
        for name, topic in state.topics.items():
            for key, seen in ((FOLLOWER_THROTTLED_REPLICAS, self.follower_throttled),
                              (LEADER_THROTTLED_REPLICAS, self.leader_throttled)):  # fmt: skip
                for item in filter(None, topic.configs.get(key, "").split(",")):
                    p, _, b = item.partition(":")
                    seen.add((name, int(p), int(b)))
        for part in state.rows:
            key = (part.topic, part.index)
            before = self.initial_isr.get(key)
            if before is None:
                continue
            isr = set(part.isr)
            # A replica on a broker the test stopped leaves the ISR by the fault, not the execution.
            out_by_fault = sum(1 for b in part.replicas if b in self.faulted and b not in isr)
            if len(isr) + out_by_fault < len(before):
                self.violations.append(f"t={state.clock:.1f} {key}: ISR {sorted(isr)} smaller than {sorted(before)}")
            # A replica it had at the start may leave only at the moment all current replicas are in sync.
            current = set(part.replicas)
            gone = (self.last_replicas.get(key, current) - current) & self.initial_replicas[key]
            if gone and not current <= isr:
                self.violations.append(
                    f"t={state.clock:.1f} {key}: lost replicas {sorted(gone)} "
                    f"while {part.replicas} not all in ISR {part.isr}"
                )
            self.last_replicas[key] = current
        if len(self.violations) > 50:
            del self.violations[50:]


def observe(cluster: EmulatedCluster, faulted: set[int] | None = None) -> Observer:
    with cluster.state.lock:
        isr = {(p.topic, p.index): set(p.isr) for p in cluster.state.rows}
        replicas = {(p.topic, p.index): set(p.replicas) for p in cluster.state.rows}
    observer = Observer(isr, replicas, faulted if faulted is not None else set())
    cluster.on_tick(observer)
    return observer


def leftover_throttles(cluster: EmulatedCluster) -> dict[str, dict[str, str]]:
    with cluster.state.lock:
        out: dict[str, dict[str, str]] = {}
        for b, broker in cluster.state.brokers.items():
            found = {k: v for k, v in broker.configs.items() if k in THROTTLE_KEYS}
            if found:
                out[f"broker {b}"] = found
        for name, topic in cluster.state.topics.items():
            found = {k: v for k, v in topic.configs.items() if k in THROTTLED_REPLICA_KEYS}
            if found:
                out[f"topic {name}"] = found
        return out


def assignment(cluster: EmulatedCluster) -> dict[tuple[str, int], tuple[list[int], list[int], int]]:
    with cluster.state.lock:
        return {(p.topic, p.index): (list(p.replicas), list(p.isr), p.leader) for p in cluster.state.rows}


def cluster_model(
    *,
    brokers: int,
    partitions: dict[str, int],
    used: int | None = None,
    rf: int = 3,
    size: float = 10e6,
    min_isr: int | None = 2,
) -> ClusterModel:
    """Partitions spread round robin over the first ``used`` brokers (the others are new, empty)."""
    used = used or brokers
    b = ClusterBuilder(cluster_name="executor-test")
    for i in range(1, brokers + 1):
        b.add_broker(i, rack=f"rack-{i % 3}")
    for t, (topic, count) in enumerate(sorted(partitions.items())):
        b.set_topic(topic, min_insync_replicas=min_isr)
        for p in range(count):
            b.add_partition(topic, p, [1 + (t + p + k) % used for k in range(rf)], size_bytes=size * (1 + p % 4))
    return b.build()


def spread_plan(
    model: ClusterModel, *, onto: list[int], every: int = 1, reorder_every: int = 0, lead_new: bool = False
) -> ReassignmentPlan:
    """A deterministic rebalance: every ``every``-th partition gives its last replica to one of
    ``onto`` (round robin); every ``reorder_every``-th other partition only rotates its replicas
    (a leader-only change). With ``lead_new`` the new broker becomes the preferred leader."""
    targets = []
    k = 0
    for p in range(model.num_partitions):
        info = model.partition(p)
        replicas = list(info.replicas)
        if p % every == 0:
            new = onto[k % len(onto)]
            k += 1
            if new not in replicas:
                replicas[-1] = new
                if lead_new:
                    replicas = replicas[-1:] + replicas[:-1]
                targets.append(PartitionTarget(info.topic, info.partition, tuple(replicas)))
                continue
        if reorder_every and p % reorder_every == 1:
            targets.append(PartitionTarget(info.topic, info.partition, tuple(replicas[1:] + replicas[:1])))
    return ReassignmentPlan.of(targets)

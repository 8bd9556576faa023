"""One emulator tick: logs grow, lagging replicas copy from their leader, moves complete.

Copy rates follow Kafka's replication quotas (KIP-73): a flow from leader L to follower F of a
partition is limited by ``leader.replication.throttled.rate`` on L when the leader replica is
listed in the topic's ``leader.replication.throttled.replicas``, by
``follower.replication.throttled.rate`` on F when the follower replica is listed in
``follower.replication.throttled.replicas``, by L's network-out and F's network-in capacity, and
by an injected slow-broker cap. Flows sharing a limit share it max-min fairly (water filling),
which is how Kafka's quota managers behave on average.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from kafka_balancer.kafka.port import (
    FOLLOWER_THROTTLE_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLE_RATE,
    LEADER_THROTTLED_REPLICAS,
)
from kafka_balancer.sandbox.log_dirs import copy_futures
from kafka_balancer.sandbox.operations import maybe_complete
from kafka_balancer.sandbox.state import NO_LEADER, ClusterState, PartitionState

Pool = tuple[str, int]


@dataclass(frozen=True)
class ReplicationOptions:
    # Used for a broker whose network capacity the snapshot leaves unknown, so that an
    # unthrottled move still takes time (as on real hardware) instead of finishing at once.
    default_network_bytes_per_sec: float = 100e6


def _listed(spec: str, partition: int, broker: int) -> bool:
    if not spec:
        return False
    if spec.strip() == "*":
        return True
    for item in spec.split(","):
        p, _, b = item.strip().partition(":")
        if p.isdigit() and b.isdigit() and int(p) == partition and int(b) == broker:
            return True
    return False


def _rate(configs: dict[str, str], name: str) -> float | None:
    value = configs.get(name)
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


class _Flow:
    __slots__ = ("follower", "part", "pools", "rate")

    def __init__(self, part: PartitionState, follower: int, pools: list[Pool]):
        self.part = part
        self.follower = follower
        self.pools = pools
        self.rate = math.inf


def _flows(state: ClusterState, options: ReplicationOptions) -> tuple[list[_Flow], dict[Pool, float]]:
    flows: list[_Flow] = []
    caps: dict[Pool, float] = {}
    default = options.default_network_bytes_per_sec
    for part in state.catching_up:
        leader = part.leader
        if leader == NO_LEADER or not state.brokers[leader].alive:
            continue
        if part.reassignment is not None and part.reassignment.stuck:
            continue
        topic_configs = state.topics[part.topic].configs
        lb = state.brokers[leader]
        for follower in part.lagging:
            fb = state.brokers[follower]
            if not fb.alive:
                continue
            pools: list[Pool] = []
            out_cap = lb.network_out if not math.isnan(lb.network_out) else default
            caps[("out", leader)] = out_cap
            pools.append(("out", leader))
            in_cap = fb.network_in if not math.isnan(fb.network_in) else default
            caps[("in", follower)] = in_cap
            pools.append(("in", follower))
            leader_rate = _rate(lb.configs, LEADER_THROTTLE_RATE)
            if leader_rate is not None and _listed(
                topic_configs.get(LEADER_THROTTLED_REPLICAS, ""), part.index, leader
            ):
                caps[("lt", leader)] = leader_rate
                pools.append(("lt", leader))
            follower_rate = _rate(fb.configs, FOLLOWER_THROTTLE_RATE)
            if follower_rate is not None and _listed(
                topic_configs.get(FOLLOWER_THROTTLED_REPLICAS, ""), part.index, follower
            ):
                caps[("ft", follower)] = follower_rate
                pools.append(("ft", follower))
            for b in (lb, fb):
                if b.slow_rate is not None:
                    caps[("slow", b.id)] = b.slow_rate
                    pools.append(("slow", b.id))
            flows.append(_Flow(part, follower, pools))
    return flows, caps


def allocate(flows: list[_Flow], caps: dict[Pool, float]) -> None:
    """Max-min fair rates: repeatedly saturate the pool with the smallest fair share."""
    members: dict[Pool, list[_Flow]] = defaultdict(list)
    for flow in flows:
        for pool in flow.pools:
            members[pool].append(flow)
    remaining = dict(caps)
    open_pools = {pool: list(fs) for pool, fs in members.items()}
    fixed: set[int] = set()
    while open_pools:
        pool, share = min(
            ((p, remaining[p] / len(fs)) for p, fs in open_pools.items()), key=lambda item: (item[1], item[0])
        )
        share = max(share, 0.0)
        for flow in open_pools.pop(pool):
            flow.rate = share
            fixed.add(id(flow))
            for other in flow.pools:
                if other in open_pools:
                    remaining[other] -= share
                    open_pools[other] = [f for f in open_pools[other] if id(f) not in fixed]
                    if not open_pools[other]:
                        del open_pools[other]


def tick(state: ClusterState, dt: float, options: ReplicationOptions) -> None:
    """Advance the emulated clock by ``dt`` seconds. The caller holds ``state.lock``."""
    state.clock += dt
    online = state.online
    state.size += state.bytes_in * dt * online
    state.log_end += state.messages_in * dt * online
    copy_futures(state, dt, options.default_network_bytes_per_sec)
    flows, caps = _flows(state, options)
    if flows:
        allocate(flows, caps)
    changed: set[PartitionState] = set()
    for flow in flows:
        part = flow.part
        done = part.lagging[flow.follower] + flow.rate * dt
        target = float(state.size[part.row])
        if done >= target:
            del part.lagging[flow.follower]
            state.join_isr(part, flow.follower)
            changed.add(part)
        else:
            part.lagging[flow.follower] = done
    for part in changed:
        if part.leader == NO_LEADER:
            state.elect_from_isr(part)
        state.refresh_partition(part)
        state.version += 1
        maybe_complete(state, part)

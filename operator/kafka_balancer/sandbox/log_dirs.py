"""What a broker does with its log directories (JBOD): AlterReplicaLogDirs and the copy it starts.

A replica moved to another directory of its broker is copied there as a *future* replica by the
broker's ReplicaAlterLogDirsThread, at most ``replica.alter.log.dirs.io.max.bytes.per.second`` per
broker (shared by its copies); when the copy has caught up it replaces the replica. Functions take
the state with ``state.lock`` held and return a Kafka error name (or None), as operations.py does.
"""

from __future__ import annotations

from kafka_balancer.kafka.port import LOG_DIR_THROTTLE_RATE
from kafka_balancer.sandbox.state import ClusterState, FutureReplica, PartitionState


def alter_replica_log_dir(state: ClusterState, broker_id: int, topic: str, index: int, path: str) -> str | None:
    """Kafka's ReplicaManager.alterReplicaLogDirs for one replica on ``broker_id``."""
    broker = state.brokers[broker_id]
    if path not in broker.log_dirs:
        return "LOG_DIR_NOT_FOUND"
    if any(d.cordoned and d.path == path for d in broker.log_dir_entries()):
        return "INVALID_REPLICA_ASSIGNMENT"  # Kafka 4.3 (KIP-1066): a cordoned directory takes no replica
    part = state.partition(topic, index)
    if part is None:
        return "UNKNOWN_TOPIC_OR_PARTITION"
    moving = part.future.get(broker_id)
    if moving is not None and moving.path != path:
        del part.future[broker_id]  # another destination: the copy so far is dropped
    if broker_id not in part.replicas:
        # Remembered for when the replica arrives (a reassignment adding it); Kafka answers
        # REPLICA_NOT_AVAILABLE (for NOT_LEADER_OR_FOLLOWER) until it hosts the replica.
        state.preferred_dirs[(topic, index, broker_id)] = path
        return "REPLICA_NOT_AVAILABLE"
    if part.dirs.get(broker_id) != path and broker_id not in part.future:
        part.future[broker_id] = FutureReplica(path)
        state.moving_dirs.add(part)
    if not part.future:
        state.moving_dirs.discard(part)  # moved back to where it is: the copy is cancelled
    return None


def _rate(configs: dict[str, str], default: float) -> float:
    try:
        return float(configs[LOG_DIR_THROTTLE_RATE])
    except (KeyError, ValueError):
        return default


def copy_futures(state: ClusterState, dt: float, default_rate: float) -> None:
    """One tick of every broker's copies between its directories; a finished copy replaces its replica."""
    moving: dict[int, list[PartitionState]] = {}
    for part in sorted(state.moving_dirs, key=lambda p: p.row):
        for b in part.future:
            if state.brokers[b].alive:
                moving.setdefault(b, []).append(part)
    for b, parts in moving.items():
        share = _rate(state.brokers[b].configs, default_rate) * dt / len(parts)
        for part in parts:
            future = part.future[b]
            future.copied = min(future.copied + share, state.replica_size(part, b))
            if future.copied >= state.replica_size(part, b):
                del part.future[b]
                state.dir_replicas[(b, part.dirs[b])] -= 1
                part.dirs[b] = future.path
                state.dir_replicas[(b, future.path)] += 1
                if not part.future:
                    state.moving_dirs.discard(part)


def future_offset_lag(state: ClusterState, part: PartitionState, broker_id: int) -> int:
    """How many offsets the future replica is behind its current one (DescribeLogDirs' offset_lag)."""
    future = part.future[broker_id]
    size = state.replica_size(part, broker_id)
    if size <= 0:
        return 0
    return max(0, int(float(state.log_end[part.row]) * (size - future.copied) / size))

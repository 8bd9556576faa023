"""What the controller does: reassignments (KIP-455), leader elections (KIP-460), broker faults.

Each function takes the state with ``state.lock`` held by the caller and returns a Kafka error
name (or None), so the protocol handlers only translate names to codes.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafka_balancer.sandbox.state import NO_LEADER, ClusterState, PartitionState, Reassignment

PREFERRED = 0
UNCLEAN = 1


def reassign(state: ClusterState, part: PartitionState, target: Sequence[int] | None) -> str | None:
    """Start, change or cancel (``target`` None) the reassignment of one partition."""
    current = part.reassignment
    if target is None:
        if current is None:
            return "NO_REASSIGNMENT_IN_PROGRESS"
        _cancel(state, part, current)
        return None
    target = list(target)
    if not target or len(set(target)) != len(target) or any(b not in state.brokers for b in target):
        return "INVALID_REPLICA_ASSIGNMENT"
    original = current.original if current is not None else list(part.replicas)
    adding = [b for b in target if b not in original]
    removing = [b for b in original if b not in target]
    if current is not None:
        # A new target replaces the old one; replicas the old one was adding and the new one
        # does not want are dropped with the bytes they had copied.
        for b in current.adding:
            if b not in target:
                part.lagging.pop(b, None)
                if b in part.isr:
                    part.isr.remove(b)
    part.reassignment = Reassignment(
        target=target,
        original=original,
        adding=adding,
        removing=removing,
        started_at=state.clock,
    )
    part.replicas = target + removing
    for b in adding:
        if b not in part.isr:
            part.lagging.setdefault(b, 0.0)
    state.refresh_partition(part)
    state.version += 1
    maybe_complete(state, part)
    return None


def _cancel(state: ClusterState, part: PartitionState, current: Reassignment) -> None:
    # KIP-455: cancelling reverts to the original replica set by dropping the adding replicas from
    # the in-flight list (target + removing), as Kafka's PartitionReassignmentRevert does: the
    # original replicas come back in that list's order, not always in their original order.
    part.replicas = [b for b in part.replicas if b not in current.adding]
    part.isr = [b for b in part.isr if b in part.replicas]
    part.elr = [b for b in part.elr if b in part.replicas]
    part.reassignment = None
    if part.leader not in part.replicas or part.leader not in part.isr:
        state.elect_from_isr(part)
    state.refresh_partition(part)
    state.version += 1


def maybe_complete(state: ClusterState, part: PartitionState) -> bool:
    """Finish the reassignment once every target replica is in the ISR."""
    r = part.reassignment
    if r is None or r.stuck or any(b not in part.isr for b in r.target):
        return False
    part.replicas = list(r.target)
    part.isr = [b for b in part.isr if b in r.target]
    part.elr = [b for b in part.elr if b in r.target]
    part.reassignment = None
    if part.leader not in r.target:
        # The old leader is being removed: leadership moves to the first target replica in sync.
        state.elect_from_isr(part)
    state.refresh_partition(part)
    state.completed.append((part.topic, part.index, state.clock))
    state.version += 1
    return True


def elect(state: ClusterState, part: PartitionState, election_type: int) -> str | None:
    if election_type == PREFERRED:
        preferred = part.replicas[0]
        if part.leader == preferred:
            return "ELECTION_NOT_NEEDED"
        if preferred not in part.isr or not state.brokers[preferred].alive:
            return "PREFERRED_LEADER_NOT_AVAILABLE"
        part.leader = preferred
        part.leader_epoch += 1
        state.refresh_partition(part)
        state.version += 1
        return None
    if election_type == UNCLEAN:
        if part.leader != NO_LEADER and state.brokers[part.leader].alive:
            return "ELECTION_NOT_NEEDED"
        for b in part.replicas:
            if state.brokers[b].alive:
                part.leader = b
                part.leader_epoch += 1
                # An unclean leader truncates the others: it alone is in sync.
                part.isr = [b]
                part.elr = []
                state.refresh_partition(part)
                state.version += 1
                return None
        return "ELIGIBLE_LEADERS_NOT_AVAILABLE"
    return "INVALID_REQUEST"


def stop_broker(state: ClusterState, broker_id: int) -> None:
    """A broker goes down: it leaves every ISR (unless last), its leaderships move."""
    broker = state.brokers[broker_id]
    if not broker.alive:
        return
    broker.alive = False
    for part in state.rows:
        if broker_id not in part.replicas:
            continue
        if broker_id in part.isr and len(part.isr) > 1:
            state.leave_isr(part, broker_id)
            # The replica keeps the log it had; on restart it catches up from there.
            part.lagging[broker_id] = float(state.size[part.row])
        if part.leader == broker_id:
            state.elect_from_isr(part)
        state.refresh_partition(part)
    if state.controller_id == broker_id:
        state.controller_id = state.pick_controller()
    state.version += 1


def start_broker(state: ClusterState, broker_id: int) -> None:
    """A broker comes back: its replicas catch up from where they stopped and rejoin the ISR."""
    broker = state.brokers[broker_id]
    if broker.alive:
        return
    broker.alive = True
    for part in state.rows:
        if broker_id not in part.replicas:
            continue
        if part.leader == NO_LEADER:
            # The last ISR member is back: the partition comes back online with it.
            state.elect_from_isr(part)
        state.refresh_partition(part)
    if state.controller_id == -1:
        state.controller_id = state.pick_controller()
    state.version += 1

"""How a run that went through its phases ends, and what every run reports: the end state and reason
(what was not done: dead moves, failed elections, throttles left, the rest of a maxBytesPerRun budget),
and the :class:`ExecutionResult`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_balancer.executor.ledger import Ledger
from kafka_balancer.executor.progress import Progress
from kafka_balancer.executor.state import ExecutionState, TaskState
from kafka_balancer.executor.tasks import Task


@dataclass
class ExecutionResult:
    state: ExecutionState
    reason: str
    completed: list[str]
    aborted: list[str]
    pending: list[str]
    dead: dict[str, str]
    stuck: list[str]
    election_failures: dict[str, str]
    progress: Progress
    submitted: int = 0  # reassignments this process submitted (moves and reorders)
    tasks: list[tuple[Task, TaskState]] = field(default_factory=list)
    taken_over: list[str] = field(default_factory=list)  # re-targeted by another tool mid-move (also in dead)


def finish(ledger: Ledger) -> ExecutionResult:
    """Completed; Stopped when only the maxBytesPerRun budget left moves for the next run; else Failed."""
    record, tasks = ledger.record, ledger.tasks
    states = record.tasks
    dead = [t for t in tasks if states[t.index] is TaskState.DEAD]
    problems = []
    if dead:
        listed = "; ".join(f"{t.tp} ({record.dead_reasons.get(str(t.tp), 'dead')})" for t in dead[:20])
        problems.append(f"{len(dead)} partitions not moved: {listed}")
    if ledger.election_failures:
        failed = sorted(ledger.election_failures.items())
        listed = ", ".join(f"{tp} ({name})" for tp, name in failed[:20])
        problems.append(f"{len(failed)} leader elections failed: {listed}")
    if ledger.throttle_failures:
        problems.append(f"throttles not removed: {', '.join(ledger.throttle_failures)}")
    left = [t for t in tasks if states[t.index] is TaskState.PENDING]
    if left:
        problems.append(
            f"maxBytesPerRun {ledger.options.max_bytes_per_run} reached: {len(left)} partitions "
            f"({sum(t.bytes_to_move for t in left):.0f} bytes) left for the next run"
        )
    record.reason = "; ".join(problems)
    if len(problems) == 1 and left:
        end = ExecutionState.STOPPED  # a planned pause, not a failure: the rest runs next time
    else:
        end = ExecutionState.FAILED if problems else ExecutionState.COMPLETED
    ledger.set_state(end)
    ledger.emit()
    return result(ledger)


def result(ledger: Ledger) -> ExecutionResult:
    record, tasks = ledger.record, ledger.tasks
    states = record.tasks

    def named(state: TaskState) -> list[str]:
        return [str(t.tp) for t in tasks if states[t.index] is state]

    return ExecutionResult(
        state=record.state,
        reason=record.reason,
        completed=named(TaskState.COMPLETED),
        aborted=named(TaskState.ABORTED),
        pending=named(TaskState.PENDING),
        dead={str(t.tp): record.dead_reasons.get(str(t.tp), "") for t in tasks if states[t.index] is TaskState.DEAD},
        stuck=list(ledger.stuck_names()),
        election_failures=dict(ledger.election_failures),
        progress=ledger.progress(),
        submitted=ledger.submitted,
        tasks=[(t, states[t.index]) for t in tasks],
        taken_over=ledger.taken_over_partitions(),
    )

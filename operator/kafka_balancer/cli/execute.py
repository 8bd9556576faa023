"""`kafka-balancer execute`: apply a reassignment plan safely, with throttles and a progress bar.

The state file makes the run resumable: run the same command again after a crash and it
continues where it was (in-flight moves are adopted, completed ones never re-submitted).
`kafka-balancer stop --state FILE` (or Ctrl-C / SIGTERM) stops it cleanly.

Exit status: 0 completed, 1 failed (the report names what), 2 bad input, 3 stopped.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import sys
import time
from pathlib import Path
from types import FrameType
from typing import TextIO

from kafka_balancer.cli.arguments import integer, number
from kafka_balancer.cli.consumers import add_connection_arguments, open_port
from kafka_balancer.cli.files import read_json
from kafka_balancer.executor import (
    ClusterTurns,
    ExecutionRecord,
    ExecutionResult,
    ExecutionState,
    Executor,
    ExecutorOptions,
    FileExecutionStore,
    Limits,
    MemoryExecutionStore,
    Progress,
    parse_rate,
    parse_size,
)
from kafka_balancer.executor.scheduler import DEFAULT_MOVES_PER_BROKER, DEFAULT_MOVES_TOTAL, STRATEGIES
from kafka_balancer.executor.store import ExecutionStore
from kafka_balancer.kafka.port import KafkaError, TopicPartition
from kafka_balancer.model import ModelError, ReassignmentPlan
from kafka_balancer.model.proposal import Proposal

HELP = "Execute a reassignment plan: throttled, resumable, stoppable, with a progress bar."
DEFAULT_STATE = "kafka-balancer-execution.json"

EXIT_COMPLETED, EXIT_FAILED, EXIT_USAGE, EXIT_STOPPED = 0, 1, 2, 3


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1024
    return f"{n:.1f} TiB"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def format_progress(p: Progress, width: int = 24) -> str:
    filled = round(p.fraction * width)
    bar = "#" * filled + "." * (width - filled)
    return (
        f"[{bar}] {p.fraction * 100:5.1f}% {p.state.value} | {_size(p.bytes_moved)}/{_size(p.bytes_total)} | "
        f"partitions {p.partitions_done}/{p.partitions_total} ({p.partitions_in_progress} moving) | "
        f"leaders {p.leaders_done}/{p.leaders_total} | {_size(p.rate_bytes_per_sec)}/s | ETA {_duration(p.eta_seconds)}"
        + (f" | {p.waiting}" if p.waiting else "")
    )


class ProgressPrinter:
    """One line redrawn in place on a terminal; one line every few seconds into a log otherwise."""

    def __init__(self, out: TextIO, *, enabled: bool, every_seconds: float = 5.0) -> None:
        self.out = out
        self.enabled = enabled
        self.tty = out.isatty()
        self.every = every_seconds
        self._last = 0.0
        self._drawn = False

    def update(self, progress: Progress) -> None:
        if not self.enabled:
            return
        line = format_progress(progress)
        if self.tty:
            self.out.write("\r\x1b[2K" + line)
            self._drawn = True
        elif time.monotonic() - self._last >= self.every or progress.state.finished:
            self.out.write(line + "\n")
            self._last = time.monotonic()
        self.out.flush()

    def close(self) -> None:
        if self._drawn:
            self.out.write("\n")
            self.out.flush()
            self._drawn = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    parser.add_argument(
        "--plan",
        required=True,
        help="Kafka reassignment JSON (kafka-balancer plan --output), or the whole proposal (plan --proposal), "
        "whose leader changes outside the plan are then elected too",
    )
    parser.add_argument("--throttle", help="replication throttle per broker, e.g. 50MiB/s (default: none)")
    parser.add_argument("--dry-run", action="store_true", help="show what would run, change nothing")
    parser.add_argument("--state", default=DEFAULT_STATE, help=f"resumable state file (default {DEFAULT_STATE})")
    parser.add_argument("--concurrent-moves-per-broker", type=integer, default=DEFAULT_MOVES_PER_BROKER)
    parser.add_argument("--concurrent-moves-total", type=integer, default=DEFAULT_MOVES_TOTAL)
    parser.add_argument("--strategy", choices=sorted(STRATEGIES), default="helpful-first", help="order of moves")
    parser.add_argument("--stuck-after", type=number, default=1800.0, help="seconds without progress = stuck")
    parser.add_argument("--cancel-stuck", action="store_true", help="cancel moves that are stuck")
    parser.add_argument(
        "--give-up-blocked-after",
        type=number,
        default=None,
        help="seconds a move may wait for an unhealthy partition before it is given up (default: wait)",
    )
    parser.add_argument(
        "--max-bytes-per-run", help="copy at most this much (e.g. 500GB); the rest is left for the next run"
    )
    parser.add_argument(
        "--give-up-unavailable-after",
        type=number,
        default=600.0,
        help="seconds to wait for a cluster that cannot answer (controller down, a broker hung) before the run "
        "stops, resumable by running the same command again (default 600)",
    )
    parser.add_argument("--poll-interval", type=number, default=1.0, help="seconds between cluster polls")
    parser.add_argument("--json", action="store_true", help="print the final report as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def options_from_args(args: argparse.Namespace) -> ExecutorOptions:
    return ExecutorOptions(
        throttle_bytes_per_sec=parse_rate(args.throttle) if args.throttle else None,
        limits=Limits(per_broker=args.concurrent_moves_per_broker, total=args.concurrent_moves_total),
        strategy=args.strategy,
        stuck_after_seconds=args.stuck_after,
        cancel_stuck=args.cancel_stuck,
        blocked_after_seconds=args.give_up_blocked_after,
        max_bytes_per_run=parse_size(args.max_bytes_per_run) if args.max_bytes_per_run else None,
        unavailable_timeout_seconds=args.give_up_unavailable_after,
        poll_interval_seconds=args.poll_interval,
        dry_run=args.dry_run,
    )


def report(result: ExecutionResult) -> dict[str, object]:
    return {
        "state": result.state.value,
        "reason": result.reason,
        "completed": len(result.completed),
        "aborted": result.aborted,
        "pending": len(result.pending),
        "dead": result.dead,
        "stuck": result.stuck,
        "electionFailures": result.election_failures,
        "progress": result.progress.to_dict(),
    }


def load_plan(path: str) -> tuple[ReassignmentPlan, list[TopicPartition]]:
    """A reassignment JSON, or a proposal (told apart by its 'id'): the plan and the extra elections."""
    data = read_json(path, "--plan")
    if isinstance(data, dict) and "id" in data and "plan" in data:
        proposal = Proposal.from_dict(data)
        return proposal.plan, [TopicPartition(c.topic, c.partition) for c in proposal.leader_changes]
    return ReassignmentPlan.from_dict(data), []


def load_record(store: FileExecutionStore) -> ExecutionRecord | None:
    """The record in the state file, if any; an error names the file."""
    raw = store.load()
    try:
        return None if raw is None else ExecutionRecord.from_dict(raw)
    except ModelError as err:
        raise ModelError(f"state file {store.path}: {err}") from None


SECONDS_OPTIONS = {"poll_interval": "--poll-interval", "stuck_after": "--stuck-after"}
SECONDS_OPTIONS |= {"give_up_blocked_after": "--give-up-blocked-after"}
SECONDS_OPTIONS |= {"give_up_unavailable_after": "--give-up-unavailable-after"}


def check_seconds(args: argparse.Namespace) -> None:
    """Every option in seconds is a finite number > 0 (NaN passes every comparison: a sleep(nan)
    would end the run mid-way, with moves started)."""
    for name, option in SECONDS_OPTIONS.items():
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ModelError(f"{option} must be a finite number of seconds > 0, got {value}")


def run(args: argparse.Namespace) -> int:
    if not args.bootstrap_servers:
        print("execute: --bootstrap-servers is required", file=sys.stderr)
        return EXIT_USAGE
    check_seconds(args)
    plan, elections = load_plan(args.plan)
    options = options_from_args(args)
    store: ExecutionStore
    if options.dry_run:
        store = MemoryExecutionStore()
    else:
        file_store = FileExecutionStore(args.state)
        file_store.lock(f"kafka-balancer execute, pid {os.getpid()} on {socket.gethostname()}")
        load_record(file_store)  # a broken record is refused here, before anything is sent
        file_store.clear_stop()  # a stop request left over from an earlier run is not for this one
        store = file_store
    printer = ProgressPrinter(sys.stderr, enabled=not args.quiet and not options.dry_run)
    context = {
        "pid": str(os.getpid()),
        "host": socket.gethostname(),
        "bootstrapServers": args.bootstrap_servers,
        "plan": str(Path(args.plan).resolve()),
    }
    port = open_port(args)
    try:
        # Executors of this cluster on this host take turns submitting (ClusterTurns), named by its id.
        cluster_id = port.describe_cluster().cluster_id or args.bootstrap_servers
        executor = Executor(
            port,
            plan,
            store,
            options,
            on_progress=printer.update,
            context=context,
            elections=elections,
            turns=ClusterTurns(cluster_id),
        )

        def on_signal(_signum: int, _frame: FrameType | None) -> None:
            executor.request_stop()

        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        try:
            result = executor.run()
        except (ModelError, KafkaError):
            printer.close()  # the line the progress bar was on ends before the error's line
            raise
        printer.close()
    finally:
        port.close()
    if options.dry_run:
        _print_dry_run(result)
        return EXIT_COMPLETED
    if args.json:
        print(json.dumps(report(result), indent=2))
    else:
        _print_summary(result)
    return {ExecutionState.COMPLETED: EXIT_COMPLETED, ExecutionState.STOPPED: EXIT_STOPPED}.get(
        result.state, EXIT_FAILED
    )


def _print_dry_run(result: ExecutionResult) -> None:
    p = result.progress
    moves = [t for t, s in result.tasks if t.copies and not s.finished]
    reorders = [t for t, s in result.tasks if t.kind.value == "reorder" and not s.finished]
    print(f"dry run: {len(moves)} replica moves ({p.bytes_total / 1e6:.1f} MB to copy), {len(reorders)} leader-only")
    for t in moves[:50]:
        dirs = "".join(f", {d.broker}:{d.original or '?'} -> {d.path}" for d in t.dirs)
        print(f"  move {t.tp}: {list(t.original)} -> {list(t.target)}{dirs} ({t.bytes_to_move / 1e6:.1f} MB)")
    if len(moves) > 50:
        print(f"  ... and {len(moves) - 50} more")
    for t in reorders[:20]:
        print(f"  reorder {t.tp}: {list(t.original)} -> {list(t.target)}")


def _print_summary(result: ExecutionResult) -> None:
    p = result.progress
    print(
        f"{result.state.value}: {p.partitions_done}/{p.partitions_total} partitions, "
        f"{p.bytes_moved / 1e6:.1f}/{p.bytes_total / 1e6:.1f} MB moved, "
        f"{p.leaders_done}/{p.leaders_total} leader elections"
    )
    if result.reason:
        print(f"reason: {result.reason}")
    if result.aborted:
        print(f"cancelled (back on their original replicas): {', '.join(result.aborted)}")
    if result.taken_over:
        print(f"taken over by another reassignment (left to it): {', '.join(result.taken_over)}")
    if result.stuck:
        print(f"stuck: {', '.join(result.stuck)}")

"""`kafka-balancer stop`: stop an execution started with `kafka-balancer execute --state FILE`.

If the executor that owns the state file is alive (its pid, on this host), the stop request is
written next to the state file (``FILE.stop``); the executor sees it on its next poll, cancels
its in-flight moves, removes its throttles and exits, and this command waits for that. If no
executor is alive (it was killed, or ran elsewhere), this command does the same work itself from
the state file: cancels the recorded in-flight reassignments and removes the recorded throttles.

Exit status: 0 stopped (or nothing was running), 1 the running executor did not stop in time,
2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time

from kafka_balancer.cli.arguments import number
from kafka_balancer.cli.consumers import add_connection_arguments, open_port
from kafka_balancer.cli.execute import DEFAULT_STATE, load_record
from kafka_balancer.executor import ExecutionRecord, FileExecutionStore, TaskState, abandon
from kafka_balancer.model import ModelError

HELP = "Stop a running execution: cancel in-flight moves, remove throttles, report what completed."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--state", default=DEFAULT_STATE, help=f"the execution's state file (default {DEFAULT_STATE})")
    # Used when no executor is running and this command cleans up itself; the bootstrap servers
    # default to those in the state file (credentials are never stored there: pass them again).
    add_connection_arguments(parser)
    parser.add_argument("--timeout", type=number, default=120.0, help="seconds to wait for a running executor")


def _alive(record: ExecutionRecord) -> bool:
    """Is the process that wrote the record still running (on this host)?"""
    pid = record.context.get("pid", "")
    if not pid.isdigit() or record.context.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def _summary(record: ExecutionRecord) -> str:
    counts = {state: sum(1 for s in record.tasks if s is state) for state in TaskState}
    parts = ", ".join(f"{n} {state.value}" for state, n in counts.items() if n)
    return json.dumps({"state": record.state.value, "reason": record.reason, "tasks": parts})


def _ask_the_executor_to_stop(store: FileExecutionStore, record: ExecutionRecord, timeout: float) -> int:
    """A live executor winds down itself: ask it through the state file and wait for its last record."""
    store.request_stop()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        raw = store.load()
        current = ExecutionRecord.from_dict(raw) if raw is not None else record
        if current.state.finished:
            store.clear_stop()
            print(_summary(current))
            return 0
        time.sleep(0.2)
    print(f"stop: executor pid {record.context.get('pid')} did not stop within {timeout:g}s", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    store = FileExecutionStore(args.state)
    record = load_record(store)
    if record is None:
        print(f"stop: no execution recorded in {args.state}")
        return 0
    if record.state.finished and record.throttles.empty:
        print(_summary(record))
        return 0
    if not record.state.finished and (store.locked_by_another() or _alive(record)):
        return _ask_the_executor_to_stop(store, record, args.timeout)
    args.bootstrap_servers = args.bootstrap_servers or record.context.get("bootstrapServers")
    if not args.bootstrap_servers:
        print(
            "stop: no executor is running and the state file names no cluster; pass --bootstrap-servers",
            file=sys.stderr,
        )
        return 2
    try:
        # Hold the state while cleaning up, so that no `execute` starts on it meanwhile.
        store.lock(f"kafka-balancer stop, pid {os.getpid()} on {socket.gethostname()}")
    except ModelError as err:
        print(f"stop: {err}", file=sys.stderr)
        return 1
    port = open_port(args)
    try:
        final = abandon(port, store, reason="stopped by kafka-balancer stop (no executor was running)")
    finally:
        port.close()
    store.clear_stop()
    if final is not None:
        print(_summary(final))
    return 0

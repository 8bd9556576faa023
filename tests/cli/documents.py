"""Valid input documents of every command, small, and the command lines that read each of them.

The hostile-input tests start from these and break one thing at a time; a test that expects a refusal
then knows the refusal is for what it broke. ``COMMAND_INPUTS`` lists every file option of every
subcommand with the argument list that reads it (``{file}`` is the document under test, ``{snapshot}``,
``{plan}``, ``{dir}`` and ``{dead}`` are filled in by :func:`argv`).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SNAPSHOT: dict[str, Any] = {
    "version": 1,
    "cluster": "c",
    "brokers": [
        {"id": 1, "rack": "a", "capacity": {"diskBytes": 1e12}},
        {"id": 2, "rack": "b"},
        {"id": 3, "rack": "c"},
    ],
    "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [1, 2], "leader": 1, "isr": [1, 2], "sizeBytes": 1000},
        {"topic": "orders", "partition": 1, "replicas": [2, 3], "sizeBytes": 2000, "bytesInPerSec": 5.5},
        {"topic": "events", "partition": 0, "replicas": [3, 1], "messagesInPerSec": 1},
    ],
    "topics": [{"name": "orders", "minInsyncReplicas": 1, "uncleanLeaderElection": False}],
}
PLAN: dict[str, Any] = {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [2, 3]}]}
PROPOSAL: dict[str, Any] = {
    "id": "0123456789abcdef",
    "plan": PLAN,
    "leaderChanges": [{"topic": "orders", "partition": 0, "from": 1, "to": 2}],
    "summary": {"moves": 1, "bytesToMove": 1000},
}
SUMMARY: dict[str, Any] = {"moves": 1, "bytesToMove": 1000, "balancednessBefore": 50.0, "balancednessAfter": 90.0}
GROUP: dict[str, Any] = {
    "topics": {"t0": 4, "t1": 2},
    "members": [
        {"id": "C0", "topics": ["t0", "t1"], "assignment": {"t0": [0, 1]}},
        {"id": "C1", "topics": ["t0"], "assignment": {"t0": [2]}},
    ],
    "lag": {"t1": [10, 20]},
}
STATE: dict[str, Any] = {
    "version": 2,
    "planId": "0123456789abcdef",
    "state": "MovingReplicas",
    "tasks": "i1",
    "throttles": {"brokers": {"2": "1000"}, "topics": {"orders": {"leader.replication.throttled.replicas": ["0:1"]}}},
    "deadReasons": {},
    "reason": "",
    "startedAt": 1.0,
    "updatedAt": 2.0,
    "context": {"pid": "1", "host": "elsewhere", "bootstrapServers": "127.0.0.1:1"},
    "inFlight": [["orders", 0, 1000.0, [1, 2], [2, 3], 0]],
    "bytesDone": 0.0,
}
CAPACITY: dict[str, Any] = {"default": {"diskBytes": 1e12, "cpuCores": 8}, "brokers": {"1": {"diskBytes": 2e12}}}
POLICY = """\
apiVersion: kafkabalancer.io/v1alpha1
kind: BalancePolicy
metadata: {name: balance, namespace: kafka}
spec:
  cluster: {bootstrapServers: "kafka:9092"}
  goals: {balanceThreshold: 1.10}
  execution: {throttleBytesPerSec: 1000000}
"""
POLICY_DOC: dict[str, Any] = {
    "apiVersion": "kafkabalancer.io/v1alpha1",
    "kind": "BalancePolicy",
    "metadata": {"name": "balance", "namespace": "kafka"},
    "spec": {"cluster": {"bootstrapServers": "kafka:9092"}, "execution": {"throttleBytesPerSec": 1000000}},
}

VALID: dict[str, Any] = {
    "snapshot": SNAPSHOT,
    "plan": PLAN,
    "proposal": PROPOSAL,
    "summary": SUMMARY,
    "group": GROUP,
    "state": STATE,
    "capacity": CAPACITY,
    "policy": POLICY_DOC,
}


@dataclass(frozen=True)
class CommandInput:
    """One file a command reads: the document kind, and the command line that reads it."""

    name: str
    kind: str
    argv: tuple[str, ...]
    # Commands that start real work when the input is valid (connect to a cluster, serve, run Spark):
    # the fuzz test sends them only documents the model refuses.
    starts_work: bool = False


DEAD = "127.0.0.1:{dead}"
COMMAND_INPUTS: tuple[CommandInput, ...] = (
    CommandInput("plan --snapshot", "snapshot", ("plan", "--snapshot", "{file}", "--output", "{dir}/out.json")),
    CommandInput(
        "plan --policy",
        "policy",
        ("plan", "--snapshot", "{snapshot}", "--policy", "{file}", "--output", "{dir}/out.json"),
    ),
    CommandInput(
        "plan --resource-groups",
        "policy",
        (
            "plan",
            "--snapshot",
            "{snapshot}",
            "--policy",
            "{policy}",
            "--resource-groups",
            "{file}",
            "--output",
            "{dir}/out.json",
        ),
    ),
    CommandInput("audit --snapshot", "snapshot", ("audit", "--snapshot", "{file}")),
    CommandInput(
        "report --before", "snapshot", ("report", "--before", "{file}", "--plan", "{plan}", "--output", "{dir}/r.html")
    ),
    CommandInput(
        "report --after",
        "snapshot",
        ("report", "--before", "{snapshot}", "--after", "{file}", "--output", "{dir}/r.html"),
    ),
    CommandInput(
        "report --plan", "plan", ("report", "--before", "{snapshot}", "--plan", "{file}", "--output", "{dir}/r.html")
    ),
    CommandInput(
        "report --proposal",
        "proposal",
        ("report", "--before", "{snapshot}", "--proposal", "{file}", "--output", "{dir}/r.html"),
    ),
    CommandInput(
        "report --summary",
        "summary",
        ("report", "--before", "{snapshot}", "--plan", "{plan}", "--summary", "{file}", "--output", "{dir}/r.html"),
    ),
    CommandInput(
        "execute --plan",
        "plan",
        (
            "execute",
            "--bootstrap-servers",
            DEAD,
            "--plan",
            "{file}",
            "--state",
            "{dir}/state.json",
            "--quiet",
            "--request-timeout",
            "1",
        ),
        starts_work=True,
    ),
    CommandInput(
        "execute --state",
        "state",
        (
            "execute",
            "--bootstrap-servers",
            DEAD,
            "--plan",
            "{plan}",
            "--state",
            "{file}",
            "--quiet",
            "--request-timeout",
            "1",
        ),
        starts_work=True,
    ),
    CommandInput(
        "stop --state",
        "state",
        ("stop", "--state", "{file}", "--timeout", "1", "--request-timeout", "1"),
        starts_work=True,
    ),
    CommandInput("consumers simulate --group", "group", ("consumers", "simulate", "--group", "{file}")),
    CommandInput(
        "consumers --snapshot",
        "snapshot",
        ("consumers", "--snapshot", "{file}", "--bootstrap-servers", DEAD, "--request-timeout", "1"),
        starts_work=True,
    ),
    CommandInput(
        "sandbox --snapshot", "snapshot", ("sandbox", "--snapshot", "{file}", "--port-base", "{busy}"), starts_work=True
    ),
    CommandInput(
        "analyze --capacity",
        "capacity",
        ("analyze", "--samples", "{dir}/samples", "--output", "{dir}/a.json", "--capacity", "{file}"),
        starts_work=True,
    ),
)


def write_inputs(directory: Path, *, dead_port: int, busy_port: int) -> dict[str, str]:
    """Valid companion files (the snapshot, plan and policy a command needs besides the one under test) and
    the ports: ``dead`` refuses connections, ``busy`` is taken (a server cannot listen on it)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "samples").mkdir(exist_ok=True)
    files = {"snapshot": directory / "snapshot.json", "plan": directory / "plan.json", "policy": directory / "p.yaml"}
    files["snapshot"].write_text(json.dumps(SNAPSHOT))
    files["plan"].write_text(json.dumps(PLAN))
    files["policy"].write_text(POLICY)
    return {name: str(path) for name, path in files.items()} | {
        "dir": str(directory),
        "dead": str(dead_port),
        "busy": str(busy_port),
    }


def argv(command: CommandInput, file: Path | str, fill: dict[str, str]) -> list[str]:
    return [part.format(file=file, **fill) for part in command.argv]


def valid(kind: str) -> Any:
    return copy.deepcopy(VALID[kind])

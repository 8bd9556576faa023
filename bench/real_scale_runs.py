"""The commands bench.real_scale times: ours (the CLI) and Kafka's own tools, each in its own process.

Every command runs as a child process and is reaped with ``wait4``, so that its own CPU time (user +
sys) and peak resident memory are measured apart from the benchmark's and the brokers'. Kafka's tools
run from ``make kafka``'s jars (org.apache.kafka:kafka-tools): ``kafka-reassign-partitions`` (execute
with a throttle, then verify until every reassignment is done, which also removes the throttles) and
``kafka-leader-election`` (preferred leaders of every partition).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from kafka_balancer.sandbox.real import java_binary, kafka_libs

CLI = str(Path(sys.executable).parent / "kafka-balancer")
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
ELECT = "org.apache.kafka.tools.LeaderElectionCommand"
TOOL_HEAP = "-Xmx512m"
VERIFY_EVERY_S = 5.0


@dataclass
class Measured:
    wall: float
    cpu: float  # user + sys of the process (and of the children it waited for)
    rss_mb: float  # peak resident memory
    out: str
    calls: int = 1

    def __add__(self, other: Measured) -> Measured:
        return Measured(
            self.wall + other.wall,
            self.cpu + other.cpu,
            max(self.rss_mb, other.rss_mb),
            other.out,
            self.calls + other.calls,
        )


def measured(command: list[str], *, check: bool = True) -> Measured:
    """Run ``command``; its wall and CPU time, peak RSS and output. A failure (when ``check``) ends the benchmark."""
    started = time.monotonic()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as process:
        assert process.stdout is not None
        out = process.stdout.read().decode(errors="replace")
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    if check and process.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} ... failed ({process.returncode}):\n{out[-3000:]}")
    return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out)


# ----- ours ----------------------------------------------------------------------------------------
def snapshot(bootstrap: str, output: Path) -> Measured:
    return measured([CLI, "snapshot", "--bootstrap-servers", bootstrap, "--output", str(output)])


def plan(snapshot_file: Path, folder: Path) -> Measured:
    command = [CLI, "plan", "--snapshot", str(snapshot_file), "--output", str(folder / "plan.json")]
    command += ["--proposal", str(folder / "proposal.json"), "--summary", str(folder / "summary.json")]
    return measured(command)


def execute(bootstrap: str, proposal: Path, throttle: str, state: Path) -> Measured:
    """``kafka-balancer execute`` of the whole proposal (its moves, then every leader change it lists)."""
    command = [CLI, "execute", "--bootstrap-servers", bootstrap, "--plan", str(proposal), "--quiet"]
    command += ["--throttle", throttle, "--state", str(state)]
    return measured(command)


# ----- Kafka's tools -------------------------------------------------------------------------------
def _tool(main: str, *args: str) -> list[str]:
    return [java_binary(), TOOL_HEAP, "-cp", f"{kafka_libs()}/*", main, *args]


def kafka_reassign(bootstrap: str, plan_file: Path, throttle_bytes: int) -> Measured:
    """``--execute --throttle``, then ``--verify`` every few seconds until it reports every reassignment
    complete (verify removes the throttles then): the calls added up, wall time from the first call's
    start to the last one's end."""
    common = ["--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan_file)]
    began = time.monotonic()
    total = measured(_tool(REASSIGN, *common, "--execute", "--throttle", str(throttle_bytes)))
    while True:
        time.sleep(VERIFY_EVERY_S)
        step = measured(_tool(REASSIGN, *common, "--verify"))
        total = total + step
        if "is still in progress" not in step.out:
            break
    total.wall = time.monotonic() - began
    return total


def kafka_elect_all(bootstrap: str) -> Measured:
    return measured(
        _tool(ELECT, "--bootstrap-server", bootstrap, "--election-type", "PREFERRED", "--all-topic-partitions"),
        check=False,  # exits 1 when some partition needed no election; its output says which failed
    )

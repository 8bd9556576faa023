"""The user's workflow on a real cluster, as separate `kafka-balancer` processes: snapshot, plan, execute
(watched while it runs), stop. Shared by the executor and fault tests on real Kafka."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from real_kafka import PartitionView, RealKafka

CLI = str(Path(sys.executable).parent / "kafka-balancer")


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout, check=False)


def snapshot_and_plan(kafka: RealKafka, work: Path, *plan_args: str) -> dict[str, Any]:
    """`snapshot` then `plan --proposal`: the proposal document (plan, leader changes, summary)."""
    snap = cli("snapshot", "--bootstrap-servers", kafka.bootstrap_servers, "--output", str(work / "snapshot.json"))
    assert snap.returncode == 0, snap.stderr
    planned = cli(
        "plan",
        "--snapshot",
        str(work / "snapshot.json"),
        "--output",
        str(work / "plan.json"),
        "--proposal",
        str(work / "proposal.json"),
        *plan_args,
    )
    assert planned.returncode == 0, planned.stderr
    proposal: dict[str, Any] = json.loads((work / "proposal.json").read_text())
    return proposal


def targets(proposal: dict[str, Any]) -> dict[tuple[str, int], tuple[int, ...]]:
    return {(p["topic"], p["partition"]): tuple(p["replicas"]) for p in proposal["plan"]["partitions"]}


@dataclass
class Watch:
    """What a poll of the cluster every ~0.3 s saw during a run: breaches of "nothing lost" and
    whether any partition was throttled."""

    isr_before: dict[tuple[str, int], int]
    min_isr: dict[str, int]
    faulted: set[int] = field(default_factory=set)
    violations: list[str] = field(default_factory=list)
    polls: int = 0
    throttled_seen: bool = False

    def check(self, kafka: RealKafka) -> None:
        self.polls += 1
        for key, view in kafka.partitions().items():
            self._check_partition(key, view)
        if not self.throttled_seen and self.polls % 5 == 1:
            # The topics' configs only, and a read a broker the test hangs holds up is asked again at a
            # later poll: any broker may answer it, the hung one included, which answers after the fault.
            with contextlib.suppress(TimeoutError, KafkaException):
                topics = kafka.throttle_leftovers(brokers=False, timeout=5)
                self.throttled_seen = any(k.startswith("topic") for k in topics)
        del self.violations[50:]

    def _check_partition(self, key: tuple[str, int], view: PartitionView) -> None:
        # A replica on a broker the test stopped leaves the ISR by the fault, not the execution.
        isr = len(view.isr) + sum(1 for b in view.replicas if b in self.faulted and b not in view.isr)
        before = self.isr_before.get(key)
        if before is not None and isr < before:
            self.violations.append(f"{key}: ISR {view.isr} smaller than the {before} replicas in sync before")
        needed = self.min_isr.get(key[0])
        if needed is not None and isr < needed:
            self.violations.append(f"{key}: ISR {view.isr} below min.insync.replicas {needed}")


def watch_for(kafka: RealKafka, min_isr: dict[str, int]) -> Watch:
    return Watch({k: len(v.isr) for k, v in kafka.partitions().items()}, min_isr)


def execute(
    kafka: RealKafka, work: Path, *extra: str, log: str = "execute.log", plan: str = "proposal.json"
) -> subprocess.Popen[bytes]:
    args = [CLI, "execute", "--bootstrap-servers", kafka.bootstrap_servers, "--plan", str(work / plan)]
    args += ["--state", str(work / "state.json"), "--poll-interval", "0.5", *extra]
    with (work / log).open("ab") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)


def run_watched(
    kafka: RealKafka,
    proc: subprocess.Popen[bytes],
    watch: Watch,
    *,
    until: Callable[[], bool] | None = None,
    timeout_s: float = 240,
) -> float:
    """Poll the cluster while ``proc`` runs (or until ``until`` holds); the seconds it took."""
    started = time.monotonic()
    try:
        while proc.poll() is None and not (until is not None and until()):
            assert time.monotonic() - started < timeout_s, f"execute still running after {timeout_s:g} s"
            watch.check(kafka)
            time.sleep(0.3)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return time.monotonic() - started


def finish(proc: subprocess.Popen[bytes], timeout_s: float = 120) -> int:
    try:
        return proc.wait(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def state_record(work: Path) -> dict[str, Any]:
    try:
        record: dict[str, Any] = json.loads((work / "state.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return record


def task_runs(text: str) -> list[tuple[str, str]]:
    """The state file's run-length encoded task states, e.g. "c4i9p17"."""
    return re.findall(r"([a-z])(\d+)", text)


def in_flight(work: Path, completed_at_least: int = 1) -> bool:
    """The state file shows moves in flight and at least ``completed_at_least`` completed."""
    record = state_record(work)
    done = sum(int(n) for code, n in task_runs(record.get("tasks", "")) if code == "c")
    return done >= completed_at_least and bool(record.get("inFlight"))

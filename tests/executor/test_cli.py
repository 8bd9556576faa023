"""`kafka-balancer execute` and `kafka-balancer stop` as a user runs them: separate processes over
TCP against the emulator (its clock thread running at 10x), killed with SIGKILL, stopped from
another process. Submissions and cancellations are counted at the emulator's controller."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.cli import main
from kafka_balancer.model import ClusterBuilder, ReassignmentPlan
from kafka_balancer.model.proposal import LeaderChange, Proposal
from submissions import Submissions

from executor.harness import assignment, cluster_model, leftover_throttles, observe, spread_plan

CLI = str(Path(sys.executable).parent / "kafka-balancer")
TIME_SCALE = 10  # emulated seconds per real second


def _setup(emulator: Any, tmp_path: Path, **model: Any) -> tuple[Any, Any, Any, Path, Path]:
    m = cluster_model(brokers=7, used=4, partitions={"orders": 30}, size=4e6, **model)
    cluster = emulator(m, time_scale=TIME_SCALE)
    plan = spread_plan(m, onto=[5, 6, 7])
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan.dumps(indent=2))
    return m, cluster, plan, plan_file, tmp_path / "state.json"


def _execute(cluster: Any, plan_file: Path, state: Path, log: Path) -> subprocess.Popen[bytes]:
    # 2 MB/s per receiving broker: 100 MB onto each of 3 brokers takes ~50 emulated s (~5 s real).
    args = [CLI, "execute", "--bootstrap-servers", cluster.bootstrap_servers, "--plan", str(plan_file),
            "--throttle", "2MB/s", "--state", str(state), "--poll-interval", "0.2"]  # fmt: skip
    with log.open("ab") as out:
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)


def _wait_record(state: Path, ready: Any, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            record = json.loads(state.read_text())
            if ready(record):
                return record
        except (FileNotFoundError, json.JSONDecodeError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"state file never got there: {state.read_text() if state.exists() else 'missing'}")


def _mid_run(record: dict[str, Any]) -> bool:
    tasks = record["tasks"]  # run-length encoded, e.g. "c4i9p17"
    done = sum(int(n) for code, n in _runs(tasks) if code == "c")
    return done >= 3 and bool(record["inFlight"])


def _runs(text: str) -> list[tuple[str, str]]:
    return re.findall(r"([a-z])(\d+)", text)


def _finish(proc: subprocess.Popen[bytes], timeout: float = 60) -> int:
    try:
        return proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_execute_killed_with_sigkill_then_rerun_resumes_without_duplicates(
    emulator, submissions, tmp_path: Path
) -> None:
    _model, cluster, plan, plan_file, state = _setup(emulator, tmp_path)
    observer = observe(cluster)
    log = tmp_path / "execute.log"
    proc = _execute(cluster, plan_file, state, log)
    try:
        killed_at = _wait_record(state, _mid_run)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert killed_at["state"] == "MovingReplicas"
    assert leftover_throttles(cluster)  # the killed process could not clean up
    first_run = set(submissions.moves)

    rerun = _execute(cluster, plan_file, state, log)
    assert _finish(rerun) == 0, log.read_text()
    assert all(n == 1 for n in submissions.moves.values()), submissions.moves  # nothing submitted twice
    assert set(submissions.moves) == {(t.topic, t.partition) for t in plan.partitions}
    assert first_run < set(submissions.moves)
    after = assignment(cluster)
    for t in plan.partitions:
        assert after[(t.topic, t.partition)][0] == list(t.replicas)
        assert after[(t.topic, t.partition)][2] == t.replicas[0]
    assert leftover_throttles(cluster) == {}
    assert observer.violations == []
    assert json.loads(state.read_text())["state"] == "Completed"
    assert "Completed: 30/30 partitions, 292.0/292.0 MB moved" in log.read_text()


def test_stop_from_another_process_cancels_in_flight_moves(emulator, submissions, tmp_path: Path, capsys) -> None:
    model, cluster, _plan, plan_file, state = _setup(emulator, tmp_path)
    observer = observe(cluster)
    log = tmp_path / "execute.log"
    proc = _execute(cluster, plan_file, state, log)
    try:
        _wait_record(state, _mid_run)
        assert main(["stop", "--state", str(state), "--timeout", "30"]) == 0
        assert _finish(proc) == 3, log.read_text()  # exit status 3: stopped
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    record = json.loads(state.read_text())
    assert record["state"] == "Stopped"
    assert record["inFlight"] == []
    assert json.loads(capsys.readouterr().out)["state"] == "Stopped"
    aborted = [line for line in log.read_text().splitlines() if line.startswith("cancelled")]
    assert aborted, log.read_text()
    names = aborted[0].split(": ", 1)[1].split(", ")
    for name in names:
        topic, _, p = name.rpartition("-")
        original = model.partition(model.partition_index(topic, int(p))).replicas
        assert cluster.partition_view(topic, int(p))[0] == list(original)
        assert submissions.cancels[(topic, int(p))] == 1
    assert not cluster.state.reassigning
    assert leftover_throttles(cluster) == {}
    assert observer.violations == []
    assert not Path(str(state) + ".stop").exists()


def test_stop_after_the_executor_was_killed_cleans_up_itself(emulator, submissions, tmp_path: Path) -> None:
    model, cluster, _plan, plan_file, state = _setup(emulator, tmp_path)
    proc = _execute(cluster, plan_file, state, tmp_path / "execute.log")
    try:
        record = _wait_record(state, _mid_run)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert main(["stop", "--state", str(state)]) == 0  # no executor alive: stop cancels and cleans itself
    assert not cluster.state.reassigning
    assert leftover_throttles(cluster) == {}
    for topic, p, *_ in record["inFlight"]:
        if submissions.cancels[(topic, p)]:  # not finished before the cancel arrived
            original = model.partition(model.partition_index(topic, p)).replicas
            assert cluster.partition_view(topic, p)[0] == list(original)
    assert sum(submissions.cancels.values()) > 0
    assert json.loads(state.read_text())["state"] == "Stopped"


def test_dry_run_lists_moves_and_changes_nothing(emulator, submissions, tmp_path: Path, capsys) -> None:
    model = cluster_model(brokers=5, used=3, partitions={"orders": 6}, size=10e6)
    cluster = emulator(model)
    plan = spread_plan(model, onto=[4, 5], reorder_every=2)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan.dumps())
    before = assignment(cluster)
    code = main(["execute", "--bootstrap-servers", cluster.bootstrap_servers, "--plan", str(plan_file),
                 "--dry-run", "--state", str(tmp_path / "state.json")])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith("dry run: 6 replica moves (")
    assert "move orders-0: [1, 2, 3] -> [1, 2, 4]" in out
    assert assignment(cluster) == before
    assert not submissions.moves
    assert not (tmp_path / "state.json").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--throttle", "fast"], "--throttle: not a rate like 50MiB/s, got 'fast'"),
        (["--concurrent-moves-per-broker", "0"], "field 'concurrentMovesPerBroker' must be >= 1, got 0"),
    ],
)
def test_bad_arguments_name_the_field(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text('{"version":1,"partitions":[]}')
    code = main(["execute", "--bootstrap-servers", "127.0.0.1:1", "--plan", str(plan_file), *args])
    assert code == 2
    assert message in capsys.readouterr().err


def test_bad_plan_file_names_the_field(tmp_path: Path, capsys) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":"1,2"}]}')
    code = main(["execute", "--bootstrap-servers", "127.0.0.1:1", "--plan", str(plan_file)])
    assert code == 2
    assert "replicas" in capsys.readouterr().err


def test_missing_bootstrap_servers_is_a_usage_error(tmp_path: Path, capsys) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text('{"version":1,"partitions":[]}')
    assert main(["execute", "--plan", str(plan_file)]) == 2
    assert "execute: --bootstrap-servers is required" in capsys.readouterr().err


def test_execute_a_proposal_file_elects_its_leader_changes_outside_the_plan(emulator, tmp_path: Path) -> None:
    """`plan --proposal` writes the whole proposal; `execute --plan` takes it and also elects the
    partitions whose replica order is already right but whose leader is not the preferred one."""
    b = ClusterBuilder(cluster_name="restarted")
    for i in range(1, 4):
        b.add_broker(i, rack=f"rack-{i}")
    for p in range(3):
        replicas = [1 + (p + k) % 3 for k in range(3)]
        b.add_partition("orders", p, replicas, leader=replicas[1], size_bytes=1e6)  # led by a follower
    model = b.build()
    cluster = emulator(model)
    changes = tuple(
        LeaderChange("orders", p, model.partition(p).replicas[1], model.partition(p).replicas[0]) for p in (0, 1)
    )
    proposal = Proposal("0123456789abcdef", ReassignmentPlan.of([]), changes, {})
    proposal_file = tmp_path / "proposal.json"
    proposal_file.write_text(proposal.dumps(indent=2))
    code = main(["execute", "--bootstrap-servers", cluster.bootstrap_servers, "--plan", str(proposal_file),
                 "--state", str(tmp_path / "state.json"), "--quiet"])  # fmt: skip
    assert code == 0
    after = assignment(cluster)
    for p in (0, 1):
        replicas, _, leader = after[("orders", p)]
        assert leader == replicas[0]
    replicas, _, leader = after[("orders", 2)]
    assert leader == replicas[1]  # not in the proposal: left alone


def test_two_executions_of_one_plan_with_their_own_state_files_keep_the_per_broker_limit(
    emulator, submissions: Submissions, tmp_path: Path
) -> None:
    """Issue 55: two `execute` commands of one plan with different --state files (the lock guards one
    state file) reached 9 moves in flight on a broker against a limit of 5. The limits count every
    reassignment Kafka lists, ours or not, and executors of one cluster on one host take turns from
    reading what is in flight to submitting: each move is submitted once, by one of them."""
    _model, cluster, plan, plan_file, _state = _setup(emulator, tmp_path)
    observer = observe(cluster)
    runs = []
    for name in ("a", "b"):
        args = [CLI, "execute", "--bootstrap-servers", cluster.bootstrap_servers, "--plan", str(plan_file),
                "--throttle", "2MB/s", "--state", str(tmp_path / f"{name}.json"), "--poll-interval", "0.2",
                "--concurrent-moves-per-broker", "2"]  # fmt: skip
        with (tmp_path / f"{name}.log").open("ab") as out:
            runs.append(subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT))
    codes = [_finish(run, timeout=120) for run in runs]
    logs = {name: (tmp_path / f"{name}.log").read_text() for name in ("a", "b")}
    assert codes == [0, 0], logs
    assert submissions.most_on_a_broker == 2, submissions.max_in_flight
    assert set(submissions.moves) == {(t.topic, t.partition) for t in plan.partitions}
    assert set(submissions.moves.values()) == {1}, "every move submitted once, by one of the two"
    assert not submissions.cancels
    assert leftover_throttles(cluster) == {}
    assert observer.violations == []

"""`kafka-balancer plan` as a user runs it: a real process, files in, files out, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dead_broker import left_worse_by_the_hard_goals
from kafka_balancer.model import ReassignmentPlan, dumps_snapshot, snapshot_to_dict

from bench.synthetic import skewed_cluster

CLI = [sys.executable, "-c", "import sys; from kafka_balancer.cli import main; sys.exit(main())"]

POLICY = """\
apiVersion: kafkabalancer.io/v1alpha1
kind: BalancePolicy
metadata: {name: balance, namespace: kafka}
spec:
  cluster: {bootstrapServers: "kafka:9092"}
  resourceGroups: [front, back]
  goals: {balanceThreshold: 1.10}
  mode: Manual
---
apiVersion: kafkabalancer.io/v1alpha1
kind: ResourceGroup
metadata: {name: front, namespace: kafka}
spec:
  brokers: {ids: [0, 1, 2, 3, 4, 5]}
  topics: {patterns: ["topic-0000[0-4]"]}
---
apiVersion: kafkabalancer.io/v1alpha1
kind: ResourceGroup
metadata: {name: back, namespace: kafka}
spec:
  brokers: {racks: []}
  topics: {names: []}
"""


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "plan", *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


def test_plan_without_policy_writes_kafka_json_and_summary(tmp_path: Path) -> None:
    model = skewed_cluster(brokers=9, new_brokers=3, partitions=300, seed=11)
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(dumps_snapshot(model))
    out, summary = tmp_path / "plan.json", tmp_path / "summary.json"
    result = run("--snapshot", snapshot, "--output", out, "--summary", summary)
    assert result.returncode == 0, result.stderr
    assert "proposal " in result.stdout
    data = json.loads(out.read_text())
    assert data["version"] == 1
    plan = ReassignmentPlan.from_dict(data)  # what kafka-reassign-partitions.sh --execute reads
    assert len(plan) > 0
    facts = json.loads(summary.read_text())
    assert facts["balancednessAfter"] > facts["balancednessBefore"]
    assert facts["goals"]["disk-distribution"]["holdsAfter"]
    assert facts["moves"] > 0
    assert facts["bytesToMove"] > 0
    # Same input, same plan, same id.
    again = tmp_path / "again.json"
    assert run("--snapshot", snapshot, "--output", again, "--summary", tmp_path / "s2.json").returncode == 0
    assert again.read_text() == out.read_text()
    assert json.loads((tmp_path / "s2.json").read_text())["proposalId"] == facts["proposalId"]


def test_plan_with_policy_groups_and_operation_override(tmp_path: Path) -> None:
    model = skewed_cluster(brokers=9, new_brokers=0, partitions=200, topics=10, seed=5)
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(dumps_snapshot(model))
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        POLICY.replace("racks: []", "ids: [6, 7, 8]").replace("names: []", 'patterns: ["topic-0000[5-9]"]')
    )
    out, summary = tmp_path / "plan.json", tmp_path / "summary.json"
    result = run(
        "--snapshot", snapshot, "--policy", policy, "--operation", "remove-brokers", "--brokers", "5",
        "--output", out, "--summary", summary,
    )  # fmt: skip
    # The back group's partitions sit on every broker: confinement moves them home to 6-8 too.
    assert result.returncode == 0, result.stderr
    facts = json.loads(summary.read_text())
    assert facts["operation"] == "remove-brokers"
    assert set(facts["groups"]) >= {"front", "back"}
    placement = {(p["topic"], p["partition"]): p["replicas"] for p in snapshot_to_dict(model)["partitions"]}
    for row in json.loads(out.read_text())["partitions"]:
        placement[(row["topic"], row["partition"])] = row["replicas"]
    for (topic, _), replicas in placement.items():
        assert 5 not in replicas
        home = {0, 1, 2, 3, 4} if topic < "topic-00005" else {6, 7, 8}
        assert set(replicas) <= home, (topic, replicas)


def test_unmet_hard_goal_and_bad_input_exit_non_zero_with_the_reason(tmp_path: Path) -> None:
    model = skewed_cluster(brokers=6, new_brokers=0, partitions=100, seed=3)
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(dumps_snapshot(model))
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: kafkabalancer.io/v1alpha1\nkind: BalancePolicy\nmetadata: {name: p}\n"
        "spec:\n  cluster: {bootstrapServers: 'k:9092'}\n  goals: {maxReplicasPerBroker: 10}\n"
    )
    result = run("--snapshot", snapshot, "--policy", policy, "--output", tmp_path / "plan.json")
    assert result.returncode != 0
    assert "replica-capacity" in result.stderr
    assert "add" in result.stderr
    assert "broker" in result.stderr
    assert not (tmp_path / "plan.json").exists()

    bad = snapshot_to_dict(model)
    bad["brokers"][0]["id"] = "zero"
    snapshot.write_text(json.dumps(bad))
    result = run("--snapshot", snapshot, "--output", tmp_path / "plan.json")
    assert result.returncode != 0
    assert "id" in result.stderr
    assert "zero" in result.stderr

    snapshot.write_text(dumps_snapshot(model))
    result = run("--snapshot", snapshot, "--operation", "remove-brokers", "--brokers", "99", "--output", tmp_path / "p")
    assert result.returncode != 0
    assert "operation.brokers" in result.stderr
    assert "99" in result.stderr


def test_plan_trace_shows_where_the_moves_and_bytes_come_from(tmp_path: Path) -> None:
    model = skewed_cluster(brokers=9, new_brokers=3, partitions=300, seed=11)
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(dumps_snapshot(model))
    out, summary, trace = tmp_path / "plan.json", tmp_path / "summary.json", tmp_path / "trace.json"
    plain = run("--snapshot", snapshot, "--output", out, "--summary", summary)
    traced = run("--snapshot", snapshot, "--output", out, "--summary", summary, "--trace", trace)
    assert traced.returncode == 0, traced.stderr
    # Tracing records the plan; it does not change it.
    assert plain.stdout.split(":")[0] == traced.stdout.split(":")[0]  # "proposal <id>"
    facts = json.loads(summary.read_text())
    stages = json.loads(trace.read_text())["stages"]
    top = [s for s in stages if s["depth"] == 0]
    assert [s["stage"] for s in top][:2] == ["operation", "capacity precheck"]
    assert "capacity by leadership" not in {s["stage"] for s in top}  # only for demote-brokers
    # The stages' moves and bytes add up to the plan's, and the last stage ends where the plan does.
    assert sum(s["movesAdded"] for s in top) == facts["moves"] == top[-1]["moves"]
    assert abs(sum(s["bytesAdded"] for s in top) - facts["bytesToMove"]) <= 1e-6 * facts["bytesToMove"]
    inner = [s["stage"] for s in stages if s["depth"] == 1]
    assert inner[0] == "replica-distribution"  # each goal's turn, then the finishing passes
    assert "stand-ins from afar, shortcuts and topic leader chains" in inner
    assert top[0]["goalsOutOfBand"]  # the skewed cluster starts out of band
    assert stages[-1]["goalsOutOfBand"] == facts["goalsViolated"]
    table = run("--snapshot", snapshot, "--output", out, "--trace")
    assert "distribution goals" in table.stdout
    operation = next(line for line in table.stdout.splitlines() if line.startswith("operation "))
    assert "replica, disk, network-in" in operation  # goals out of band, named without "-distribution"


BUDGETED = """\
apiVersion: kafkabalancer.io/v1alpha1
kind: BalancePolicy
metadata: {{name: balance, namespace: kafka}}
spec:
  cluster: {{bootstrapServers: "kafka:9092"}}
  goals: {{maxPlanningSeconds: {seconds}}}
"""


def test_plan_max_seconds_bounds_the_search_and_the_output_says_so(tmp_path: Path) -> None:
    model = skewed_cluster(brokers=9, new_brokers=3, partitions=300, seed=11)
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(dumps_snapshot(model))
    policy = tmp_path / "policy.yaml"
    policy.write_text(BUDGETED.format(seconds="0.000001"))
    out, summary = tmp_path / "plan.json", tmp_path / "summary.json"
    done = run("--snapshot", snapshot, "--policy", policy, "--output", out, "--summary", summary)
    assert done.returncode == 0, done.stderr
    reached = json.loads(summary.read_text())["timeBudgetReached"]
    assert reached == {"seconds": 1e-06, "stage": "distribution goals"}
    assert "time budget of 1e-06 s reached in stage distribution goals: every hard goal holds" in done.stdout
    # --max-seconds overrides the policy's budget: given time, the plan runs to its end.
    done = run(
        "--snapshot", snapshot, "--policy", policy, "--max-seconds", "600", "--output", out, "--summary", summary
    )
    assert done.returncode == 0, done.stderr
    assert "timeBudgetReached" not in json.loads(summary.read_text())
    for bad, said in (("0", "--max-seconds must be in (0, 3600], got 0"), ("nan", "must be a finite number")):
        done = run("--snapshot", snapshot, "--max-seconds", bad, "--output", out)
        assert done.returncode != 0
        assert said in done.stderr
    policy.write_text(BUDGETED.format(seconds="0"))
    done = run("--snapshot", snapshot, "--policy", policy, "--output", out)
    assert done.returncode != 0
    assert "maxPlanningSeconds" in done.stderr


def test_plan_says_which_goals_the_hard_goals_left_worse(tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(dumps_snapshot(left_worse_by_the_hard_goals()))
    summary = tmp_path / "summary.json"
    result = run("--snapshot", snapshot, "--output", tmp_path / "plan.json", "--summary", summary)
    assert result.returncode == 0, result.stderr
    assert json.loads(summary.read_text())["goalsWorsenedByHardGoals"] == ["topic-replica-distribution"]
    assert result.stdout.splitlines()[1:] == [
        "left worse by the hard goals (replicas off dead brokers, hard goals repaired): topic-replica-distribution"
    ]

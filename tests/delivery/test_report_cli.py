"""`kafka-balancer report` as a user runs it: after `kafka-balancer plan`, or with a snapshot taken after."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from kafka_balancer.cli import main
from kafka_balancer.model import ReassignmentPlan
from kafka_balancer.model.snapshot import dumps_snapshot, loads_snapshot
from kafka_balancer.report import broker_loads, planned

from .test_report import balanced, parse, skewed_cluster


@pytest.fixture
def before(tmp_path: Path) -> Path:
    path = tmp_path / "before.json"
    path.write_text(dumps_snapshot(skewed_cluster()))
    return path


def _after_disk_bars(html: str) -> list[float]:
    doc = parse(html)
    bars = [a for tag, a in doc.elements if tag == "rect" and a.get("class") == "bar after"]
    return [float(b["data-value"] or "nan") for b in bars[:6]]  # the first chart is disk, six brokers


def test_report_of_a_proposal_made_by_kafka_balancer_plan(
    before: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proposal_file, plan_file = tmp_path / "proposal.json", tmp_path / "plan.json"
    assert main(["plan", "--snapshot", str(before), "--output", str(plan_file), "--proposal", str(proposal_file)]) == 0
    out = tmp_path / "reports" / "proposal.html"
    assert main(["report", "--before", str(before), "--proposal", str(proposal_file), "--output", str(out)]) == 0
    assert f"report written to {out.resolve()}" in capsys.readouterr().out

    proposal = json.loads(proposal_file.read_text())
    html = out.read_text()
    assert f"{proposal['summary']['moves']} Replica moves" in " ".join(parse(html).text)
    assert re.findall(r'<tr data-goal="([a-z-]+)">', html)  # the planner's goals table
    model = loads_snapshot(before.read_text())
    expected = broker_loads(planned(model, ReassignmentPlan.loads(plan_file.read_text()))).metric("disk")
    assert _after_disk_bars(html) == pytest.approx(expected)

    # The bare reassignment JSON gives the same charts, without the planner's summary.
    plan_only = tmp_path / "plan.html"
    assert main(["report", "--before", str(before), "--plan", str(plan_file), "--output", str(plan_only)]) == 0
    assert _after_disk_bars(plan_only.read_text()) == pytest.approx(expected)
    assert "data-goal" not in plan_only.read_text()


def test_report_of_an_execution_from_two_snapshots(before: Path, tmp_path: Path) -> None:
    after = tmp_path / "after.json"
    after.write_text(dumps_snapshot(balanced(skewed_cluster())))
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"bytesMoved": 2.5e11, "durationSeconds": 3725}))
    out = tmp_path / "execution.html"
    argv = ["report", "--before", str(before), "--after", str(after), "--summary", str(summary), "--output", str(out)]
    assert main([*argv, "--title", "nightly rebalance"]) == 0
    html = out.read_text()
    text = " ".join(parse(html).text)
    assert "nightly rebalance" in text
    assert "250.0 GB" in text
    assert "1 h 2 min" in text
    assert _after_disk_bars(html) == pytest.approx(broker_loads(balanced(skewed_cluster())).metric("disk"))


@pytest.mark.parametrize(
    ("after_args", "content", "message"),
    [
        (["--plan"], '{"version": 1, "partitions": [{"topic": "cold", "partition": 0, "replicas": [9, 1]}]}',
         "plan.partitions[0] (cold-0, replicas [9, 1]): unknown broker id 9"),
        (["--plan"], '{"version": 2, "partitions": []}', "plan: field 'version' must be 1, got 2"),
        (["--proposal"], '{"summary": {}}', "expected an object with a 'plan' field"),
        (["--after"], "{not json", "snapshot"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_naming_the_field(
    before: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    after_args: list[str],
    content: str,
    message: str,
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    out = tmp_path / "never.html"
    assert main(["report", "--before", str(before), *after_args, str(bad), "--output", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()

"""The chart's alerting rules as Prometheus reads them: promtool built from github.com/prometheus/prometheus
(`make prometheus-tools`) checks the rendered PrometheusRule and runs its unit tests
(tests/delivery/prometheus/alerts.test.yaml); the alert names are the same in the chart and in the docs.
tests/controller/test_prometheus_e2e.py evaluates the same rules in a real Prometheus server."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import yaml
from go_tools import run

from .chart import MONITORING_API, REPO, manifests, one, render

UNIT_TESTS = Path(__file__).with_name("prometheus") / "alerts.test.yaml"


def rules_file(values: dict[str, Any], path: Path) -> Path:
    """The chart's PrometheusRule, rendered with ``values``, as a Prometheus rule file."""
    objects = manifests(
        render({"prometheusRule": {"enabled": True, **values}}, api_versions=(MONITORING_API,), name="kafka-balancer")
    )
    path.write_text(yaml.safe_dump({"groups": one(objects, "PrometheusRule")["spec"]["groups"]}, sort_keys=False))
    return path


def _alerts(path: Path) -> list[dict[str, Any]]:
    return [r for group in yaml.safe_load(path.read_text())["groups"] for r in group["rules"] if "alert" in r]


def test_promtool_checks_the_rendered_rules(tmp_path: Path) -> None:
    rules = rules_file({}, tmp_path / "rules.yaml")
    done = run("promtool", ["check", "rules", rules])
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(_alerts(rules))} rules found" in done.stdout


def test_promtool_unit_tests_every_alert_firing_and_silent(tmp_path: Path) -> None:
    rules = rules_file({}, tmp_path / "rules.yaml")
    shutil.copy(UNIT_TESTS, tmp_path / UNIT_TESTS.name)
    done = run("promtool", ["test", "rules", tmp_path / UNIT_TESTS.name])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout
    # Every alert has a case where it fires (labels and annotations compared) and one where it is silent.
    cases: dict[str, list[bool]] = {}
    for test in yaml.safe_load(UNIT_TESTS.read_text())["tests"]:
        for check in test["alert_rule_test"]:
            cases.setdefault(check["alertname"], []).append(bool(check["exp_alerts"]))
            for alert in check["exp_alerts"]:
                assert alert["exp_annotations"]["summary"]
                assert alert["exp_annotations"]["description"]
                assert alert["exp_labels"]["severity"] in {"info", "warning", "critical"}
    names = {a["alert"] for a in _alerts(rules)}
    assert set(cases) == names
    assert all(True in fired and False in fired for fired in cases.values()), cases


def test_the_alert_names_are_the_same_in_the_chart_and_the_docs(tmp_path: Path) -> None:
    names = {a["alert"] for a in _alerts(rules_file({}, tmp_path / "rules.yaml"))}
    operations = (REPO / "docs" / "operations.md").read_text()
    table = set(re.findall(r"^\| `(KafkaBalancer\w+)` \|", operations, re.MULTILINE))
    assert table == names, "docs/operations.md's alert table lists the chart's alerts"
    # Every alert name anywhere in the docs is one of the chart's (the chart is their one source).
    for doc in [
        *sorted((REPO / "docs").glob("*.md")),
        REPO / "README.md",
        REPO / "charts" / "kafka-balancer" / "values.yaml",
    ]:
        named = set(re.findall(r"\bKafka(?:Balancer|Cluster|LogDir)[A-Z][A-Za-z]+", doc.read_text()))
        assert named <= names, f"{doc.name} names alerts the chart does not have: {sorted(named - names)}"
    assert "KafkaBalancerMovesStuck" in (REPO / "docs" / "metrics.md").read_text()

"""The SparkApplication the operator would submit, checked against the CRD's schema, and the state machine."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from kafka_balancer.analysis.spark_application import (
    STATES,
    Action,
    ApplicationTracker,
    SparkApplicationConfig,
    SparkApplicationError,
    build_manifest,
)
from kafka_balancer.cli import analyze as analyze_cli

SCHEMA = yaml.safe_load((Path(__file__).parent / "data" / "sparkapplication-v1beta2.openapi.yaml").read_text())


def _config(**changes: Any) -> SparkApplicationConfig:
    values: dict[str, Any] = {
        "name": "balance-prod-analysis-1",
        "namespace": "kafka",
        "image": "ghcr.io/example/kafka-balancer:0.1.0",
        "samples_url": "/var/lib/kafka-balancer/samples",
        "cluster": "prod",
        "start": "2026-11-21T09:00:00Z",
        "end": "2026-11-21T10:00:00Z",
        "output_path": "/var/lib/kafka-balancer/snapshots/prod.json",
        "volume_claim": "kafka-balancer-samples",
    }
    values.update(changes)
    return SparkApplicationConfig(**values)


def _status(state: str, error: str = "") -> dict[str, Any]:
    return {"applicationState": {"state": state, "errorMessage": error}, "driverInfo": {}}


def test_manifest_is_valid_against_the_crd_schema() -> None:
    manifest = build_manifest(_config(executor_instances=4))
    jsonschema.validate(manifest, SCHEMA)
    spec = manifest["spec"]
    assert manifest["apiVersion"] == "sparkoperator.k8s.io/v1beta2"
    assert spec["type"] == "Python"
    assert spec["restartPolicy"] == {"type": "Never"}
    assert spec["executor"]["instances"] == 4
    assert spec["sparkConf"]["spark.sql.shuffle.partitions"] == "8"
    assert spec["volumes"][0]["persistentVolumeClaim"]["claimName"] == "kafka-balancer-samples"
    assert spec["driver"]["volumeMounts"] == spec["executor"]["volumeMounts"]


def test_manifest_arguments_are_what_the_analyze_cli_accepts() -> None:
    # The driver pod runs cli/analyze.py with these arguments: they must parse.
    spec = build_manifest(_config())["spec"]
    parser = argparse.ArgumentParser()
    analyze_cli.add_arguments(parser)
    args = parser.parse_args(spec["arguments"])
    assert args.engine == "sparkApplication"
    assert args.output == "/var/lib/kafka-balancer/snapshots/prod.json"
    assert spec["mainApplicationFile"].endswith("kafka_balancer/cli/analyze.py")


def test_schema_rejects_what_the_api_server_would() -> None:
    manifest = build_manifest(_config())
    broken = copy.deepcopy(manifest)
    broken["spec"]["mode"] = "in-cluster"
    with pytest.raises(jsonschema.ValidationError, match="'in-cluster' is not one of"):
        jsonschema.validate(broken, SCHEMA)
    broken = copy.deepcopy(manifest)
    del broken["spec"]["mainApplicationFile"]
    with pytest.raises(jsonschema.ValidationError, match="'mainApplicationFile' is a required property"):
        jsonschema.validate(broken, SCHEMA)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"executor_instances": 0}, r"field 'executor_instances' must be an integer >= 1, got 0"),
        ({"image": ""}, r"field 'image' must not be empty"),
        ({"statistic": "p99"}, r"field 'statistic' must be avg or p95, got 'p99'"),
        ({"name": "x" * 64}, r"field 'name' must be at most 63 characters"),
    ],
)
def test_bad_config_names_the_field(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(SparkApplicationError, match=message):
        _config(**changes)


def test_happy_path_through_the_states() -> None:
    tracker = ApplicationTracker(poll_seconds=5)
    observed = [
        tracker.observe(None, 0),
        tracker.observe(_status("SUBMITTED"), 10),
        tracker.observe(_status("RUNNING"), 30),
        tracker.observe(_status("SUCCEEDING"), 90),
        tracker.observe(_status("COMPLETED"), 95),
    ]
    assert [d.action for d in observed] == [Action.WAIT] * 4 + [Action.READ_RESULT]
    assert observed[0].requeue_seconds == 5
    assert tracker.history == ["", "SUBMITTED", "RUNNING", "SUCCEEDING", "COMPLETED"]


@pytest.mark.parametrize(
    ("state", "error", "reason"),
    [
        ("FAILED", "driver OOMKilled", "analysis SparkApplication failed: driver OOMKilled"),
        ("SUBMISSION_FAILED", "", "could not be submitted: no error message"),
    ],
)
def test_failures_carry_the_operator_message(state: str, error: str, reason: str) -> None:
    tracker = ApplicationTracker()
    tracker.observe(_status("RUNNING"), 1)
    decision = tracker.observe(_status(state, error), 2)
    assert decision.action is Action.FAIL
    assert reason in decision.reason


@pytest.mark.parametrize("state", ["", "SUBMITTED", "PENDING_RERUN", "INVALIDATING", "UNKNOWN"])
def test_stuck_before_running_fails_after_the_pending_timeout(state: str) -> None:
    tracker = ApplicationTracker(pending_timeout_seconds=60)
    assert tracker.observe(_status(state), 59).action is Action.WAIT
    decision = tracker.observe(_status(state), 61)
    assert decision.action is Action.FAIL
    assert "not running after 61 s" in decision.reason


def test_unknown_after_running_is_waited_for_until_the_run_timeout() -> None:
    tracker = ApplicationTracker(pending_timeout_seconds=10, run_timeout_seconds=100)
    tracker.observe(_status("RUNNING"), 5)
    # The operator lost the driver pod for a while: not a pending timeout, the run is still young.
    assert tracker.observe(_status("UNKNOWN"), 50).action is Action.WAIT
    assert tracker.observe(_status("FAILING"), 90).action is Action.WAIT
    decision = tracker.observe(_status("FAILING"), 106)
    assert decision.action is Action.FAIL
    assert "running for 101 s (limit 100 s) in state FAILING" in decision.reason


def test_every_documented_state_is_handled_and_others_are_refused() -> None:
    for state in STATES:
        decision = ApplicationTracker().observe(_status(state), 1)
        assert decision.action in (Action.WAIT, Action.READ_RESULT, Action.FAIL)
        assert decision.reason == "" or "unknown" not in decision.reason
    decision = ApplicationTracker().observe(_status("EXPLODED"), 1)
    assert decision.action is Action.FAIL
    assert decision.reason == "unknown SparkApplication state 'EXPLODED'"

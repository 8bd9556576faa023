"""The operator's environment settings: a bad value stops it at start with the variable and the value."""

from __future__ import annotations

import pytest
from kafka_balancer.controller.operator import OperatorConfig


def test_defaults_when_nothing_is_set() -> None:
    config = OperatorConfig.from_env({})
    assert (config.reconcile_seconds, config.kafka_timeout_seconds, config.connect_timeout_seconds) == (30, 30, 10)
    assert (config.metrics_port, config.reconcile_concurrency, config.execution_poll_seconds) == (9090, 8, None)


def test_settings_are_read() -> None:
    config = OperatorConfig.from_env(
        {
            "KAFKA_BALANCER_RECONCILE_SECONDS": "5",
            "KAFKA_BALANCER_KAFKA_TIMEOUT_SECONDS": "2.5",
            "KAFKA_BALANCER_EXECUTION_POLL_SECONDS": "0.5",
            "KAFKA_BALANCER_METRICS_PORT": "0",
        }
    )
    assert (config.reconcile_seconds, config.kafka_timeout_seconds, config.execution_poll_seconds) == (5, 2.5, 0.5)
    assert config.metrics_port == 0  # a free port


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("KAFKA_BALANCER_RECONCILE_SECONDS", "soon", "must be a number of seconds, got 'soon'"),
        ("KAFKA_BALANCER_RECONCILE_SECONDS", "0", "must be > 0 seconds, got '0'"),
        ("KAFKA_BALANCER_KAFKA_TIMEOUT_SECONDS", "-1", "must be > 0 seconds, got '-1'"),
        ("KAFKA_BALANCER_KAFKA_TIMEOUT_SECONDS", "inf", "must be > 0 seconds, got 'inf'"),
        ("KAFKA_BALANCER_EXECUTION_POLL_SECONDS", "nan", "must be > 0 seconds, got 'nan'"),
        ("KAFKA_BALANCER_CONNECT_TIMEOUT_SECONDS", "0", "must be > 0 seconds, got '0'"),
        ("KAFKA_BALANCER_RECONCILE_CONCURRENCY", "0", "must be >= 1, got 0"),
        ("KAFKA_BALANCER_RECONCILE_CONCURRENCY", "two", "must be a whole number, got 'two'"),
        ("KAFKA_BALANCER_METRICS_PORT", "-1", "must be >= 0, got -1"),
        ("KAFKA_BALANCER_PROPOSAL_MAX_BYTES", "1.5", "must be a whole number, got '1.5'"),
    ],
)
def test_a_bad_value_names_the_variable_and_the_value(name: str, value: str, says: str) -> None:
    with pytest.raises(SystemExit) as stopped:
        OperatorConfig.from_env({name: value})
    assert str(stopped.value) == f"kafka-balancer: bad KAFKA_BALANCER_* environment setting: {name} {says}"

"""Operator-wide Spark settings (the chart's spark.local / spark.connect values) fill in a policy's engine."""

from __future__ import annotations

import pytest
from kafka_balancer.analysis.spark import EngineConfig
from kafka_balancer.controller.operator import OperatorConfig
from kafka_balancer.controller.spark_defaults import SparkDefaults
from kafka_balancer.model.policy.balance_policy import AnalysisEngine
from kafka_balancer.model.policy.parsing import PolicyError, parse_balance_policy_spec

CHART_LOCAL = {
    "KAFKA_BALANCER_SPARK_ENGINE": "local",
    "KAFKA_BALANCER_SPARK_URL": "local[2]",
    "KAFKA_BALANCER_SPARK_DRIVER_MEMORY": "1g",
}
CHART_CONNECT = {"KAFKA_BALANCER_SPARK_ENGINE": "connect", "KAFKA_BALANCER_SPARK_URL": "sc://spark-connect.spark:15002"}


def test_the_charts_local_settings_size_the_in_process_spark() -> None:
    defaults = OperatorConfig.from_env(CHART_LOCAL).spark_defaults
    assert defaults.engine(AnalysisEngine()) == EngineConfig(
        type="local", url="local[2]", conf=(("spark.driver.memory", "1g"),)
    )
    # A policy's own master wins; nothing set anywhere is Spark's local[*].
    assert defaults.engine(AnalysisEngine(type="local", url="local[1]")).url == "local[1]"
    assert SparkDefaults.from_env({}).engine(AnalysisEngine()) == EngineConfig(type="local")


def test_the_charts_connect_url_serves_policies_that_name_none() -> None:
    defaults = SparkDefaults.from_env(CHART_CONNECT)
    assert defaults.engine(AnalysisEngine(type="connect")).url == "sc://spark-connect.spark:15002"
    assert defaults.engine(AnalysisEngine(type="connect", url="sc://other:15002")).url == "sc://other:15002"
    assert defaults.engine(AnalysisEngine()).url is None  # local policies keep the in-process default
    with pytest.raises(ValueError, match=r"spec.analysis.engine.url: type 'connect' needs a Spark Connect URL"):
        SparkDefaults.from_env(CHART_LOCAL).engine(AnalysisEngine(type="connect"))


def test_a_connect_policy_without_url_is_valid_but_a_spark_application_one_is_not() -> None:
    base = {"cluster": {"bootstrapServers": "127.0.0.1:9092"}}
    spec = parse_balance_policy_spec({**base, "analysis": {"engine": {"type": "connect"}}})
    assert spec.analysis.engine.url is None
    with pytest.raises(PolicyError, match="sparkApplication needs a 'url'"):
        parse_balance_policy_spec({**base, "analysis": {"engine": {"type": "sparkApplication"}}})


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"KAFKA_BALANCER_SPARK_ENGINE": "yarn"}, "KAFKA_BALANCER_SPARK_ENGINE must be local, connect or"),
        ({"KAFKA_BALANCER_SPARK_URL": "spark://master:7077"}, "spark://master:7077"),
        ({"KAFKA_BALANCER_SPARK_ENGINE": "connect", "KAFKA_BALANCER_SPARK_URL": "http://x"}, "http://x"),
    ],
)
def test_bad_settings_stop_the_operator_naming_the_value(env: dict[str, str], message: str) -> None:
    with pytest.raises(SystemExit, match=message):
        OperatorConfig.from_env(env)

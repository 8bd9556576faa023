"""Operator-wide Spark settings: the chart's ``spark.local`` and ``spark.connect`` values.

A policy's ``spec.analysis.engine`` chooses where its analysis (and its per-group planning) runs; these
fill in what the policy leaves out. ``KAFKA_BALANCER_SPARK_ENGINE`` says which chart block
``KAFKA_BALANCER_SPARK_URL`` came from:

- ``local``: the master of the in-process Spark (``local[2]``: the pod's CPU limit, not every core of
  the node) and ``KAFKA_BALANCER_SPARK_DRIVER_MEMORY`` (the JVM's heap, fixed when the JVM starts);
- ``connect``: the Spark Connect URL used by policies with ``engine.type: connect`` and no ``url``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafka_balancer.analysis.spark import EngineConfig
from kafka_balancer.model.policy.balance_policy import AnalysisEngine


@dataclass(frozen=True)
class SparkDefaults:
    local_master: str | None = None
    driver_memory: str | None = None
    connect_url: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SparkDefaults:
        engine = env.get("KAFKA_BALANCER_SPARK_ENGINE") or "local"
        url = env.get("KAFKA_BALANCER_SPARK_URL") or None
        if engine not in ("local", "connect", "sparkApplication"):
            raise ValueError(f"KAFKA_BALANCER_SPARK_ENGINE must be local, connect or sparkApplication, got {engine!r}")
        defaults = cls(
            local_master=url if engine == "local" else None,
            driver_memory=env.get("KAFKA_BALANCER_SPARK_DRIVER_MEMORY") or None,
            connect_url=url if engine == "connect" else None,
        )
        defaults.engine(AnalysisEngine(type="local"))  # a bad master or memory fails at startup
        if defaults.connect_url is not None:
            defaults.engine(AnalysisEngine(type="connect"))
        return defaults

    def engine(self, spec: AnalysisEngine) -> EngineConfig:
        """The engine for a policy's ``spec.analysis.engine`` (local or connect); ValueError names the field."""
        if spec.type == "local":
            conf = (("spark.driver.memory", self.driver_memory),) if self.driver_memory else ()
            return EngineConfig(type="local", url=spec.url or self.local_master, conf=conf)
        if spec.type == "connect":
            url = spec.url or self.connect_url
            if not url:
                raise ValueError(
                    "spec.analysis.engine.url: type 'connect' needs a Spark Connect URL (sc://host:15002) here or "
                    "operator-wide (the chart's spark.connect.url, KAFKA_BALANCER_SPARK_URL)"
                )
            return EngineConfig(type="connect", url=url)
        raise ValueError(f"spec.analysis.engine.type: {spec.type!r} is not run inside the operator")

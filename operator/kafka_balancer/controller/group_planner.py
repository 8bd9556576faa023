"""Policies with many resource groups are planned one group per Spark task.

Groups share no brokers and no partitions, so planning them is embarrassingly parallel
(:mod:`kafka_balancer.analysis.group_planning`); the result is the same proposal, with the same id,
as planning them one after the other. Below ``min_groups`` the planner runs in the operator process:
starting Spark for two or three groups costs more than it saves. Operations that are planned over the
whole cluster (demote, replication-factor change, move topics) and policies whose analysis runs as a
SparkApplication (the operator then holds no Spark session) are always planned in-process.
"""

from __future__ import annotations

import logging

from kafka_balancer import planner
from kafka_balancer.analysis.group_planning import plan_groups
from kafka_balancer.analysis.spark import EngineConfig
from kafka_balancer.controller.services import Groups, ModulePlanner
from kafka_balancer.controller.spark_defaults import SparkDefaults
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec
from kafka_balancer.model.proposal import Proposal
from kafka_balancer.planner import PlannerOptions
from kafka_balancer.planner.policy import options_from_policy

logger = logging.getLogger(__name__)


class SparkGroupPlanner(ModulePlanner):
    """:class:`ModulePlanner` that plans policies with at least ``min_groups`` groups on Spark."""

    def __init__(
        self, min_groups: int = 8, engine: EngineConfig | None = None, spark_defaults: SparkDefaults | None = None
    ) -> None:
        if min_groups < 2:
            raise ValueError(f"KAFKA_BALANCER_SPARK_PLANNING_MIN_GROUPS must be >= 2, got {min_groups}")
        self.min_groups = min_groups
        self._engine = engine  # tests pin the shared session's engine; else the policy's own
        self._defaults = spark_defaults or SparkDefaults()
        self.spark_plans = 0  # proposals planned on Spark since start (read by tests and logs)

    def propose(
        self, model: ClusterModel, spec: BalancePolicySpec, groups: Groups, *, options: PlannerOptions | None = None
    ) -> Proposal:
        options = options or options_from_policy(spec, groups, model)
        engine = spec.analysis.engine
        if (
            len(options.resource_groups) < self.min_groups
            or not options.operation.kind.per_group
            or engine.type == "sparkApplication"
        ):
            return planner.plan(model, options)
        config = self._engine or self._defaults.engine(engine)
        result = plan_groups(model, options, config)
        self.spark_plans += 1
        logger.info(
            "planned %d resource groups in %d Spark tasks (slowest group %.1f s)",
            len(result.tasks),
            len(set(result.tasks.values())),
            max(result.seconds.values(), default=0.0),
        )
        return result.proposal

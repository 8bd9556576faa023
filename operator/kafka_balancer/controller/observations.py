"""Side observations made with the same Kafka connection as the reconciliation: consumer-group balance
(when ``spec.analysis.consumerGroups.enabled``), the durability audit and what each log directory holds
(JBOD). All are reported (status, metrics), never acted on, so a failure here is logged and never stalls
the policy.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from kafka_balancer.analysis import audit as durability
from kafka_balancer.analysis import consumer_groups
from kafka_balancer.controller.status import ConsumerGroupStatus, DurabilityStatus
from kafka_balancer.durability import audit
from kafka_balancer.kafka.port import KafkaPort
from kafka_balancer.metrics import LOG_DIR_METRIC_NAMES, Metrics, PolicyKey, log_dir_samples
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.log_dir_usage import log_dir_usage
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec

log = logging.getLogger(__name__)


@dataclass
class Observations:
    consumer_groups: list[ConsumerGroupStatus] | None = None  # most imbalanced first
    durability: DurabilityStatus | None = None
    samples: list[tuple[str, dict[str, str], float]] = field(default_factory=list)
    replaces: tuple[str, ...] = ()  # metric families these samples replace whole


def observe(port: KafkaPort, model: ClusterModel, spec: BalancePolicySpec) -> Observations:
    out = Observations(samples=log_dir_samples(log_dir_usage(model)), replaces=LOG_DIR_METRIC_NAMES)
    try:
        report = audit(model, port.topic_configs(model.topics))
    except Exception as err:
        log.warning("durability audit failed: %s", err)
    else:
        out.durability = DurabilityStatus.model_validate(report.to_dict()["summary"])
        out.samples += durability.metric_samples(report)
        out.replaces += durability.METRIC_NAMES
    if spec.analysis.consumer_groups.enabled:
        try:
            data = consumer_groups.collect(port, model)
            reports = consumer_groups.analyze(data)
        except Exception as err:
            log.warning("consumer-group analysis failed: %s", err)
        else:
            for group, why in data.screened.skipped.items():
                log.warning("consumer group %r left out of the analysis: %s", group, why)
            top_n = spec.analysis.consumer_groups.top_n
            top = consumer_groups.most_imbalanced(reports, top_n)
            out.consumer_groups = [ConsumerGroupStatus.model_validate(row) for row in top]
            out.samples += consumer_groups.metric_samples(reports, top_n)
            out.replaces += consumer_groups.METRIC_NAMES
    return out


def cordons(model: ClusterModel) -> dict[str, Any]:
    """The cordons the status shows (ObservedCluster fields): brokers with every log directory
    cordoned, and each broker's cordoned directories."""
    ids = model.broker_ids.tolist()
    dirs = {str(ids[b]): [d.path for d in model.log_dirs(b) if d.cordoned] for b in range(model.num_brokers)}
    return {
        "cordoned_brokers": [ids[b] for b in model.broker_cordoned.nonzero()[0].tolist()],
        "cordoned_log_dirs": {b: paths for b, paths in dirs.items() if paths},
    }


def export(metrics: Metrics, key: PolicyKey, observations: Observations) -> None:
    if observations.replaces:
        metrics.set_analysis_samples(key, observations.samples, replaces=observations.replaces)

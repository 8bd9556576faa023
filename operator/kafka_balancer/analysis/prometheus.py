"""Optional measured rates from Prometheus (HTTP API ``/api/v1/query``), with presets for Strimzi's JMX names.

Kafka has no per-partition byte counter and its admin API has no rates at all, so the sampler records
cumulative counters from Prometheus when a ``prometheusUrl`` is configured: topic bytes in/out and
messages in (which give the topic's average message size), broker CPU seconds, and log sizes as a
fallback for replicas DescribeLogDirs did not report. Each is a PromQL template that users can override;
the ``strimzi`` preset matches the metric names of Strimzi's JMX exporter configuration.
"""

from __future__ import annotations

import json
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final


class PrometheusError(RuntimeError):
    """Prometheus could not answer a query; the message names the URL and the query."""


@dataclass(frozen=True)
class PromQueries:
    """PromQL of each measured series; an empty string disables that series.

    Broker series must keep a label from which the broker id can be read (``broker_label``; the id is
    the last run of digits of its value, e.g. ``my-cluster-kafka-2`` -> 2).
    """

    topic_bytes_in: str = 'sum by (topic) (kafka_server_brokertopicmetrics_bytesin_total{topic!=""})'
    topic_messages_in: str = 'sum by (topic) (kafka_server_brokertopicmetrics_messagesin_total{topic!=""})'
    topic_bytes_out: str = 'sum by (topic) (kafka_server_brokertopicmetrics_bytesout_total{topic!=""})'
    broker_cpu_seconds: str = 'sum by (kubernetes_pod_name) (process_cpu_seconds_total{job=~".*kafka.*"})'
    broker_bytes_in: str = 'sum by (kubernetes_pod_name) (kafka_server_brokertopicmetrics_bytesin_total{topic=""})'
    broker_bytes_out: str = 'sum by (kubernetes_pod_name) (kafka_server_brokertopicmetrics_bytesout_total{topic=""})'
    log_size: str = "sum by (topic, partition, kubernetes_pod_name) (kafka_log_log_size)"
    broker_label: str = "kubernetes_pod_name"


PRESETS: Final[Mapping[str, PromQueries]] = {
    "strimzi": PromQueries(),
    # Plain Prometheus scrape config of the same exporter: the pod is in `pod` (kube-prometheus relabeling).
    "kube-prometheus": PromQueries(
        broker_cpu_seconds='sum by (pod) (process_cpu_seconds_total{pod=~".*kafka.*"})',
        broker_bytes_in='sum by (pod) (kafka_server_brokertopicmetrics_bytesin_total{topic=""})',
        broker_bytes_out='sum by (pod) (kafka_server_brokertopicmetrics_bytesout_total{topic=""})',
        log_size="sum by (topic, partition, pod) (kafka_log_log_size)",
        broker_label="pod",
    ),
}


def queries_for(preset: str = "strimzi", overrides: Mapping[str, str] | None = None) -> PromQueries:
    """A preset with some templates overridden (keys are PromQueries field names)."""
    if preset not in PRESETS:
        raise ValueError(f"prometheus: field 'preset' must be one of {', '.join(PRESETS)}, got {preset!r}")
    base = PRESETS[preset]
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(PromQueries.__dataclass_fields__))
    if unknown:
        raise ValueError(
            f"prometheus: unknown query '{unknown[0]}' (known: {', '.join(PromQueries.__dataclass_fields__)})"
        )
    return replace(base, **overrides)


@dataclass(frozen=True)
class PromSample:
    """Counter values at one instant (cumulative; the Spark job turns them into rates)."""

    topic_bytes_in: dict[str, float] = field(default_factory=dict)
    topic_messages_in: dict[str, float] = field(default_factory=dict)
    topic_bytes_out: dict[str, float] = field(default_factory=dict)
    broker_cpu_seconds: dict[int, float] = field(default_factory=dict)
    broker_bytes_in: dict[int, float] = field(default_factory=dict)
    broker_bytes_out: dict[int, float] = field(default_factory=dict)
    log_size: dict[tuple[str, int, int], float] = field(default_factory=dict)  # (topic, partition, broker)


_DIGITS = re.compile(r"(\d+)\D*$")


class PrometheusClient:
    def __init__(self, url: str, queries: PromQueries | None = None, *, timeout: float = 10.0):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"prometheus: field 'prometheusUrl' must be an http(s) URL, got {url!r}")
        self.url = url.rstrip("/")
        self.queries = queries or PromQueries()
        self.timeout = timeout

    def query(self, promql: str, at: datetime | None = None) -> list[tuple[dict[str, str], float]]:
        """An instant query; returns (labels, value) per series of the resulting vector."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at.timestamp():.3f}"
        target = f"{self.url}/api/v1/query?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(target, timeout=self.timeout) as response:  # noqa: S310 (http(s) checked)
                body: Any = json.loads(response.read())
        except urllib.error.HTTPError as err:
            detail = err.read().decode("utf-8", "replace")[:200]
            raise PrometheusError(f"prometheus {self.url}: query {promql!r} failed: HTTP {err.code} {detail}") from None
        except (urllib.error.URLError, OSError, json.JSONDecodeError) as err:
            raise PrometheusError(f"prometheus {self.url}: query {promql!r} failed: {err}") from None
        if not isinstance(body, dict) or body.get("status") != "success":
            raise PrometheusError(f"prometheus {self.url}: query {promql!r} failed: {body!r:.200}")
        data = body.get("data") or {}
        if data.get("resultType") != "vector":
            raise PrometheusError(
                f"prometheus {self.url}: query {promql!r} must return an instant vector, got {data.get('resultType')!r}"
            )
        series = []
        for item in data.get("result", []):
            value = float(item["value"][1])
            if math.isfinite(value):
                series.append(({str(k): str(v) for k, v in item.get("metric", {}).items()}, value))
        return series

    def _by(self, promql: str, at: datetime | None, label: str) -> dict[str, float]:
        if not promql:
            return {}
        return {labels[label]: value for labels, value in self.query(promql, at) if label in labels}

    def _by_broker(self, promql: str, at: datetime | None) -> dict[int, float]:
        result: dict[int, float] = {}
        for name, value in self._by(promql, at, self.queries.broker_label).items():
            match = _DIGITS.search(name)
            if match:
                result[int(match.group(1))] = result.get(int(match.group(1)), 0.0) + value
        return result

    def sample(self, at: datetime | None = None) -> PromSample:
        q = self.queries
        sizes: dict[tuple[str, int, int], float] = {}
        if q.log_size:
            for labels, value in self.query(q.log_size, at):
                match = _DIGITS.search(labels.get(q.broker_label, ""))
                if match and "topic" in labels and labels.get("partition", "").isdigit():
                    sizes[(labels["topic"], int(labels["partition"]), int(match.group(1)))] = value
        return PromSample(
            topic_bytes_in=self._by(q.topic_bytes_in, at, "topic"),
            topic_messages_in=self._by(q.topic_messages_in, at, "topic"),
            topic_bytes_out=self._by(q.topic_bytes_out, at, "topic"),
            broker_cpu_seconds=self._by_broker(q.broker_cpu_seconds, at),
            broker_bytes_in=self._by_broker(q.broker_bytes_in, at),
            broker_bytes_out=self._by_broker(q.broker_bytes_out, at),
            log_size=sizes,
        )

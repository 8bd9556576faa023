"""Render the Helm chart with the real Helm library (helm-python-sdk, Helm v4 compiled in) for the chart tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml
from helm_python import _native

REPO = Path(__file__).resolve().parents[2]
CHART_DIR = REPO / "charts" / "kafka-balancer"
MONITORING_API = "monitoring.coreos.com/v1"

# Every optional feature switched on at once (the "all features" render).
ALL_FEATURES: dict[str, Any] = {
    "image": {"digest": "sha256:" + "ab" * 32},
    "imagePullSecrets": [{"name": "registry"}],
    "watch": {"allNamespaces": False, "namespaces": ["kafka-a", "kafka-b"]},
    "operator": {
        "logLevel": "verbose",
        "extraArgs": ["--log-format=json"],
        "extraEnv": [{"name": "TZ", "value": "UTC"}],
    },
    "spark": {
        "engine": "sparkApplication",
        "sparkApplication": {"namespace": "spark-jobs", "volumeClaim": "kafka-balancer-samples"},
    },
    "sampleStore": {"persistence": {"enabled": True, "storageClassName": "fast", "annotations": {"backup": "daily"}}},
    "serviceAccount": {"annotations": {"iam.example.com/role": "kafka-balancer"}},
    "rbac": {
        "secrets": [
            {"namespace": "kafka-a", "names": ["team-a-kafka"]},
            {"namespace": "kafka-b", "names": ["team-b-kafka", "team-b-kafka-tls"]},
        ]
    },
    "metrics": {
        "service": {"annotations": {"prometheus.io/scrape": "true"}},
        "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
    },
    "prometheusRule": {
        "enabled": True,
        "labels": {"release": "kube-prometheus-stack"},
        "alertLabels": {"team": "kafka"},
    },
    "grafanaDashboard": {"enabled": True, "namespace": "monitoring", "annotations": {"grafana_folder": "Kafka"}},
    "priorityClassName": "system-cluster-critical",
    "podAnnotations": {"a": "b"},
    "podLabels": {"tier": "ops"},
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ops", "effect": "NoSchedule"}],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["ops"]}]}]
            }
        }
    },
}


def render(
    values: dict[str, Any] | None = None,
    *,
    api_versions: tuple[str, ...] = (),
    namespace: str = "kafka-balancer",
    name: str = "kb",
) -> dict[str, str]:
    """Template path -> rendered text, like ``helm template --api-versions ...``.

    ``Chart.render`` of helm-python-sdk 0.2.2 does not expose ``api_versions``, although the native
    ``helm_render`` call accepts it (its option struct has ``api_versions`` and ``kube_version``), so
    the call is made one level down to test the ``.Capabilities.APIVersions.Has`` guards.
    """
    with helm.Chart.load(CHART_DIR) as chart:
        options: dict[str, Any] = {"name": name, "namespace": namespace, "is_install": True}
        if api_versions:
            options["api_versions"] = list(api_versions)
        rendered: dict[str, str] = json.loads(
            _native.call_string(
                "helm_render",
                chart._raw(),
                None if values is None else json.dumps(values),
                json.dumps(options),
            )
        )
    return rendered


def manifests(rendered: dict[str, str]) -> list[dict[str, Any]]:
    """The Kubernetes objects of a render (NOTES.txt and empty documents left out)."""
    objects: list[dict[str, Any]] = []
    for path, text in sorted(rendered.items()):
        if path.endswith("NOTES.txt"):
            continue
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects


def notes(rendered: dict[str, str]) -> str:
    return next(text for path, text in rendered.items() if path.endswith("NOTES.txt"))


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(objects, kind)
    assert len(found) == 1, f"expected one {kind}, got {[o['metadata']['name'] for o in found]}"
    return found[0]

"""JSON schemas for the two prometheus-operator custom resources the chart renders.

kubernetes-validate only knows built-in kinds. These schemas follow the monitoring.coreos.com/v1
API reference (ServiceMonitorSpec, Endpoint, PrometheusRuleSpec, RuleGroup, Rule) for the fields
the chart uses, closed with additionalProperties: false so a misspelt field fails like
`kubectl apply --validate=strict` would against the real CRDs.
"""

from __future__ import annotations

from typing import Any

_STRING_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
_DURATION: dict[str, Any] = {
    "type": "string",
    "pattern": "^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$",
}
_METADATA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "namespace"],
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"},
        "namespace": {"type": "string"},
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
    },
    "additionalProperties": False,
}
_LABEL_SELECTOR: dict[str, Any] = {
    "type": "object",
    "properties": {"matchLabels": _STRING_MAP, "matchExpressions": {"type": "array"}},
    "additionalProperties": False,
}

SERVICE_MONITOR: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": _METADATA,
        "spec": {
            "type": "object",
            "required": ["selector", "endpoints"],
            "additionalProperties": False,
            "properties": {
                "selector": _LABEL_SELECTOR,
                "namespaceSelector": {
                    "type": "object",
                    "properties": {
                        "any": {"type": "boolean"},
                        "matchNames": {"type": "array", "items": {"type": "string"}},
                    },
                    "additionalProperties": False,
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string"},
                            "scheme": {"enum": ["http", "https"]},
                            "interval": _DURATION,
                            "scrapeTimeout": _DURATION,
                            "honorLabels": {"type": "boolean"},
                        },
                    },
                },
            },
        },
    },
}

PROMETHEUS_RULE: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "PrometheusRule"},
        "metadata": _METADATA,
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "groups": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name", "rules"],
                        "additionalProperties": False,
                        "properties": {
                            "name": {"type": "string", "minLength": 1},
                            "interval": _DURATION,
                            "rules": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "required": ["expr"],
                                    "additionalProperties": False,
                                    "properties": {
                                        "alert": {"type": "string", "pattern": "^[a-zA-Z_][a-zA-Z0-9_]*$"},
                                        "record": {"type": "string"},
                                        "expr": {"type": "string", "minLength": 1},
                                        "for": _DURATION,
                                        "keep_firing_for": _DURATION,
                                        "labels": _STRING_MAP,
                                        "annotations": _STRING_MAP,
                                    },
                                },
                            },
                        },
                    },
                }
            },
        },
    },
}

MONITORING_SCHEMAS: dict[str, dict[str, Any]] = {"ServiceMonitor": SERVICE_MONITOR, "PrometheusRule": PROMETHEUS_RULE}

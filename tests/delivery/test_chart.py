"""The Helm chart, linted and rendered by the real Helm library and validated as Kubernetes would."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest
import yaml

from .chart import ALL_FEATURES, CHART_DIR, MONITORING_API, REPO, by_kind, manifests, notes, one, render
from .monitoring_schemas import MONITORING_SCHEMAS

# The oldest Kubernetes the chart declares (Chart.yaml kubeVersion) and the newest kubernetes-validate knows.
KUBE_VERSIONS = ("1.25.0", kubernetes_validate.utils.latest_version())
RECOMMENDED_LABELS = (
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/part-of",
    "helm.sh/chart",
)
# kubernetes-validate has no schema for custom resources: these are checked against monitoring_schemas.py.
MONITORING_KINDS = set(MONITORING_SCHEMAS)


def _validate_all(objects: list[dict[str, Any]]) -> set[str]:
    """kubernetes-validate --strict for built-in kinds; returns the kinds validated."""
    kinds = set()
    for obj in objects:
        if obj["kind"] in MONITORING_KINDS:
            continue
        for version in KUBE_VERSIONS:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as err:
                path = ".".join(str(p) for p in err.path)
                pytest.fail(f"{obj['kind']}/{obj['metadata']['name']} invalid for {version}: {path}: {err.message}")
        kinds.add(obj["kind"])
    return kinds


def _check_monitoring_object(obj: dict[str, Any]) -> None:
    jsonschema.validate(obj, MONITORING_SCHEMAS[obj["kind"]])


def _lint_problems(values: dict[str, Any] | None) -> list[dict[str, Any]]:
    report = helm.lint(CHART_DIR, values, strict=True, kube_version="v1.30.0")
    assert report["errors"] == []
    # Severity 1 (info) is only "icon is recommended"; warnings (2) and errors (3) fail.
    return [m for m in report["messages"] if m["severity"] >= 2]


def test_lint_passes_with_defaults_and_all_features() -> None:
    assert _lint_problems(None) == []
    assert _lint_problems(ALL_FEATURES) == []


def test_default_render_is_valid_kubernetes() -> None:
    objects = manifests(render())
    kinds = _validate_all(objects)
    assert kinds == {
        "Deployment",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Service",
    }
    # Off by default: no PVC, no monitoring objects, no Secret access, no Spark operator access. The one
    # Role is the Lease's, in the release namespace (one operator acts at a time).
    assert not by_kind(objects, "PersistentVolumeClaim")
    assert [(r["metadata"]["namespace"], r["metadata"]["name"]) for r in by_kind(objects, "Role")] == [
        ("kafka-balancer", "kb-kafka-balancer-lease")
    ]
    for obj in objects:
        for label in RECOMMENDED_LABELS:
            assert label in obj["metadata"]["labels"], f"{obj['kind']} lacks label {label}"


def test_every_optional_feature_renders_valid_manifests() -> None:
    objects = manifests(render(ALL_FEATURES, api_versions=(MONITORING_API,)))
    kinds = _validate_all(objects)
    # Named namespaces: Roles only, no cluster-wide grant at all (the claims on clusters come from the watch).
    assert kinds == {
        "Deployment", "ServiceAccount", "Role", "RoleBinding", "Service", "PersistentVolumeClaim", "ConfigMap",
    }  # fmt: skip
    for kind in MONITORING_KINDS:
        _check_monitoring_object(one(objects, kind))
    for obj in objects:
        for label in RECOMMENDED_LABELS:
            assert label in obj["metadata"]["labels"], f"{obj['kind']}/{obj['metadata']['name']} lacks {label}"

    deployment = one(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == "ghcr.io/kafka-balancer/kafka-balancer@sha256:" + "ab" * 32
    assert container["args"][:2] == ["--namespace=kafka-a", "--namespace=kafka-b"]
    assert "--verbose" in container["args"]
    assert container["args"][-1] == "--log-format=json"
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["KAFKA_BALANCER_SPARK_ENGINE"] == "sparkApplication"
    assert env["KAFKA_BALANCER_SPARK_NAMESPACE"] == "spark-jobs"
    assert env["TZ"] == "UTC"
    # Each policy names its cluster and credentials Secret (spec.cluster); the operator reads that Secret
    # through the API, so the pod carries no connection settings and nothing secret.
    connection = re.compile(r"KAFKA_BALANCER_KAFKA_(BOOTSTRAP|SECURITY|SASL|CREDENTIALS|USERNAME|PASSWORD|CA)")
    assert not [name for name in env if connection.match(name)]
    assert not any("secretKeyRef" in e.get("valueFrom", {}) for e in container["env"])
    assert not any("secret" in v for v in pod["volumes"])
    # The Secrets in rbac.secrets are readable, by name, in their own namespace: one Role per namespace.
    secret_roles = {
        r["metadata"]["namespace"]: r["rules"]
        for r in by_kind(objects, "Role")
        if r["metadata"]["name"].endswith("-kafka-credentials")
    }
    assert secret_roles == {
        ns: [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": names, "verbs": ["get"]}]
        for ns, names in {"kafka-a": ["team-a-kafka"], "kafka-b": ["team-b-kafka", "team-b-kafka-tls"]}.items()
    }
    samples = next(v for v in pod["volumes"] if v["name"] == "samples")
    pvc = one(objects, "PersistentVolumeClaim")
    assert samples["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]
    assert pvc["spec"]["storageClassName"] == "fast"
    assert pvc["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"


def test_deployment_runs_non_root_on_a_read_only_root_filesystem() -> None:
    deployment = one(manifests(render()), "Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 60  # time for kopf's cleanup to checkpoint executions
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    container = pod["containers"][0]
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    # Everything the process writes lives on a volume: /tmp, Spark's local dirs, the sample store.
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert set(mounts) == {"/tmp", env["SPARK_LOCAL_DIRS"], env["KAFKA_BALANCER_SAMPLE_STORE"]}
    assert env["HOME"] == "/tmp"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert set(volumes) == set(mounts.values())
    assert "emptyDir" in volumes["samples"]  # no persistence by default

    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 9090, "health": 8080}
    assert f"--liveness=http://0.0.0.0:{ports['health']}/healthz" in container["args"]
    assert "--all-namespaces" in container["args"]
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["resources"]["requests"]["memory"] == "1Gi"

    service = one(manifests(render()), "Service")
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


@pytest.mark.parametrize(
    ("switch_on", "api_present", "rendered"),
    [(True, True, True), (True, False, False), (False, True, False), (False, False, False)],
)
def test_monitoring_objects_need_the_switch_and_the_api(switch_on: bool, api_present: bool, rendered: bool) -> None:
    values = {
        "metrics": {"serviceMonitor": {"enabled": switch_on, "labels": {"release": "prom"}}},
        "prometheusRule": {"enabled": switch_on, "labels": {"release": "prom"}},
    }
    output = render(values, api_versions=(MONITORING_API,) if api_present else ())
    objects = manifests(output)
    for kind in MONITORING_KINDS:
        found = by_kind(objects, kind)
        assert bool(found) == rendered, kind
        if found:
            assert found[0]["metadata"]["labels"]["release"] == "prom"
    # Asked for but impossible: the install notes say so instead of failing silently.
    warned = "monitoring.coreos.com/v1 API is not" in notes(output)
    assert warned == (switch_on and not api_present)


def test_alert_rules_cover_what_a_kafka_operator_watches() -> None:
    """The rules' PromQL is checked by promtool (test_prometheus_rules.py); here, what they watch."""
    objects = manifests(
        render({"prometheusRule": {"enabled": True, "imbalanceFor": "45m"}}, api_versions=(MONITORING_API,))
    )
    rule = one(objects, "PrometheusRule")
    rules = rule["spec"]["groups"][0]["rules"]
    alerts = {r["alert"]: r for r in rules}
    assert set(alerts) == {
        "KafkaBalancerImbalanced",
        "KafkaBalancerExecutionTooLong",
        "KafkaBalancerExecutionNoProgress",
        "KafkaBalancerMovesStuck",
        "KafkaBalancerProposalAwaitingApproval",
        "KafkaBalancerPolicyStalled",
        "KafkaBalancerThrottlesLeftBehind",
        "KafkaBalancerLogDirNearlyFull",
        "KafkaBalancerOperatorDown",
    }
    for alert in alerts.values():
        assert alert["labels"]["severity"] in {"info", "warning", "critical"}
        assert alert["annotations"]["summary"]
    assert alerts["KafkaBalancerImbalanced"]["for"] == "45m"
    # The imbalance is compared with each policy's own threshold, not with a number baked into the chart.
    assert "kafka_balancer_imbalance_threshold" in alerts["KafkaBalancerImbalanced"]["expr"]
    assert "{{ $labels.policy }}" in alerts["KafkaBalancerPolicyStalled"]["annotations"]["summary"]


def test_the_grafana_dashboard_is_a_configmap_the_sidecar_loads_off_by_default() -> None:
    assert not by_kind(manifests(render()), "ConfigMap")
    dashboard = json.loads((CHART_DIR / "dashboards" / "kafka-balancer.json").read_text())
    (config_map,) = by_kind(manifests(render(ALL_FEATURES)), "ConfigMap")
    assert config_map["metadata"]["namespace"] == "monitoring"
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"  # kube-prometheus-stack's sidecar label
    assert config_map["metadata"]["annotations"] == {"grafana_folder": "Kafka"}
    assert json.loads(config_map["data"]["kafka-balancer.json"]) == dashboard
    # Panels for what the issue asks: tests/controller/test_prometheus_e2e.py checks each query against a scrape.
    titles = {p["title"] for p in dashboard["panels"]}
    assert {
        "State per policy", "Progress", "ETA", "Bytes moved", "Copy rate against the throttle",
        "Imbalance per resource and group", "Moves in flight and stuck", "Planning time", "Fill per log directory",
    } <= titles  # fmt: skip
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_service_monitor_scrapes_the_metrics_service_the_down_alert_watches() -> None:
    values = {"metrics": {"serviceMonitor": {"enabled": True}}, "prometheusRule": {"enabled": True}}
    objects = manifests(render(values, api_versions=(MONITORING_API,)))
    service, monitor = one(objects, "Service"), one(objects, "ServiceMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [p["name"] for p in service["spec"]["ports"]]
    # The operator's `namespace` label (the policy's) must win over the target's (the Service's).
    assert all(e["honorLabels"] is True for e in monitor["spec"]["endpoints"])
    # Without spec.jobLabel the Prometheus operator names the job after the Service.
    assert "jobLabel" not in monitor["spec"]
    rules = one(objects, "PrometheusRule")["spec"]["groups"][0]["rules"]
    down = next(r for r in rules if r["alert"] == "KafkaBalancerOperatorDown")
    assert f'job="{service["metadata"]["name"]}"' in down["expr"]


def test_metrics_used_by_alerts_are_published_by_the_controller() -> None:
    """Each kafka_balancer_* metric an alert reads is documented by the controller (docs/metrics.md) and
    registered by the metrics module; tests/delivery/test_operator_in_chart.py also scrapes them live."""
    from kafka_balancer.metrics import Metrics

    template = (CHART_DIR / "templates" / "prometheusrule.yaml").read_text()
    used = set(re.findall(r"\bkafka_balancer_[a-z_]+\b", template))
    assert {"kafka_balancer_imbalance_threshold_ratio", "kafka_balancer_throttled_brokers"} <= used
    published = set(re.findall(r"\bkafka_balancer_[a-z_]+\b", (REPO / "docs" / "metrics.md").read_text()))
    missing = used - published
    assert not missing, f"alerts use metrics docs/metrics.md does not list: {sorted(missing)}"
    registered = {metric.name for metric in Metrics().registry.collect()}
    assert used <= registered, f"alerts use metrics the operator does not register: {sorted(used - registered)}"


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"metrics": {"port": "9090"}}, "/metrics/port"),
        ({"watch": {"allNamespaces": "yes"}}, "/watch/allNamespaces"),
        ({"spark": {"engine": "yarn"}}, "/spark/engine"),
        ({"spark": {"engine": "connect"}}, "/spark/connect/url"),
        ({"rbac": {"secrets": [{"namespace": "team-a"}]}}, "/rbac/secrets/0"),
        ({"rbac": {"secrets": [{"namespace": "Team_A", "names": ["creds"]}]}}, "/rbac/secrets/0/namespace"),
        # The connection lives in each policy's spec.cluster: an old chart-wide `kafka` block is refused,
        # not silently ignored.
        ({"kafka": {"bootstrapServers": "kafka:9092"}}, "additional properties 'kafka' not allowed"),
        ({"resources": {"limits": {"memory": "lots"}}}, "/resources/limits/memory"),
        ({"prometheusRule": {"imbalanceFor": 30}}, "/prometheusRule/imbalanceFor"),
        ({"replicaCount": 2}, "additional properties 'replicaCount' not allowed"),
        ({"terminationGracePeriodSeconds": 0}, "/terminationGracePeriodSeconds"),
    ],
)
def test_bad_values_are_rejected_by_the_schema_naming_the_field(values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError) as err:
        render(values)
    assert where in str(err.value)


def _value_paths(node: Any, prefix: str = "") -> list[str]:
    if not isinstance(node, dict) or not node:
        return [prefix]
    paths = []
    for key, value in node.items():
        paths.extend(_value_paths(value, f"{prefix}/{key}"))
    return paths


def test_every_value_is_described_in_the_schema() -> None:
    schema = helm.Chart.load(CHART_DIR).schema
    assert schema is not None
    values = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    for path in _value_paths(values):
        node = schema
        for key in path.strip("/").split("/"):
            props = node.get("properties", {})
            assert key in props, f"value {path} is not in values.schema.json"
            node = props[key]
            if node.get("type") == "object" and "properties" not in node:
                break  # free-form maps (labels, securityContext) are typed as a whole
        assert (
            "description" in node or node.get("type") in {"object", "array"} or "oneOf" in node or "pattern" in node
        ), path


def test_chart_crds_are_the_generated_crds() -> None:
    top = sorted((REPO / "crds").glob("*.yaml"))
    assert top, "crds/ is empty: generate the CRDs first"
    in_chart = sorted((CHART_DIR / "crds").glob("*.yaml"))
    assert [p.name for p in in_chart] == [p.name for p in top]
    for generated, copied in zip(top, in_chart, strict=True):
        assert copied.read_bytes() == generated.read_bytes(), (
            f"{copied} differs from {generated}: cp crds/*.yaml charts/kafka-balancer/crds/"
        )
    with helm.Chart.load(CHART_DIR) as chart:
        names = {yaml.safe_load(c["data"])["metadata"]["name"] for c in chart.crds}
    assert names == {"balancepolicies.kafkabalancer.io", "resourcegroups.kafkabalancer.io"}
    for crd in top:
        kubernetes_validate.validate(yaml.safe_load(crd.read_text()), KUBE_VERSIONS[-1], strict=True)


def test_existing_claim_is_used_and_no_pvc_is_created() -> None:
    values = {
        "sampleStore": {"path": "/data/samples", "persistence": {"enabled": True, "existingClaim": "old-samples"}}
    }
    objects = manifests(render(values))
    assert not by_kind(objects, "PersistentVolumeClaim")
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    samples = next(v for v in pod["volumes"] if v["name"] == "samples")
    assert samples == {"name": "samples", "persistentVolumeClaim": {"claimName": "old-samples"}}
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "samples")
    assert mount["mountPath"] == "/data/samples"


@pytest.mark.parametrize(
    ("spark", "expected"),
    [
        ({"engine": "local"}, {"KAFKA_BALANCER_SPARK_ENGINE": "local", "KAFKA_BALANCER_SPARK_URL": "local[2]"}),
        (
            {"engine": "connect", "connect": {"url": "sc://spark-connect.spark:15002"}},
            {"KAFKA_BALANCER_SPARK_ENGINE": "connect", "KAFKA_BALANCER_SPARK_URL": "sc://spark-connect.spark:15002"},
        ),
    ],
)
def test_spark_engine_settings_reach_the_operator(spark: dict[str, Any], expected: dict[str, str]) -> None:
    objects = manifests(render({"spark": spark}))
    env = {
        e["name"]: e.get("value")
        for e in one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert expected.items() <= env.items()
    assert not any("sparkoperator.k8s.io" in str(o) for o in objects)


def _spark_application_settings(values: dict[str, Any], namespace: str = "kafka-balancer") -> dict[str, Any]:
    container = one(manifests(render(values, namespace=namespace)), "Deployment")["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in container["containers"][0]["env"]}
    settings: dict[str, Any] = json.loads(env["KAFKA_BALANCER_SPARK_APPLICATION"])
    return settings


def test_spark_application_pods_share_the_sample_store_claim() -> None:
    """The Spark driver and executors read the samples from the claim the operator writes them to."""
    rwx = {"enabled": True, "accessModes": ["ReadWriteMany"]}
    settings = _spark_application_settings(
        {"spark": {"engine": "sparkApplication"}, "sampleStore": {"persistence": rwx}}
    )
    assert settings["volumeClaim"] == "kb-kafka-balancer-samples"
    assert settings["mountPath"] == "/var/lib/kafka-balancer/samples"
    assert settings["image"] == "ghcr.io/kafka-balancer/kafka-balancer:0.1.0"
    assert settings["driver"] == {"cores": 1, "memory": "1g"}
    # Spark pods in another namespace need a claim there (PVCs are namespaced).
    elsewhere = {"engine": "sparkApplication", "sparkApplication": {"namespace": "spark", "volumeClaim": "samples-nfs"}}
    assert _spark_application_settings({"spark": elsewhere})["volumeClaim"] == "samples-nfs"


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({}, "sampleStore.persistence.enabled"),
        ({"sampleStore": {"persistence": {"enabled": True}}}, "sampleStore.persistence.accessModes"),
        ({"spark": {"sparkApplication": {"namespace": "spark"}}}, "spark.sparkApplication.volumeClaim"),
    ],
)
def test_spark_application_without_a_shareable_sample_store_is_refused(values: dict[str, Any], field: str) -> None:
    values = {**values, "spark": {"engine": "sparkApplication", **values.get("spark", {})}}
    with pytest.raises(helm.HelmRenderError) as err:
        render(values)
    assert f"{field}: " in str(err.value)


def test_chart_files_are_complete() -> None:
    for name in ("Chart.yaml", "values.yaml", "values.schema.json", "templates/NOTES.txt", ".helmignore"):
        assert (CHART_DIR / name).is_file(), name
    meta = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    assert meta["name"] == "kafka-balancer"
    assert Path(CHART_DIR).name == meta["name"]

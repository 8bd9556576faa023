"""spec.analysis.engine.type sparkApplication: the operator submits the analysis to the Spark operator.

The Kubernetes API is kmock (with the SparkApplication CRD installed the way a user would install it),
Kafka is the emulator over TCP, and the Spark operator is emulated by a thread that does what it
does: it sees each new SparkApplication, moves it SUBMITTED -> RUNNING, runs the main program the
manifest names with the manifest's arguments (in this process, on the test run's one SparkSession, as
spark-submit would in the driver pod) with the manifest's volume mounted, and ends in COMPLETED, or
FAILED with the program's error as status.applicationState.errorMessage.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import runpy
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kafka_balancer
import kubernetes
import pytest
import yaml
from kafka_balancer.sandbox import EmulatedCluster
from pyspark.sql import SparkSession

from .conftest import Cluster, run_operator
from .test_e2e import ALTER_PARTITION_REASSIGNMENTS, even_model

pytestmark = [pytest.mark.spark, pytest.mark.timeout(480)]

SCHEMA = yaml.safe_load(
    (Path(__file__).parents[1] / "analysis" / "data" / "sparkapplication-v1beta2.openapi.yaml").read_text()
)
SPARK = ("sparkoperator.k8s.io", "v1beta2", "sparkapplications")
CLAIM = "kb-samples"
IMAGE_ROOT = "local:///opt/kafka-balancer/"  # where the image installs the package (Dockerfile)


def install_spark_operator_crd(kube: Cluster) -> None:
    """What `helm install spark-operator` does first: the SparkApplication CRD, with its real schema."""
    group, version, plural = SPARK
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": "SparkApplication", "plural": plural, "singular": "sparkapplication"},
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": SCHEMA},
                }
            ],
        },
    }
    kubernetes.client.ApiextensionsV1Api(kube.api).create_custom_resource_definition(crd)


class SparkOperator:
    """The Spark operator's observable behaviour for SparkApplications of type Python, run one at a time."""

    def __init__(self, kube: Cluster, volumes: dict[str, Path]) -> None:
        self.kube = kube
        self.volumes = volumes  # PersistentVolumeClaim name -> the directory it is bound to
        self.seen: list[dict[str, Any]] = []  # each application as the operator created it
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="spark-operator", daemon=True)

    def __enter__(self) -> SparkOperator:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _set_state(self, app: dict[str, Any], state: str, error: str = "") -> None:
        group, version, plural = SPARK
        meta = app["metadata"]
        status = {"applicationState": {"state": state, "errorMessage": error}, "driverInfo": {}}
        with contextlib.suppress(kubernetes.client.ApiException):  # deleted meanwhile
            self.kube.custom.patch_namespaced_custom_object_status(
                group, version, meta["namespace"], plural, meta["name"], {"status": status}
            )

    def _loop(self) -> None:
        done: set[str] = set()
        while not self._stop.wait(0.2):
            group, version, plural = SPARK
            for app in self.kube.server.objects(plural, group=group, version=version):
                uid = app["metadata"]["uid"]
                if uid in done:
                    continue
                done.add(uid)
                self.seen.append(copy.deepcopy(app))
                self._set_state(app, "SUBMITTED")
                self._set_state(app, "RUNNING")
                code, error = self._run_driver(app["spec"])
                if code == 0:
                    self._set_state(app, "COMPLETED")
                else:
                    self._set_state(app, "FAILED", f"driver exited with code {code}: {error}")

    def _run_driver(self, spec: dict[str, Any]) -> tuple[int, str]:
        """spark-submit in the driver pod: the image's main file, the arguments, the volumes at their mounts."""
        main = spec["mainApplicationFile"]
        assert main.startswith(IMAGE_ROOT), main
        path = Path(kafka_balancer.__file__).parents[1] / main.removeprefix(IMAGE_ROOT)
        claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in spec.get("volumes", [])}
        mounts = {m["mountPath"]: self.volumes[claims[m["name"]]] for m in spec["driver"].get("volumeMounts", [])}

        def in_pod(arg: str) -> str:
            for mount, host in mounts.items():
                if arg == mount or arg.startswith(mount + "/"):
                    return str(host) + arg[len(mount) :]
            return arg

        argv = [str(path), *(in_pod(a) for a in spec["arguments"])]
        stderr = io.StringIO()
        saved = sys.argv
        sys.argv = argv
        try:
            with contextlib.redirect_stderr(stderr):
                runpy.run_path(str(path), run_name="__main__")
            code: Any = 0
        except SystemExit as exit_:
            code = exit_.code
        except Exception as err:  # the driver crashed: what the pod's log would show
            code, stderr = 1, io.StringIO(repr(err))
        finally:
            sys.argv = saved
        lines = [line for line in stderr.getvalue().splitlines() if line.strip()]
        return int(code or 0), lines[-1] if lines else ""


def _policy(name: str, bootstrap: str, store: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BalancePolicy",
        "metadata": {"name": name},
        "spec": {
            "cluster": {"bootstrapServers": bootstrap},
            "mode": "DryRun",
            "analysis": {
                "samples": str(store),
                "intervalSeconds": 1,
                "windowSeconds": 2,
                "statistic": "avg",
                "engine": {"type": "sparkApplication", "url": "kafka"},
            },
            "goals": {"minCompleteness": 0.5},
            "triggers": {"onImbalance": {"threshold": 1.5, "resource": "network-in"}},
        },
    }


@pytest.fixture
def spark_engine_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spark: SparkSession) -> Iterator[Path]:
    """The operator installed with spark.engine=sparkApplication; the shared volume is tmp_path/volume."""
    volume = tmp_path / "volume"
    volume.mkdir()
    settings = {
        "image": "ghcr.io/example/kafka-balancer:test",
        "serviceAccountName": "spark",
        "volumeClaim": CLAIM,
        "mountPath": str(volume),
        "driver": {"cores": 1, "memory": "1g"},
        "executor": {"instances": 1, "cores": 1, "memory": "1g"},
        "pollSeconds": 0.5,
        "retrySeconds": 600,
    }
    monkeypatch.setenv("KAFKA_BALANCER_SPARK_APPLICATION", json.dumps(settings))
    monkeypatch.setenv("KAFKA_BALANCER_SPARK_NAMESPACE", "kafka")
    shuffle = spark.conf.get("spark.sql.shuffle.partitions")
    yield volume
    # The driver's getOrCreate() set its SQL defaults on the shared session: give the other tests theirs back.
    spark.conf.set("spark.sql.shuffle.partitions", shuffle or "2")


def _state(kube: Cluster, name: str) -> str:
    return str((kube.policy(name).get("status") or {}).get("state", ""))


def test_analysis_runs_as_a_spark_application_and_its_snapshot_drives_the_proposal(
    kube: Cluster, emulator: Callable[..., EmulatedCluster], spark_engine_env: Path
) -> None:
    volume = spark_engine_env
    install_spark_operator_crd(kube)
    cluster = emulator(even_model(), time_scale=20.0)
    with cluster.state.lock:
        hot = [(p.topic, p.index) for p in cluster.state.rows if p.leader == 1]
    cluster.set_rates([(topic, p, 1e6, 1000.0) for topic, p in hot])  # brokers 1-3 take all the writes

    with SparkOperator(kube, {CLAIM: volume}) as spark_operator, run_operator() as operator:
        policy = kube.apply(_policy("measured", cluster.bootstrap_servers, volume / "samples"))
        running = kube.wait_for(
            "ProposalReady=False while the SparkApplication runs",
            lambda: (
                (c := kube.condition("measured", "ProposalReady")) and c["reason"] == "SparkApplicationRunning" and c
            ),
            timeout=60,
        )
        assert running["status"] == "False"
        assert kube.condition("measured", "Ready")["status"] == "True"  # type: ignore[index]
        assert "SparkApplication kafka/measured-" in running["message"]
        assert _state(kube, "measured") == "Analysing"

        # The driver is a fresh Spark JVM and its analysis: about 30 s on a quiet 2-core machine; it took
        # over 120 s at load average 50. The deadline only tells a proposal that comes from one that never does.
        proposal = kube.wait_for(
            "a proposal from the SparkApplication's snapshot",
            lambda: (kube.policy("measured").get("status") or {}).get("proposal"),
            timeout=300,
        )
        assert proposal["groups"][0]["resource"] == "network-in"
        assert proposal["groups"][0]["before"] > 1.5  # the measured rates, not the live model's zeros
        assert proposal["moves"] > 0
        # Submission to result, and the snapshot's completeness, as with the in-process engine.
        assert (operator.metric("kafka_balancer_analysis_duration_seconds_count", policy="measured") or 0) >= 1
        assert (operator.metric("kafka_balancer_sample_completeness_ratio", policy="measured") or 0) >= 0.5
        # The next window's application runs while the last result keeps standing: the measured imbalance
        # never drops to what the live model alone (sizes, no rates) would say.
        kube.wait_for("a second application", lambda: len(spark_operator.seen) >= 2, timeout=60)
        for _ in range(10):
            assert (kube.policy("measured").get("status") or {})["imbalance"] > 1.5
            time.sleep(0.3)

    assert spark_operator.seen, "the operator created SparkApplications"
    app = spark_operator.seen[0]
    jsonschema.validate({k: v for k, v in app.items() if k != "status"}, SCHEMA)
    assert app["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "kafkabalancer.io/v1alpha1",
            "kind": "BalancePolicy",
            "name": "measured",
            "uid": policy["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    spec = app["spec"]
    assert spec["arguments"][spec["arguments"].index("--samples") + 1] == str(volume / "samples")
    assert spec["arguments"][spec["arguments"].index("--engine") + 1] == "sparkApplication"
    assert spec["volumes"] == [{"name": "samples", "persistentVolumeClaim": {"claimName": CLAIM}}]
    assert spec["driver"]["serviceAccount"] == "spark"
    # A completed run is deleted once read, its files with it.
    deleted = [c for c in kube.server.emulator.calls if c.resource == "sparkapplications" and c.verb == "delete"]
    assert deleted
    names_left = {a["metadata"]["name"] for a in kube.server.objects(SPARK[2], group=SPARK[0], version=SPARK[1])}
    assert app["metadata"]["name"] not in names_left
    assert not (volume / "samples" / "_analyses" / f"{app['metadata']['name']}.json").exists()
    assert cluster.request_count(ALTER_PARTITION_REASSIGNMENTS) == 0  # DryRun


def test_a_failed_spark_application_stalls_the_policy_with_spark_reason(
    kube: Cluster, emulator: Callable[..., EmulatedCluster], spark_engine_env: Path, tmp_path: Path
) -> None:
    volume = spark_engine_env
    install_spark_operator_crd(kube)
    cluster = emulator(even_model(), time_scale=20.0)
    # The claim the chart names is bound to another (empty) volume: the driver does not find the samples.
    wrong = tmp_path / "other-volume"
    wrong.mkdir()
    with SparkOperator(kube, {CLAIM: wrong}) as spark_operator, run_operator():
        kube.apply(_policy("broken", cluster.bootstrap_servers, volume / "samples"))
        stalled = kube.wait_for(
            "Stalled/AnalysisFailed",
            lambda: (c := kube.condition("broken", "Stalled")) and c["status"] == "True" and c,
            timeout=90,
        )
        assert stalled["reason"] == "AnalysisFailed"
        assert "analysis SparkApplication failed: driver exited with code 2" in stalled["message"]
        assert "cannot read store" in stalled["message"]
        assert _state(kube, "broken") == "Stalled"
        status = kube.policy("broken").get("status") or {}
        assert not status.get("proposal")
        # The failed application stays for `kubectl describe`; no second one inside retrySeconds.
        group, version, plural = SPARK
        left = kube.server.objects(plural, group=group, version=version)
        assert len(left) == 1
        assert left[0]["status"]["applicationState"]["state"] == "FAILED"
    assert len(spark_operator.seen) == 1
    assert cluster.request_count(ALTER_PARTITION_REASSIGNMENTS) == 0


def test_an_application_the_spark_operator_never_runs_times_out(
    kube: Cluster, emulator: Callable[..., EmulatedCluster], spark_engine_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CRD installed but no Spark operator running (scaled to zero, or watching other namespaces).
    settings = json.loads(os.environ["KAFKA_BALANCER_SPARK_APPLICATION"])
    monkeypatch.setenv("KAFKA_BALANCER_SPARK_APPLICATION", json.dumps({**settings, "pendingTimeoutSeconds": 3}))
    install_spark_operator_crd(kube)
    cluster = emulator(even_model(), time_scale=20.0)
    with run_operator():
        kube.apply(_policy("idle", cluster.bootstrap_servers, spark_engine_env / "samples"))
        stalled = kube.wait_for(
            "Stalled after the pending timeout",
            lambda: (c := kube.condition("idle", "Stalled")) and c["status"] == "True" and c,
            timeout=60,
        )
    assert stalled["reason"] == "AnalysisFailed"
    assert "not running after" in stalled["message"]
    assert "limit 3 s" in stalled["message"]


def test_settings_errors_name_the_field_and_the_value() -> None:
    from kafka_balancer.controller.operator import OperatorConfig
    from kafka_balancer.controller.spark_engine import SparkSettings

    assert SparkSettings.from_env({}) is None
    good = {"image": "img", "namespace": "spark", "driver": {"cores": 2}, "retrySeconds": 30}
    settings = SparkSettings.from_env({"KAFKA_BALANCER_SPARK_APPLICATION": json.dumps(good)})
    assert settings is not None
    assert (settings.namespace, settings.driver_cores, settings.retry_seconds) == ("spark", 2, 30.0)
    bad = [
        ({**good, "executor": {"instances": 0}}, "field 'executor.instances' must be an integer >= 1, got 0"),
        ({**good, "image": ""}, "field 'image' must not be empty"),
        ({**good, "runTimeoutSeconds": "1h"}, "field 'runTimeoutSeconds' must be a number > 0, got '1h'"),
        ({"image": "img"}, "KAFKA_BALANCER_SPARK_NAMESPACE: must name the namespace"),
    ]
    for doc, message in bad:
        with pytest.raises(SystemExit, match=message.replace("(", r"\(")):
            OperatorConfig.from_env({"KAFKA_BALANCER_SPARK_APPLICATION": json.dumps(doc)})

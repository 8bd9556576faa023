"""The analysis as a SparkApplication (sparkoperator.k8s.io/v1beta2): the manifest, and what its state means.

Pure functions, no Kubernetes client: the controller submits the manifest and polls
``status.applicationState.state``; this module decides what each observed state means for the
analysis (wait, read the snapshot, or fail with a reason). The driver pod runs the same code as
``kafka-balancer analyze`` (``cli/analyze.py`` is runnable as the application's main file) with
``--engine sparkApplication``, writing the snapshot to a path on the shared volume.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import pyspark

API_VERSION: Final = "sparkoperator.k8s.io/v1beta2"
KIND: Final = "SparkApplication"

# Every value spark-operator writes to status.applicationState.state.
STATES: Final = (
    "",  # not yet seen by the operator
    "SUBMITTED",
    "RUNNING",
    "COMPLETED",
    "FAILED",
    "SUBMISSION_FAILED",
    "PENDING_RERUN",
    "INVALIDATING",
    "SUCCEEDING",
    "FAILING",
    "UNKNOWN",
)


class SparkApplicationError(ValueError):
    """Bad SparkApplication configuration; the message names the field and the value."""


@dataclass(frozen=True)
class SparkApplicationConfig:
    """What the controller knows when it wants an analysis run in the cluster."""

    name: str
    namespace: str
    image: str
    samples_url: str
    cluster: str
    start: str  # ISO 8601
    end: str
    output_path: str  # on the shared volume (or any path the driver can write and the controller read)
    window_seconds: int = 300
    statistic: str = "p95"
    service_account: str = "kafka-balancer-spark"
    main_application_file: str = "local:///opt/kafka-balancer/kafka_balancer/cli/analyze.py"
    spark_version: str = pyspark.__version__
    driver_cores: int = 1
    driver_memory: str = "2g"
    executor_instances: int = 2
    executor_cores: int = 1
    executor_memory: str = "2g"
    volume_claim: str | None = None  # PVC holding samples and snapshots, mounted at mount_path
    mount_path: str = "/var/lib/kafka-balancer"
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    ttl_seconds: int = 3600

    def __post_init__(self) -> None:
        for name in ("name", "namespace", "image", "samples_url", "cluster", "output_path"):
            if not getattr(self, name):
                raise SparkApplicationError(f"sparkApplication: field '{name}' must not be empty")
        if len(self.name) > 63:
            raise SparkApplicationError(
                f"sparkApplication: field 'name' must be at most 63 characters, got {self.name!r}"
            )
        for name in ("driver_cores", "executor_instances", "executor_cores", "window_seconds", "ttl_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SparkApplicationError(f"sparkApplication: field '{name}' must be an integer >= 1, got {value!r}")
        if self.statistic not in ("avg", "p95"):
            raise SparkApplicationError(
                f"sparkApplication: field 'statistic' must be avg or p95, got {self.statistic!r}"
            )


def build_manifest(config: SparkApplicationConfig) -> dict[str, Any]:
    """The SparkApplication object to create (valid against the v1beta2 CRD schema)."""
    labels = {"app.kubernetes.io/name": "kafka-balancer", "app.kubernetes.io/component": "analysis", **config.labels}
    arguments = [
        "--samples", config.samples_url,
        "--cluster", config.cluster,
        "--from", config.start,
        "--to", config.end,
        "--output", config.output_path,
        "--window", f"{config.window_seconds}s",
        "--statistic", config.statistic,
        "--engine", "sparkApplication",
    ]  # fmt: skip
    spark_conf = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.files.ignoreCorruptFiles": "true",
        # Enough shuffle partitions to keep every executor core busy, not Spark's 200.
        "spark.sql.shuffle.partitions": str(max(2, 2 * config.executor_instances * config.executor_cores)),
        **config.spark_conf,
    }
    pod_labels = dict(labels)
    driver: dict[str, Any] = {
        "cores": config.driver_cores,
        "memory": config.driver_memory,
        "serviceAccount": config.service_account,
        "labels": pod_labels,
    }
    executor: dict[str, Any] = {
        "instances": config.executor_instances,
        "cores": config.executor_cores,
        "memory": config.executor_memory,
        "labels": pod_labels,
    }
    spec: dict[str, Any] = {
        "type": "Python",
        "pythonVersion": "3",
        "mode": "cluster",
        "image": config.image,
        "imagePullPolicy": "IfNotPresent",
        "mainApplicationFile": config.main_application_file,
        "arguments": arguments,
        "sparkVersion": config.spark_version,
        "sparkConf": spark_conf,
        # The controller decides about reruns (it knows the time range); the operator must not.
        "restartPolicy": {"type": "Never"},
        "timeToLiveSeconds": config.ttl_seconds,
        "driver": driver,
        "executor": executor,
    }
    if config.volume_claim:
        spec["volumes"] = [{"name": "samples", "persistentVolumeClaim": {"claimName": config.volume_claim}}]
        mount = [{"name": "samples", "mountPath": config.mount_path}]
        driver["volumeMounts"] = mount
        executor["volumeMounts"] = mount
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": config.name, "namespace": config.namespace, "labels": labels},
        "spec": spec,
    }


class Action(enum.Enum):
    WAIT = "wait"  # poll again after `requeue_seconds`
    READ_RESULT = "read-result"  # COMPLETED: read the snapshot at output_path
    FAIL = "fail"  # give up this run; `reason` says why


@dataclass(frozen=True)
class Decision:
    action: Action
    state: str
    reason: str = ""
    requeue_seconds: float = 0.0


# How long each non-terminal state may last before the run is declared failed, and how often to poll.
_PENDING_STATES: Final = frozenset({"", "SUBMITTED", "PENDING_RERUN", "INVALIDATING", "UNKNOWN"})
_RUNNING_STATES: Final = frozenset({"RUNNING", "SUCCEEDING", "FAILING"})


@dataclass
class ApplicationTracker:
    """Follows one SparkApplication through its states (one tracker per submitted run).

    ``observe`` is called with the object's ``status`` (or None before the operator wrote one) and the
    seconds since submission; it remembers the states seen, so that a run stuck before RUNNING (no
    executor capacity, image pull failure) and a run that never finishes are told apart.
    """

    pending_timeout_seconds: float = 600.0
    run_timeout_seconds: float = 3600.0
    poll_seconds: float = 10.0
    history: list[str] = field(default_factory=list)
    _running_since: float | None = None

    def observe(self, status: Mapping[str, Any] | None, elapsed_seconds: float) -> Decision:
        app_state = (status or {}).get("applicationState") or {}
        state = str(app_state.get("state") or "")
        error = str(app_state.get("errorMessage") or "")
        if state not in STATES:
            return Decision(Action.FAIL, state, f"unknown SparkApplication state {state!r}")
        if not self.history or self.history[-1] != state:
            self.history.append(state)
        if state in _RUNNING_STATES and self._running_since is None:
            self._running_since = elapsed_seconds
        if state == "COMPLETED":
            return Decision(Action.READ_RESULT, state)
        if state in ("FAILED", "SUBMISSION_FAILED"):
            what = "could not be submitted" if state == "SUBMISSION_FAILED" else "failed"
            return Decision(Action.FAIL, state, f"analysis SparkApplication {what}: {error or 'no error message'}")
        if state in _PENDING_STATES and self._running_since is None:
            if elapsed_seconds > self.pending_timeout_seconds:
                return Decision(
                    Action.FAIL,
                    state,
                    f"analysis SparkApplication not running after {elapsed_seconds:.0f} s (state {state or 'none'};"
                    f" limit {self.pending_timeout_seconds:.0f} s): check executor capacity and the image",
                )
            return Decision(Action.WAIT, state, requeue_seconds=self.poll_seconds)
        started = self._running_since if self._running_since is not None else elapsed_seconds
        if elapsed_seconds - started > self.run_timeout_seconds:
            return Decision(
                Action.FAIL,
                state,
                f"analysis SparkApplication running for {elapsed_seconds - started:.0f} s"
                f" (limit {self.run_timeout_seconds:.0f} s) in state {state}",
            )
        return Decision(Action.WAIT, state, requeue_seconds=self.poll_seconds)

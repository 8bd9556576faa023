"""Analysis runs submitted as SparkApplications (``spec.analysis.engine.type: sparkApplication``).

The operator does not run Spark itself: per policy and analysis window it creates one
SparkApplication (sparkoperator.k8s.io/v1beta2) whose driver runs ``kafka_balancer.cli.analyze``
over the policy's sample store on the shared volume, writing the snapshot and its report to
``<store>/_analyses/<application name>.json`` (Spark and the sampler ignore ``_`` directories).
Later reconciliations follow ``status.applicationState.state`` with
:class:`~kafka_balancer.analysis.spark_application.ApplicationTracker` and, once COMPLETED, read the
two files back. Blocking (Kubernetes API, files): called from the reconciler's worker thread.

Clean-up: a completed application is deleted as soon as its result is read, and its files removed
(the result lives on in the operator's cache and the proposal's ConfigMap). A failed one is kept
for ``kubectl describe`` until the next attempt, at most one per ``retrySeconds``, replaces it.
The applications carry an ownerReference to the policy when they live in its namespace
(Kubernetes forbids cross-namespace owners), so deleting the policy deletes them; elsewhere the
operator deletes them itself and ``timeToLiveSeconds`` is the backstop.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from kafka_balancer.analysis.report import load_report, report_path
from kafka_balancer.analysis.spark_application import (
    Action,
    ApplicationTracker,
    SparkApplicationConfig,
    build_manifest,
)
from kafka_balancer.controller.kubeapi import KubeApi, NotFoundError
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec

log = logging.getLogger(__name__)

ENV_SETTINGS = "KAFKA_BALANCER_SPARK_APPLICATION"
ENV_NAMESPACE = "KAFKA_BALANCER_SPARK_NAMESPACE"


class SparkSpecError(ValueError):
    """The policy asks for something this engine cannot do; the message names the field and the value."""


class Waiting(Exception):  # noqa: N818 - a state: the application has not finished yet
    """The run is submitted or running; the message says which application and its state."""


class AnalysisFailed(Exception):  # noqa: N818 - the reconciler reports it as Stalled/AnalysisFailed
    """The SparkApplication failed (or timed out); the message carries the Spark operator's reason."""


def _int(doc: Mapping[str, Any], key: str, where: str, default: int) -> int:
    value = doc.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{ENV_SETTINGS}: field '{where}{key}' must be an integer >= 1, got {value!r}")
    return value


@dataclass(frozen=True)
class SparkSettings:
    """The operator-level settings (the chart's ``spark.sparkApplication`` values, as JSON in the env)."""

    namespace: str
    image: str
    service_account: str = "spark"
    volume_claim: str | None = None
    mount_path: str = "/var/lib/kafka-balancer/samples"
    spark_version: str | None = None
    main_application_file: str | None = None
    driver_cores: int = 1
    driver_memory: str = "1g"
    executor_instances: int = 2
    executor_cores: int = 1
    executor_memory: str = "2g"
    pending_timeout_seconds: float = 600.0
    run_timeout_seconds: float = 3600.0
    poll_seconds: float = 10.0
    retry_seconds: float = 300.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SparkSettings | None:
        """None when the operator is not set up for this engine; ValueError naming a bad field."""
        raw = env.get(ENV_SETTINGS)
        if not raw:
            return None
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError as err:
            raise ValueError(f"{ENV_SETTINGS}: not a JSON object: {err}") from None
        if not isinstance(doc, dict):
            raise ValueError(f"{ENV_SETTINGS}: must be a JSON object, got {raw!r}")
        driver, executor = doc.get("driver") or {}, doc.get("executor") or {}
        namespace = env.get(ENV_NAMESPACE) or str(doc.get("namespace") or "")
        if not namespace:
            raise ValueError(f"{ENV_NAMESPACE}: must name the namespace for SparkApplications, got ''")
        if not doc.get("image"):
            raise ValueError(f"{ENV_SETTINGS}: field 'image' must not be empty, got {doc.get('image')!r}")

        def seconds(key: str, default: float) -> float:
            value = doc.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"{ENV_SETTINGS}: field '{key}' must be a number > 0, got {value!r}")
            return float(value)

        return cls(
            namespace=namespace,
            image=str(doc["image"]),
            service_account=str(doc.get("serviceAccountName") or cls.service_account),
            volume_claim=str(doc["volumeClaim"]) if doc.get("volumeClaim") else None,
            mount_path=str(doc.get("mountPath") or cls.mount_path),
            spark_version=str(doc["sparkVersion"]) if doc.get("sparkVersion") else None,
            main_application_file=str(doc["mainApplicationFile"]) if doc.get("mainApplicationFile") else None,
            driver_cores=_int(driver, "cores", "driver.", 1),
            driver_memory=str(driver.get("memory") or cls.driver_memory),
            executor_instances=_int(executor, "instances", "executor.", 2),
            executor_cores=_int(executor, "cores", "executor.", 1),
            executor_memory=str(executor.get("memory") or cls.executor_memory),
            pending_timeout_seconds=seconds("pendingTimeoutSeconds", cls.pending_timeout_seconds),
            run_timeout_seconds=seconds("runTimeoutSeconds", cls.run_timeout_seconds),
            poll_seconds=seconds("pollSeconds", cls.poll_seconds),
            retry_seconds=seconds("retrySeconds", cls.retry_seconds),
        )


@dataclass(frozen=True)
class SparkResult:
    snapshot: dict[str, Any]
    report: dict[str, Any]
    seconds: float  # from submission to the result read (what the analysis-duration metric records)


@dataclass
class _Run:
    namespace: str
    name: str
    output: Path
    submitted: float  # clock() at submission (or adoption after a restart)
    inputs: tuple[Any, ...]
    tracker: ApplicationTracker
    failure: str | None = None
    failed_at: float = 0.0
    state: str = field(default="")


def store_directory(url: str, settings: SparkSettings) -> Path:
    """The store as a local path on the shared volume; SparkSpecError when the Spark pods cannot see it.

    The path is resolved (``..``, symbolic links) before it is compared with the mount: the operator writes
    under it, and a path that only reads as if it were under the mount must not take it elsewhere."""
    parsed = urlparse(url)
    if parsed.scheme not in ("", "file"):
        raise SparkSpecError(
            f"spec.analysis.samples: engine sparkApplication reads the store from the shared volume"
            f" (a path or file:// URL), got {url!r}"
        )
    path = Path(parsed.path if parsed.scheme else url).resolve()
    mount = Path(settings.mount_path).resolve()
    if settings.volume_claim and not path.is_relative_to(mount):
        raise SparkSpecError(
            f"spec.analysis.samples: must be under {mount} (where the Spark pods mount claim"
            f" {settings.volume_claim}) for engine sparkApplication, got {url!r} (that is {path})"
        )
    return path


# A DNS-1123 label that starts with a letter: the Spark operator names the driver's pod and Service after
# the application, and a Service name must be such a label (RFC 1035).
_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def application_name(prefix: str, suffix: str, *, from_spec: bool) -> str:
    """``<prefix><suffix>``, at most 63 characters, a DNS label.

    A prefix the spec gives (``engine.url``) must be a label itself (SparkSpecError naming the field); one made
    from the policy's name (a DNS subdomain: it may hold dots or start with a digit) is made into one."""
    if from_spec and (len(prefix) > 63 or not _LABEL.match(prefix)):
        raise SparkSpecError(
            "spec.analysis.engine.url: the SparkApplication name prefix after '/' must be a DNS-1123 label"
            f" starting with a letter (lower-case letters, digits, '-'), got {prefix!r}"
        )
    label = re.sub(r"[^a-z0-9-]", "-", prefix.lower())
    label = label if label[:1].isalpha() else f"kb-{label}"
    return label[: 63 - len(suffix)].rstrip("-") + suffix


class SparkApplications:
    """One analysis SparkApplication at a time per policy.

    Each policy is reconciled by one thread at a time (the operator's per-policy lock); the lock here
    only keeps the table of runs consistent between policies and the deletion handler.
    """

    def __init__(
        self,
        kube: KubeApi,
        settings: SparkSettings,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.kube = kube
        self.settings = settings
        self._clock = clock
        self._wall = wall
        self._runs: dict[tuple[str, str], _Run] = {}
        self._lock = threading.Lock()

    def _target(self, spec: BalancePolicySpec) -> tuple[str, str | None]:
        """(namespace, name prefix or None for the policy's name): ``engine.url`` is ``<namespace>`` or
        ``<namespace>/<name prefix>``."""
        namespace, _, prefix = (spec.analysis.engine.url or "").partition("/")
        if namespace and namespace != self.settings.namespace:
            raise SparkSpecError(
                f"spec.analysis.engine.url: the operator creates SparkApplications in namespace"
                f" {self.settings.namespace!r} (its RBAC allows no other), got {spec.analysis.engine.url!r}"
            )
        if prefix:
            application_name(prefix, "", from_spec=True)  # refused now, before anything is written
        return self.settings.namespace, prefix or None

    def analyse(
        self,
        key: tuple[str, str],
        spec: BalancePolicySpec,
        *,
        cluster: str,
        groups: Mapping[str, Sequence[int]],
        url: str,
        inputs: tuple[Any, ...],
        owner: Mapping[str, Any] | None,
        windows: int,
    ) -> SparkResult:
        """The result of this policy's run; raises Waiting while it runs and AnalysisFailed when it failed."""
        namespace, prefix = self._target(spec)
        store = store_directory(url, self.settings)
        now = self._clock()
        with self._lock:
            run = self._runs.get(key)
        if run is not None and run.inputs != inputs:  # spec or groups changed: that run answers the old question
            self.forget(key)
            run = None
        if run is not None and run.failure is not None:
            if now - run.failed_at < self.settings.retry_seconds:
                raise AnalysisFailed(run.failure)
            self.forget(key)  # the failed application was kept for debugging until this retry
            run = None
        if run is None:
            run = self._submit(
                key,
                spec,
                namespace=namespace,
                prefix=prefix,
                store=store,
                cluster=cluster,
                groups=groups,
                inputs=inputs,
                owner=owner,
                windows=windows,
            )
            raise Waiting(f"submitted SparkApplication {namespace}/{run.name}")
        return self._follow(key, run)

    def _submit(
        self,
        key: tuple[str, str],
        spec: BalancePolicySpec,
        *,
        namespace: str,
        prefix: str | None,
        store: Path,
        cluster: str,
        groups: Mapping[str, Sequence[int]],
        inputs: tuple[Any, ...],
        owner: Mapping[str, Any] | None,
        windows: int,
    ) -> _Run:
        analysis, s = spec.analysis, self.settings
        end = self._wall()
        # Deterministic per policy and window: a restarted operator finds (and follows) its own run.
        window = int(end // analysis.window_seconds)
        digest = hashlib.sha256(f"{key[0]}/{key[1]}/{cluster}".encode()).hexdigest()[:6]
        suffix = f"-{digest}-{window}"
        name = application_name(prefix or key[1], suffix, from_spec=prefix is not None)
        output = store / "_analyses" / f"{name}.json"
        output.parent.mkdir(parents=True, exist_ok=True)
        start = end - analysis.window_seconds * windows
        iso = "%Y-%m-%dT%H:%M:%SZ"
        config = SparkApplicationConfig(
            name=name,
            namespace=namespace,
            image=s.image,
            samples_url=str(store),
            cluster=cluster,
            start=time.strftime(iso, time.gmtime(start)),
            end=time.strftime(iso, time.gmtime(end + 1)),  # the driver's --to is inclusive of whole seconds
            output_path=str(output),
            window_seconds=analysis.window_seconds,
            statistic=analysis.statistic,
            service_account=s.service_account,
            driver_cores=s.driver_cores,
            driver_memory=s.driver_memory,
            executor_instances=s.executor_instances,
            executor_cores=s.executor_cores,
            executor_memory=s.executor_memory,
            volume_claim=s.volume_claim,
            mount_path=s.mount_path,
            labels={"kafkabalancer.io/policy": key[1], "kafkabalancer.io/policy-namespace": key[0]},
        )
        if s.spark_version:
            config = dataclasses.replace(config, spark_version=s.spark_version)
        if s.main_application_file:
            config = dataclasses.replace(config, main_application_file=s.main_application_file)
        manifest = build_manifest(config)
        for group, brokers in sorted(groups.items()):  # per-group statistics in the report, as the local engine
            manifest["spec"]["arguments"] += ["--group", f"{group}={','.join(str(b) for b in brokers)}"]
        if owner is not None and namespace == key[0]:
            manifest["metadata"]["ownerReferences"] = [dict(owner)]
        tracker = ApplicationTracker(s.pending_timeout_seconds, s.run_timeout_seconds, s.poll_seconds)
        created = self.kube.create_spark_application(manifest)
        log.info("%s SparkApplication %s/%s", "submitted" if created else "following existing", namespace, name)
        run = _Run(namespace, name, output, self._clock(), inputs, tracker)
        with self._lock:
            self._runs[key] = run
        return run

    def _follow(self, key: tuple[str, str], run: _Run) -> SparkResult:
        try:
            obj = self.kube.get_spark_application(run.namespace, run.name)
        except NotFoundError:
            with self._lock:
                self._runs.pop(
                    key, None
                )  # deleted behind our back (or its TTL passed): the next reconciliation resubmits
            raise Waiting(f"SparkApplication {run.namespace}/{run.name} disappeared; resubmitting") from None
        decision = run.tracker.observe(obj.get("status"), self._clock() - run.submitted)
        run.state = decision.state
        where = f"{run.namespace}/{run.name}"
        if decision.action == Action.WAIT:
            raise Waiting(f"SparkApplication {where} is {decision.state or 'waiting for the Spark operator'}")
        if decision.action == Action.FAIL:
            run.failure, run.failed_at = f"{where}: {decision.reason}", self._clock()
            raise AnalysisFailed(run.failure)
        try:
            snapshot = json.loads(run.output.read_text(encoding="utf-8"))
            report = load_report(report_path(run.output))
        except (OSError, ValueError) as err:
            run.failure, run.failed_at = f"{where} completed but its result is unreadable: {err}", self._clock()
            raise AnalysisFailed(run.failure) from None
        seconds = self._clock() - run.submitted
        self.forget(key)
        return SparkResult(snapshot, report, seconds)

    def forget(self, key: tuple[str, str]) -> None:
        """Delete the policy's application (running or kept after a failure) and its files."""
        with self._lock:
            run = self._runs.pop(key, None)
        if run is None:
            return
        self.kube.delete_spark_application(run.namespace, run.name)
        for path in (run.output, report_path(run.output)):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

"""Sampling and Spark analysis for the policies that have a sample store: the measured load behind a plan.

Per policy, a sampler thread appends one sample every ``spec.analysis.intervalSeconds`` to the store
(``spec.analysis.samples``, else the operator's ``KAFKA_BALANCER_SAMPLE_STORE``). When the reconciler
needs the load, the Spark job summarises the recent windows into a snapshot (at most once per window:
the result is cached). The plan is then made on the *live* placement with the *measured* rates, so a
snapshot taken before an execution never makes the next plan undo or repeat it.

With ``spec.analysis.engine.type: sparkApplication`` the Spark job is not run here but submitted as a
SparkApplication (:mod:`kafka_balancer.controller.spark_engine`); its snapshot is then used the same way.

Policies without a store plan from what the cluster itself reports (replica sizes, no rates).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import numpy as np

from kafka_balancer.analysis.analyze import analyze
from kafka_balancer.analysis.load import LoadOptions
from kafka_balancer.analysis.report import IncompleteSnapshotError, check_completeness
from kafka_balancer.analysis.sampler import Sampler, SamplerOptions
from kafka_balancer.analysis.store import SampleStore
from kafka_balancer.controller import last_analysis
from kafka_balancer.controller.kubeapi import Credentials
from kafka_balancer.controller.services import Connector
from kafka_balancer.controller.spark_defaults import SparkDefaults
from kafka_balancer.controller.spark_engine import AnalysisFailed, SparkApplications, Waiting, store_directory
from kafka_balancer.metrics import Metrics, PolicyKey
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec
from kafka_balancer.model.snapshot import parse_snapshot

log = logging.getLogger(__name__)

# How many windows of history one analysis reads: enough for a p95 over windows, bounded in cost.
WINDOWS_READ: Final = 12


class NotReady(Exception):  # noqa: N818 - a state, not a failure: samples are still being collected
    """No usable load yet (too few samples, a SparkApplication still running, completeness too low)."""

    def __init__(self, message: str, reason: str = "CollectingSamples") -> None:
        super().__init__(message)
        self.reason = reason  # the ProposalReady=False condition's reason


class EngineUnavailable(Exception):  # noqa: N818 - reported as Stalled with `reason`
    """The analysis cannot run as the policy asks: bad engine settings, or its SparkApplication failed."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Analysed:
    model: ClusterModel  # the snapshot's model: measured rates, placement as sampled
    report: dict[str, Any]
    at: float  # time.monotonic() of the run
    inputs: tuple[Any, ...]


@dataclass
class _SamplerThread:
    config: tuple[Any, ...]
    stop: threading.Event
    thread: threading.Thread
    taken: int = 0  # samples stored by this thread


# Rates need two samples in a window: until this thread stored as many, a Spark run can only say "incomplete".
MIN_SAMPLES: Final = 2


class Analyses:
    """Sampler threads and cached analyses by policy (namespace, name). Thread-safe."""

    def __init__(
        self,
        connector: Connector,
        metrics: Metrics,
        default_store: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        spark_applications: SparkApplications | None = None,
        spark_defaults: SparkDefaults | None = None,
    ) -> None:
        self._spark_applications = spark_applications
        self._spark_defaults = spark_defaults or SparkDefaults()
        self._connector = connector
        self._metrics = metrics
        self._default_store = default_store
        self._clock = clock
        self._lock = threading.Lock()
        self._samplers: dict[tuple[str, str], _SamplerThread] = {}
        self._cache: dict[tuple[str, str], Analysed] = {}

    def store_url(self, spec: BalancePolicySpec) -> str | None:
        return spec.analysis.samples or self._default_store

    # ----- sampling -----------------------------------------------------------------------
    def ensure_sampler(
        self,
        key: tuple[str, str],
        metric_key: PolicyKey,
        spec: BalancePolicySpec,
        credentials: Credentials | None,
        url: str,
    ) -> None:
        """Start (or restart with new settings) the policy's sampler; a no-op when it already runs as asked.

        ValueError (SparkSpecError) when the engine is sparkApplication and the store is not on the shared
        volume: checked before the sampler writes anything there."""
        if spec.analysis.engine.type == "sparkApplication" and self._spark_applications is not None:
            store_directory(url, self._spark_applications.settings)
        config = (url, metric_key.cluster, spec.analysis.interval_seconds, spec.cluster, credentials)
        with self._lock:
            running = self._samplers.get(key)
            if running is not None and running.config == config and running.thread.is_alive():
                return
        self.stop(key)
        port = self._connector(spec.cluster, credentials)
        sampler = Sampler(
            port,
            SampleStore(url),
            SamplerOptions(
                cluster=metric_key.cluster,
                interval_seconds=float(spec.analysis.interval_seconds),
                consumer_offsets=spec.analysis.consumer_groups.enabled,
            ),
        )
        stop = threading.Event()

        def loop() -> None:
            try:
                while not stop.is_set():
                    started = time.monotonic()
                    try:
                        sampler.sample_once()
                        record.taken += 1
                        self._metrics.sampled(metric_key, 1)
                    except Exception as err:  # a failed round is retried at the next interval
                        log.warning("sampling %s/%s failed: %s", key[0], key[1], err)
                    stop.wait(max(0.0, sampler.options.interval_seconds - (time.monotonic() - started)))
            finally:
                port.close()

        thread = threading.Thread(target=loop, name=f"sampler-{key[0]}-{key[1]}", daemon=True)
        record = _SamplerThread(config, stop, thread)
        with self._lock:
            self._samplers[key] = record
        thread.start()

    def stop(self, key: tuple[str, str]) -> None:
        with self._lock:
            running = self._samplers.pop(key, None)
            self._cache.pop(key, None)
        if self._spark_applications is not None:
            self._spark_applications.forget(key)
        if running is not None:
            running.stop.set()
            running.thread.join(timeout=30)

    def stop_all(self) -> None:
        with self._lock:
            keys = list(self._samplers)
        for key in keys:
            self.stop(key)

    # ----- analysis -----------------------------------------------------------------------
    def analyse(
        self,
        key: tuple[str, str],
        metric_key: PolicyKey,
        spec: BalancePolicySpec,
        groups: Mapping[str, Sequence[int]],
        url: str,
        *,
        owner: Mapping[str, Any] | None = None,
    ) -> Analysed:
        """The measured load, from the cache when it is younger than one window; raises NotReady.

        Raises EngineUnavailable when the policy's engine cannot run (or its SparkApplication failed).
        """
        analysis = spec.analysis
        inputs = (url, metric_key.cluster, analysis, tuple(sorted((g, tuple(b)) for g, b in groups.items())))
        now = self._clock()
        with self._lock:
            cached = self._cache.get(key)
            sampler = self._samplers.get(key)
        if cached is not None and cached.inputs == inputs and now - cached.at < analysis.window_seconds:
            self._check(cached.report, spec)
            return cached
        if cached is None and sampler is not None and sampler.taken < MIN_SAMPLES:
            # Spark would only report "0 partitions complete": do not pay for a job yet.
            raise NotReady(f"collecting samples into {url}: {sampler.taken} of {MIN_SAMPLES} taken")
        end = datetime.now(UTC)
        start = end - timedelta(seconds=analysis.window_seconds * WINDOWS_READ)
        options = LoadOptions(
            cluster=metric_key.cluster,
            statistic=analysis.statistic,
            window_seconds=analysis.window_seconds,
            groups={g: list(b) for g, b in groups.items()},
        )
        labels = (metric_key.policy, metric_key.namespace, metric_key.cluster)
        if analysis.engine.type == "sparkApplication":
            try:
                snapshot, report = self._in_spark_application(
                    key, metric_key=metric_key, spec=spec, groups=groups, url=url, inputs=inputs, owner=owner
                )
            except NotReady:
                if cached is not None and cached.inputs == inputs:
                    # The next run takes minutes in its pods: the last result stands until it is in, rather
                    # than the reconciler falling back to the live model's zero rates meanwhile.
                    self._check(cached.report, spec)
                    return cached
                raise
        else:
            try:
                engine = self._spark_defaults.engine(analysis.engine)
            except ValueError as err:  # EngineError too: a bad master or URL in the spec
                raise EngineUnavailable("InvalidSpec", str(err)) from None
            try:
                with self._metrics.analysis_seconds.labels(*labels).time():
                    result = analyze(SampleStore(url), start, end, options, engine)
            except Exception as err:
                # Typically no samples in the range yet (a new policy); the next reconciliation tries again.
                raise NotReady(f"analysis of {url} not possible yet: {err}") from err
            snapshot, report = result.snapshot, result.report
        try:
            model = parse_snapshot(snapshot)
        except Exception as err:
            raise NotReady(f"analysis of {url} gave an unusable snapshot: {err}") from err
        last_analysis.keep(url, key, snapshot, report)
        completeness = float(report.get("completeness", 0.0))
        self._metrics.completeness.labels(*labels).set(completeness)
        done = Analysed(model, dict(report), now, inputs)
        with self._lock:
            self._cache[key] = done
        self._check(done.report, spec)
        return done

    def _in_spark_application(
        self,
        key: tuple[str, str],
        *,
        metric_key: PolicyKey,
        spec: BalancePolicySpec,
        groups: Mapping[str, Sequence[int]],
        url: str,
        inputs: tuple[Any, ...],
        owner: Mapping[str, Any] | None,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Submit or follow the policy's SparkApplication; its (snapshot, report) once COMPLETED."""
        if self._spark_applications is None:
            raise EngineUnavailable(
                "InvalidSpec",
                "spec.analysis.engine.type: 'sparkApplication' needs the operator installed with"
                " spark.engine=sparkApplication (KAFKA_BALANCER_SPARK_APPLICATION is not set)",
            )
        try:
            result = self._spark_applications.analyse(
                key,
                spec,
                cluster=metric_key.cluster,
                groups=groups,
                url=url,
                inputs=inputs,
                owner=owner,
                windows=WINDOWS_READ,
            )
        except Waiting as err:
            raise NotReady(str(err), reason="SparkApplicationRunning") from None
        except AnalysisFailed as err:
            raise EngineUnavailable("AnalysisFailed", str(err)) from None
        except ValueError as err:  # SparkSpecError, or a SparkApplicationConfig field the spec made invalid
            raise EngineUnavailable("InvalidSpec", str(err)) from None
        except OSError as err:  # the shared volume (creating the output directory)
            raise EngineUnavailable("InvalidSpec", f"spec.analysis.samples {url}: {err}") from None
        labels = (metric_key.policy, metric_key.namespace, metric_key.cluster)
        self._metrics.analysis_seconds.labels(*labels).observe(result.seconds)
        return result.snapshot, result.report

    @staticmethod
    def _check(report: dict[str, Any], spec: BalancePolicySpec) -> None:
        try:
            check_completeness(report, spec.goals.min_completeness)
        except IncompleteSnapshotError as err:
            raise NotReady(str(err)) from None


def with_measured_load(live: ClusterModel, measured: ClusterModel) -> ClusterModel:
    """``live`` (placement, liveness, sizes as the cluster reports them now) with ``measured``'s rates.

    Partitions the analysis has not seen (created since) keep the live values (zero rates); broker
    capacities come from the analysis where it knows them.
    """
    rows = np.full(live.num_partitions, -1, dtype=np.int64)
    for p in range(live.num_partitions):
        try:
            rows[p] = measured.partition_index(live.topic_name(p), int(live.partition_id[p]))
        except KeyError:
            continue
    seen = rows >= 0

    def take(current: np.ndarray[Any, Any], source: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        out = np.array(current, copy=True)
        out[seen] = source[rows[seen]]
        out.flags.writeable = False
        return out

    capacity = np.array(live.capacity, copy=True)
    for b, broker_id in enumerate(live.broker_ids.tolist()):
        try:
            known = measured.capacity[measured.broker_index(int(broker_id))]
        except KeyError:
            continue
        capacity[b] = np.where(np.isnan(capacity[b]), known, capacity[b])
    capacity.flags.writeable = False
    return dataclasses.replace(
        live,
        bytes_in=take(live.bytes_in, measured.bytes_in),
        bytes_out=take(live.bytes_out, measured.bytes_out),
        messages_in=take(live.messages_in, measured.messages_in),
        cpu_leader=take(live.cpu_leader, measured.cpu_leader),
        capacity=capacity,
        captured_at=measured.captured_at,
        _index=None,
    )

"""Prometheus metrics of the operator (names and meanings in docs/metrics.md).

One :class:`Metrics` object owns its own registry, so several operators (or tests) in one process
never share series. Labels are policy, namespace, cluster, group, resource, state, reason: nothing
per partition, and per broker only the log-directory gauges (one series per directory), so the series
count stays proportional to policies x groups plus the directories of the clusters watched.
Base units: bytes, seconds, ratios; counters end in ``_total``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, start_http_server

from kafka_balancer.model.log_dir_usage import LogDirUsage

PREFIX: Final = "kafka_balancer_"
STATES: Final = (
    "Pending",
    "Analysing",
    "Balanced",
    "ProposalReady",
    "Executing",
    "Completed",
    "Paused",
    "Stalled",
)
# Analysis on a laptop-size cluster takes seconds; on a 1M-replica cluster, minutes.
_DURATION_BUCKETS: Final = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)

# The log_dir label of a broker's replicas in no directory it reports (a path is never this).
UNKNOWN_LOG_DIR: Final = "unknown"

_P = ("policy", "namespace")
_PC = ("policy", "namespace", "cluster")
# Observations of the cluster, each family replaced whole at every reading (set_analysis_samples): consumer-group
# balance, the durability audit (issue 8) and the log directories (JBOD): name -> (help, labels after
# policy/namespace/cluster). Per consumer group only for the policy's topN groups: the series grow with topN (at
# most 100), not with the cluster's groups. The values come from analysis.consumer_groups.metric_samples,
# analysis.audit.metric_samples and log_dir_samples below.
_G = ("group",)
_D = ("broker", "log_dir")
_ANALYSIS_GAUGES: Final = {
    "consumer_group_imbalance_ratio": ("Partitions on a consumer group's busiest member over the mean (1 = even).", _G),
    "consumer_group_lag_imbalance_ratio": ("Lag of a consumer group's most lagging member over the mean.", _G),
    "consumer_group_lag": ("Total lag of a consumer group, in messages.", _G),
    "consumer_group_members": ("Members of a consumer group.", _G),
    "consumer_group_recommended_assignor_info": (
        "1, labelled with the consumer group's assignor and the recommended one.",
        ("group", "current", "recommended"),
    ),
    "consumer_groups": ("Consumer groups analysed (per group series: only the topN most imbalanced).", ()),
    "consumer_groups_lag": ("Total lag of all consumer groups analysed, in messages.", ()),
    "durability_flagged_topics": ("Topics with a risky durability setting, by flag.", ("flag",)),
    "partitions_at_risk": ("Partitions offline, under-replicated or at/below min.insync.replicas.", ("risk",)),
    "log_dir_bytes": (
        f"Bytes of the replicas in a broker's log directory (log_dir {UNKNOWN_LOG_DIR!r}: in none it reports).",
        _D,
    ),
    "log_dir_volume_bytes": ("Size of the volume a log directory is on (DescribeLogDirs totalBytes).", _D),
    "log_dir_volume_usable_bytes": ("Free space of the volume a log directory is on (usableBytes).", _D),
    "log_dir_utilisation_ratio": ("Bytes of the replicas in a log directory over its volume's size.", _D),
    "log_dir_cordoned": ("1 for a log directory listed in its broker's cordoned.log.dirs, else 0.", _D),
}
# Every log-directory gauge: log_dir_samples replaces them whole (a directory gone loses its series).
LOG_DIR_METRIC_NAMES: Final = tuple(f"{PREFIX}{name}" for name in _ANALYSIS_GAUGES if name.startswith("log_dir_"))


@dataclass(frozen=True)
class PolicyKey:
    """Identifies one BalancePolicy's series."""

    policy: str
    namespace: str
    cluster: str


@dataclass(frozen=True)
class ExecutionFigures:
    bytes_moved: int
    bytes_total: int
    partitions_moved: int
    partitions_total: int
    in_flight: int
    eta_seconds: float | None
    stuck: int = 0


class Metrics:
    """All kafka_balancer_* series. Thread-safe (prometheus-client is); cheap to update."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.imbalance = Gauge(
            f"{PREFIX}imbalance_ratio",
            "Most loaded broker's load over its group's average (1 = perfectly balanced), per group and resource.",
            (*_PC, "group", "resource"),
            registry=r,
        )
        self.imbalance_stddev = Gauge(
            f"{PREFIX}imbalance_stddev_ratio",
            "Standard deviation of the group's broker loads over their average (0 = even), per group and resource.",
            (*_PC, "group", "resource"),
            registry=r,
        )
        self.threshold = Gauge(
            f"{PREFIX}imbalance_threshold_ratio",
            "The policy's own imbalance threshold for the watched resource (onImbalance.threshold, else "
            "goals.balanceThreshold): alert when kafka_balancer_imbalance_ratio exceeds it.",
            (*_PC, "resource"),
            registry=r,
        )
        self.throttled_brokers = Gauge(
            f"{PREFIX}throttled_brokers",
            "Brokers carrying a replication throttle set by the operator (0 once an execution cleaned up).",
            _PC,
            registry=r,
        )
        self.balancedness = Gauge(
            f"{PREFIX}balancedness_score",
            "Balancedness, 0 (worst) to 100 (all goals met).",
            _PC,
            registry=r,
        )
        self.proposal_moves = Gauge(
            f"{PREFIX}proposal_replica_moves", "Replica moves in the current proposal.", _PC, registry=r
        )
        self.proposal_bytes = Gauge(
            f"{PREFIX}proposal_bytes", "Bytes the current proposal copies between brokers.", _PC, registry=r
        )
        self.proposal_leaders = Gauge(
            f"{PREFIX}proposal_leader_changes", "Preferred-leader changes in the current proposal.", _PC, registry=r
        )
        self.exec_bytes_moved = Gauge(
            f"{PREFIX}execution_moved_bytes", "Bytes copied so far by the current execution.", _PC, registry=r
        )
        self.exec_bytes_total = Gauge(
            f"{PREFIX}execution_total_bytes", "Bytes the current execution copies in all.", _PC, registry=r
        )
        self.exec_parts_moved = Gauge(
            f"{PREFIX}execution_moved_partitions",
            "Partitions reassigned so far (current execution).",
            _PC,
            registry=r,
        )
        self.exec_parts_total = Gauge(
            f"{PREFIX}execution_total_partitions", "Partitions the current execution reassigns.", _PC, registry=r
        )
        self.exec_in_flight = Gauge(
            f"{PREFIX}execution_inflight_moves", "Reassignments in flight now.", _PC, registry=r
        )
        self.exec_stuck = Gauge(
            f"{PREFIX}execution_stuck_moves",
            "Reassignments that copied nothing, or waited for a missing target broker, for stuckAfterSeconds.",
            _PC,
            registry=r,
        )
        self.exec_throttle = Gauge(
            f"{PREFIX}execution_throttle_bytes_per_second",
            "Replication throttle the running execution set on each broker it moves data to or from (0: none).",
            _PC,
            registry=r,
        )
        self.exec_eta = Gauge(
            f"{PREFIX}execution_eta_seconds",
            "Estimated seconds left (-1 = unknown).",
            _PC,
            registry=r,
        )
        self.moved_bytes = Counter(
            f"{PREFIX}moved_bytes", "Bytes copied by all executions since the operator started.", _PC, registry=r
        )
        self.moved_partitions = Counter(
            f"{PREFIX}moved_partitions", "Partitions reassigned by all executions since start.", _PC, registry=r
        )
        self.analysis_seconds = Histogram(
            f"{PREFIX}analysis_duration_seconds",
            "Time to turn samples into a load snapshot (Spark).",
            _PC,
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        self.planning_seconds = Histogram(
            f"{PREFIX}planning_duration_seconds",
            "Time to compute a proposal from a snapshot.",
            _PC,
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        self.reconciliations = Counter(f"{PREFIX}reconciliations", "Reconciliations of a policy.", _P, registry=r)
        self.errors = Counter(
            f"{PREFIX}errors",
            "Reconciliation errors by reason.",
            (*_P, "reason"),
            registry=r,
        )
        self.samples = Counter(
            f"{PREFIX}samples_collected", "Load samples collected from the cluster.", _PC, registry=r
        )
        self.completeness = Gauge(
            f"{PREFIX}sample_completeness_ratio",
            "Share of partitions with samples in the analysis window, 0 to 1.",
            _PC,
            registry=r,
        )
        self.state = Gauge(
            f"{PREFIX}state", "1 for the policy's current state, 0 for the others.", (*_P, "state"), registry=r
        )
        self.executions = Counter(f"{PREFIX}executions", "Finished executions by result.", (*_PC, "result"), registry=r)
        self._lock = threading.Lock()
        # Per policy: the execution last reported and the most it had moved (counters add deltas).
        self._last_moved: dict[PolicyKey, tuple[str, int, int]] = {}
        self._threshold_resource: dict[PolicyKey, str] = {}
        self.analysis = {
            name: Gauge(f"{PREFIX}{name}", text, (*_PC, *labels), registry=r)
            for name, (text, labels) in _ANALYSIS_GAUGES.items()
        }
        self._analysis_series: dict[tuple[PolicyKey, str], set[tuple[str, ...]]] = {}

    # ----- updates ------------------------------------------------------------------------
    def set_state(self, policy: str, namespace: str, state: str) -> None:
        for s in STATES:
            self.state.labels(policy, namespace, s).set(1.0 if s == state else 0.0)

    def set_balance(
        self, key: PolicyKey, per_group: Mapping[str, Mapping[str, tuple[float, float]]], balancedness: float
    ) -> None:
        """``per_group``: group -> resource -> (max/avg ratio, stddev/avg ratio); and the 0..100 score."""
        for group, resources in per_group.items():
            for resource, (worst, spread) in resources.items():
                self.imbalance.labels(key.policy, key.namespace, key.cluster, group, resource).set(worst)
                self.imbalance_stddev.labels(key.policy, key.namespace, key.cluster, group, resource).set(spread)
        self.balancedness.labels(key.policy, key.namespace, key.cluster).set(balancedness)

    def set_threshold(self, key: PolicyKey, resource: str, threshold: float) -> None:
        labels = (key.policy, key.namespace, key.cluster)
        with self._lock:
            # One watched resource per policy: drop the series of a resource no longer watched.
            previous = self._threshold_resource.get(key)
            if previous is not None and previous != resource:
                _remove(self.threshold, (*labels, previous))
            self._threshold_resource[key] = resource
        self.threshold.labels(*labels, resource).set(threshold)

    def set_throttled_brokers(self, key: PolicyKey, count: int) -> None:
        self.throttled_brokers.labels(key.policy, key.namespace, key.cluster).set(count)

    def set_proposal(self, key: PolicyKey, *, moves: int, bytes_to_move: int, leader_changes: int) -> None:
        labels = (key.policy, key.namespace, key.cluster)
        self.proposal_moves.labels(*labels).set(moves)
        self.proposal_bytes.labels(*labels).set(bytes_to_move)
        self.proposal_leaders.labels(*labels).set(leader_changes)

    def set_throttle(self, key: PolicyKey, bytes_per_second: int | None) -> None:
        """The throttle of the execution that starts (None: it sets none)."""
        self.exec_throttle.labels(key.policy, key.namespace, key.cluster).set(bytes_per_second or 0)

    def set_execution(self, key: PolicyKey, figures: ExecutionFigures, execution: str = "") -> None:
        """Gauges for the running execution; the ``_total`` counters grow by what moved since the last call.

        ``execution`` names the run: a new name counts from zero. Within one run the figures may dip
        (an in-flight copy estimate replaced by the move's exact size), which never counts twice.
        """
        labels = (key.policy, key.namespace, key.cluster)
        self.exec_bytes_moved.labels(*labels).set(figures.bytes_moved)
        self.exec_bytes_total.labels(*labels).set(figures.bytes_total)
        self.exec_parts_moved.labels(*labels).set(figures.partitions_moved)
        self.exec_parts_total.labels(*labels).set(figures.partitions_total)
        self.exec_in_flight.labels(*labels).set(figures.in_flight)
        self.exec_stuck.labels(*labels).set(figures.stuck)
        self.exec_eta.labels(*labels).set(-1 if figures.eta_seconds is None else figures.eta_seconds)
        with self._lock:
            last_run, last_bytes, last_parts = self._last_moved.get(key, ("", 0, 0))
            if last_run != execution:
                last_bytes, last_parts = 0, 0
            top_bytes = max(last_bytes, figures.bytes_moved)
            top_parts = max(last_parts, figures.partitions_moved)
            self._last_moved[key] = (execution, top_bytes, top_parts)
        self.moved_bytes.labels(*labels).inc(top_bytes - last_bytes)
        self.moved_partitions.labels(*labels).inc(top_parts - last_parts)

    def execution_finished(self, key: PolicyKey, result: str) -> None:
        self.executions.labels(key.policy, key.namespace, key.cluster, result).inc()
        self.exec_in_flight.labels(key.policy, key.namespace, key.cluster).set(0)
        self.exec_stuck.labels(key.policy, key.namespace, key.cluster).set(0)
        self.exec_throttle.labels(key.policy, key.namespace, key.cluster).set(0)

    def reconciled(self, policy: str, namespace: str) -> None:
        self.reconciliations.labels(policy, namespace).inc()

    def error(self, policy: str, namespace: str, reason: str) -> None:
        self.errors.labels(policy, namespace, reason).inc()

    def sampled(self, key: PolicyKey, count: int, completeness: float | None = None) -> None:
        labels = (key.policy, key.namespace, key.cluster)
        self.samples.labels(*labels).inc(count)
        if completeness is not None:
            self.completeness.labels(*labels).set(completeness)

    def forget(self, policy: str, namespace: str, clusters: Iterable[str] = ()) -> None:
        """Drop a deleted policy's series so dashboards do not show ghosts."""
        _remove(self.reconciliations, (policy, namespace))
        for s in STATES:
            _remove(self.state, (policy, namespace, s))
        for cluster in clusters:
            series: tuple[Gauge | Counter, ...] = (
                self.balancedness, self.proposal_moves, self.proposal_bytes, self.proposal_leaders,
                self.exec_bytes_moved, self.exec_bytes_total, self.exec_parts_moved, self.exec_parts_total,
                self.exec_in_flight, self.exec_stuck, self.exec_throttle, self.exec_eta, self.moved_bytes,
                self.moved_partitions, self.samples, self.completeness, self.throttled_brokers,
            )  # fmt: skip
            for metric in series:
                _remove(metric, (policy, namespace, cluster))
            with self._lock:
                self._last_moved.pop(PolicyKey(policy, namespace, cluster), None)
            labelled_series: tuple[Gauge | Counter, ...] = (
                self.imbalance, self.imbalance_stddev, self.threshold, self.executions, *self.analysis.values()
            )  # fmt: skip
            for labelled in labelled_series:
                _remove_matching(labelled, {"policy": policy, "namespace": namespace, "cluster": cluster})

    def set_analysis_samples(
        self,
        key: PolicyKey,
        samples: Iterable[tuple[str, Mapping[str, str], float]],
        replaces: Iterable[str] = (),
    ) -> None:
        """Replace the consumer-group or durability series of one policy with ``samples`` (full metric
        names): a gauge that gets samples, or is named in ``replaces`` (e.g. consumer_groups.METRIC_NAMES,
        so that the last group's deletion is seen too), drops this policy's series not in them."""
        fresh: dict[str, dict[tuple[str, ...], float]] = {name.removeprefix(PREFIX): {} for name in replaces}
        for name, labels, value in samples:
            short = name.removeprefix(PREFIX)
            wanted = _ANALYSIS_GAUGES[short][1]
            fresh.setdefault(short, {})[tuple(labels[label] for label in wanted)] = value
        base = (key.policy, key.namespace, key.cluster)
        with self._lock:
            for short, series in fresh.items():
                gauge = self.analysis[short]
                for stale in self._analysis_series.get((key, short), set()) - set(series):
                    _remove(gauge, (*base, *stale))
                for values, value in series.items():
                    gauge.labels(*base, *values).set(value)
                self._analysis_series[(key, short)] = set(series)

    def exposition(self) -> bytes:
        """The text format, as /metrics serves it."""
        return generate_latest(self.registry)

    def serve(self, port: int = 0, addr: str = "127.0.0.1") -> MetricsServer:
        """Serve /metrics over HTTP in a daemon thread; port 0 picks a free port."""
        server, thread = start_http_server(port, addr=addr, registry=self.registry)
        return MetricsServer(server, thread)


def log_dir_samples(usage: Iterable[LogDirUsage]) -> list[tuple[str, dict[str, str], float]]:
    """The log-directory gauges of :func:`~kafka_balancer.model.log_dir_usage.log_dir_usage`'s rows, for
    :meth:`Metrics.set_analysis_samples` with ``replaces=LOG_DIR_METRIC_NAMES``; a figure not known
    (a volume's size) has no series."""
    out: list[tuple[str, dict[str, str], float]] = []
    for row in usage:
        labels = {"broker": str(row.broker_id), "log_dir": UNKNOWN_LOG_DIR if row.path is None else row.path}
        figures: dict[str, float | None] = {"log_dir_bytes": row.bytes}
        if row.path is not None:
            figures |= {
                "log_dir_volume_bytes": row.total_bytes,
                "log_dir_volume_usable_bytes": row.usable_bytes,
                "log_dir_utilisation_ratio": row.utilisation,
                "log_dir_cordoned": float(row.cordoned),
            }
        out += [(f"{PREFIX}{name}", labels, value) for name, value in figures.items() if value is not None]
    return out


def _remove(metric: Gauge | Counter, labels: tuple[str, ...]) -> None:
    with contextlib.suppress(KeyError):  # never set for this policy
        metric.remove(*labels)


def _remove_matching(metric: Gauge | Counter, labels: Mapping[str, str]) -> None:
    """Remove every series of ``metric`` whose labels include ``labels`` (e.g. all groups of a policy)."""
    names = list(metric._labelnames)
    for family in metric.collect():
        for sample in family.samples:
            if sample.name.endswith("_created"):
                continue  # a counter's creation time: the same series as its _total sample
            if all(sample.labels.get(k) == v for k, v in labels.items()):
                _remove(metric, tuple(sample.labels[n] for n in names))


class MetricsServer:
    """A running /metrics endpoint; ``close()`` stops it and frees the port."""

    def __init__(self, server: WSGIServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = self._server.server_address[0]
        shown = host.decode() if isinstance(host, bytes) else str(host)
        return f"http://{shown}:{self.port}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

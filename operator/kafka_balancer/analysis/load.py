"""From the job's per-partition rates to the load snapshot and its analysis report (driver side, pandas).

Estimates (documented in docs/samples.md):

* bytes in per partition = message rate x the topic's average message size. The size comes from the
  Prometheus topic counters (bytes in / messages in) when sampled, else from log growth (size delta /
  offset delta over intervals where nothing was deleted), else from the cluster-wide average.
* bytes out per partition = consumed message rate (delta of the sum of committed consumer offsets) x
  the same message size; without consumer offsets, bytes in x the topic's Prometheus out/in ratio.
* CPU of leading a partition = k x (0.6 leader bytes in + 0.1 leader bytes out), with the follower
  weight 0.3 charged to followers (Cruise Control's default weights). k is fitted to the measured
  broker CPU (process_cpu_seconds_total) when sampled, else a fixed assumption of one core per
  100 MB/s of weighted traffic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import numpy as np
import pandas as pd

from kafka_balancer.analysis.job import JobResult, Statistic, windows_in_range
from kafka_balancer.analysis.report import REPORT_VERSION
from kafka_balancer.model import parse_snapshot
from kafka_balancer.model.cluster import FloatArray
from kafka_balancer.model.quantities import CpuWeights, network_in_rows, network_out_rows, per_replica

DEFAULT_GROUP: Final = "cluster"
RESOURCES: Final = ("replicas", "leaders", "disk", "network-in", "network-out", "cpu")


class AnalysisError(ValueError):
    """The samples cannot make a snapshot (e.g. a broker in samples but not in metadata)."""


@dataclass(frozen=True)
class CpuModel:
    # Weighted bytes per byte/s of traffic by role (Cruise Control's default weights).
    weights: CpuWeights = field(default_factory=lambda: CpuWeights(leader_in=0.6, leader_out=0.1, follower_in=0.3))
    weighted_bytes_per_core: float = 100e6  # the assumption when CPU is not measured


@dataclass(frozen=True)
class BrokerCapacity:
    disk_bytes: float | None = None
    network_in_bytes_per_sec: float | None = None
    network_out_bytes_per_sec: float | None = None
    cpu_cores: float | None = None

    def as_dict(self) -> dict[str, float]:
        pairs = {
            "diskBytes": self.disk_bytes,
            "networkInBytesPerSec": self.network_in_bytes_per_sec,
            "networkOutBytesPerSec": self.network_out_bytes_per_sec,
            "cpuCores": self.cpu_cores,
        }
        return {k: v for k, v in pairs.items() if v is not None}


@dataclass(frozen=True)
class LoadOptions:
    cluster: str
    statistic: Statistic = "p95"
    window_seconds: int = 300
    min_windows: int = 1  # windows with a rate a partition needs to count as complete
    groups: Mapping[str, Sequence[int]] = field(default_factory=dict)  # empty: the whole cluster is one group
    capacity: Mapping[int, BrokerCapacity] = field(default_factory=dict)
    default_capacity: BrokerCapacity | None = None
    cpu: CpuModel = field(default_factory=CpuModel)


@dataclass(frozen=True)
class LoadResult:
    snapshot: dict[str, Any]
    report: dict[str, Any]


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def _num(value: Any) -> float:
    return 0.0 if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _topic_message_sizes(parts: pd.DataFrame) -> tuple[dict[str, float], dict[str, str]]:
    sums = parts.groupby("topic")[["prom_bytes_in", "prom_messages_in", "growth_bytes", "growth_messages"]].sum(
        min_count=1
    )
    total_bytes, total_msgs = _num(parts["growth_bytes"].sum()), _num(parts["growth_messages"].sum())
    cluster_size = total_bytes / total_msgs if total_msgs > 0 else 0.0
    sizes: dict[str, float] = {}
    sources: dict[str, str] = {}
    for topic, row in sums.iterrows():
        if _num(row["prom_messages_in"]) > 0:
            sizes[str(topic)], sources[str(topic)] = (
                _num(row["prom_bytes_in"]) / _num(row["prom_messages_in"]),
                "prometheus",
            )
        elif _num(row["growth_messages"]) > 0:
            sizes[str(topic)], sources[str(topic)] = (
                _num(row["growth_bytes"]) / _num(row["growth_messages"]),
                "sizeGrowth",
            )
        else:
            sizes[str(topic)], sources[str(topic)] = cluster_size, "clusterAverage"
    return sizes, sources


def _fanout(parts: pd.DataFrame) -> dict[str, float]:
    sums = parts.groupby("topic")[["prom_bytes_out", "prom_bytes_in_for_out"]].sum(min_count=1)
    return {
        str(t): _num(r["prom_bytes_out"]) / _num(r["prom_bytes_in_for_out"])
        for t, r in sums.iterrows()
        if _num(r["prom_bytes_in_for_out"]) > 0
    }


def _stats(values: np.ndarray[Any, Any]) -> dict[str, float]:
    if values.size == 0:
        return {"avg": 0.0, "max": 0.0, "min": 0.0, "stddev": 0.0, "maxOverAvg": 1.0, "minOverAvg": 1.0}
    avg = float(values.mean())
    return {
        "avg": avg,
        "max": float(values.max()),
        "min": float(values.min()),
        "stddev": float(values.std()),
        # An idle group is perfectly balanced: ratios of 1, not divisions by zero.
        "maxOverAvg": float(values.max() / avg) if avg > 0 else 1.0,
        "minOverAvg": float(values.min() / avg) if avg > 0 else 1.0,
    }


def build_load(job: JobResult, options: LoadOptions) -> LoadResult:
    """The snapshot (validated against the contract) and the report for one job result."""
    if job.partitions.empty:
        raise AnalysisError(f"analysis: no partition samples of cluster {options.cluster!r} in the range")
    stat = "p95" if options.statistic == "p95" else "avg"
    # Partitions absent from the latest sample were deleted (or the sample is from another writer).
    parts = job.partitions[job.partitions["last_ts_ms"] == job.last_ts_ms].sort_values(["topic", "partition"])
    parts = parts.reset_index(drop=True)
    if job.brokers.empty:
        raise AnalysisError(
            f"analysis: no broker samples of cluster {options.cluster!r} in the range (dataset 'brokers')"
        )
    latest_broker_ts = int(job.brokers["last_ts_ms"].max())
    brokers = job.brokers[job.brokers["last_ts_ms"] == latest_broker_ts].sort_values("broker_id").reset_index(drop=True)
    broker_ids = [int(b) for b in brokers["broker_id"]]
    known = set(broker_ids)
    # Plain lists: one typed pass per column instead of pandas' untyped row objects.
    topic_col: list[Any] = parts["topic"].tolist()
    partition_col: list[Any] = parts["partition"].tolist()
    replicas_col: list[list[int]] = [[int(b) for b in r] for r in parts["replicas"].tolist()]
    isr_col: list[Any] = parts["isr"].tolist()
    leader_col: list[Any] = parts["leader"].tolist()
    for topic, partition, replicas in zip(topic_col, partition_col, replicas_col, strict=True):
        missing = [b for b in replicas if b not in known]
        if missing:
            raise AnalysisError(
                f"analysis: broker {missing[0]} is in the samples (replicas of partition {topic}-{partition}: "
                f"{replicas}) but not in the broker metadata of the latest sample (brokers: {broker_ids})"
            )

    sizes, size_sources = _topic_message_sizes(parts)
    fanout = _fanout(parts)
    msg_size = parts["topic"].map(sizes).fillna(0.0).to_numpy(np.float64)
    msg_rate = parts[f"msg_rate_{stat}"].fillna(0.0).to_numpy(np.float64)
    bytes_in: FloatArray = msg_rate * msg_size
    consumed = parts[f"consumed_rate_{stat}"].to_numpy(np.float64)
    fan = parts["topic"].map(fanout).to_numpy(np.float64)
    bytes_out: FloatArray = np.where(
        ~np.isnan(consumed), np.nan_to_num(consumed) * msg_size, np.nan_to_num(fan) * bytes_in
    )
    cpu_model = options.cpu
    weighted_cpu = cpu_model.weights.rows(bytes_in, bytes_out)

    # Per-broker loads, replica by replica (a few hundred thousand replicas: numpy over flat arrays).
    position = {b: i for i, b in enumerate(broker_ids)}
    nb = len(broker_ids)
    rf = np.array([len(r) for r in replicas_col], dtype=np.int64)
    flat_brokers = np.array([position[b] for r in replicas_col for b in r], dtype=np.int64)
    owner = np.repeat(np.arange(len(parts)), rf)
    leader_ids = [None if x is None or pd.isna(x) else int(x) for x in leader_col]
    leader_idx = np.array([-1 if x is None else position.get(x, -1) for x in leader_ids], dtype=np.int64)
    is_leader = flat_brokers == leader_idx[owner]
    leader_size = parts["size"].fillna(0.0).to_numpy(np.float64)
    replica_size = np.array(
        [
            _num(s[k]) if s is not None and k < len(s) and s[k] is not None else leader_size[i]
            for i, s in enumerate(parts["replica_sizes"].tolist())
            for k in range(rf[i])
        ],
        dtype=np.float64,
    )

    def on_brokers(weights: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return np.bincount(flat_brokers, weights=weights, minlength=nb)

    # The formulas are model/quantities' (disk is each replica's own size, measured per replica).
    load = {
        "replicas": np.bincount(flat_brokers, minlength=nb).astype(np.float64),
        "leaders": np.bincount(flat_brokers[is_leader], minlength=nb).astype(np.float64),
        "disk": on_brokers(replica_size),
        "network-in": on_brokers(per_replica(network_in_rows(bytes_in), owner, is_leader)),
        "network-out": on_brokers(per_replica(network_out_rows(bytes_in, bytes_out, rf), owner, is_leader)),
    }
    weighted = on_brokers(per_replica(weighted_cpu, owner, is_leader))
    measured = brokers[f"cpu_rate_{stat}"].to_numpy(np.float64)
    if np.isfinite(measured).all() and weighted.sum() > 0:
        cores_per_byte, cpu_source = float(measured.sum() / weighted.sum()), "measured"
        load["cpu"] = measured
    else:
        cores_per_byte, cpu_source = 1.0 / cpu_model.weighted_bytes_per_core, "estimated"
        load["cpu"] = weighted * cores_per_byte
    cpu_leader = weighted_cpu[0] * cores_per_byte

    # ----- snapshot -------------------------------------------------------------------------
    snapshot_brokers = []
    racks: list[Any] = brokers["rack"].tolist()
    alive = brokers["alive"].fillna(False).to_numpy(bool)
    for i, b in enumerate(broker_ids):
        entry: dict[str, Any] = {"id": b, "alive": bool(alive[i])}
        if racks[i] is not None and not pd.isna(racks[i]):
            entry["rack"] = str(racks[i])
        capacity = options.capacity.get(b, options.default_capacity)
        if capacity is not None and capacity.as_dict():
            entry["capacity"] = capacity.as_dict()
        snapshot_brokers.append(entry)
    snapshot_parts = []
    for i, replicas in enumerate(replicas_col):
        isr = isr_col[i]
        snapshot_parts.append(
            {
                "topic": str(topic_col[i]),
                "partition": int(partition_col[i]),
                "replicas": replicas,
                "leader": leader_ids[i],
                "isr": replicas if isr is None else [int(b) for b in isr],
                "sizeBytes": float(leader_size[i]),
                "bytesInPerSec": float(bytes_in[i]),
                "bytesOutPerSec": float(bytes_out[i]),
                "messagesInPerSec": float(msg_rate[i]),
                "cpuCoresLeader": float(cpu_leader[i]),
            }
        )
    settings = parts.groupby("topic")[["min_insync_replicas", "unclean_leader_election"]].last()
    snapshot_topics = []
    for name, min_isr, unclean in zip(
        settings.index.tolist(),
        settings["min_insync_replicas"].tolist(),
        settings["unclean_leader_election"].tolist(),
        strict=True,
    ):
        topic_entry: dict[str, Any] = {"name": str(name)}
        if min_isr is not None and not pd.isna(min_isr):
            topic_entry["minInsyncReplicas"] = int(min_isr)
        if unclean is not None and not pd.isna(unclean):
            topic_entry["uncleanLeaderElection"] = bool(unclean)
        if len(topic_entry) > 1:
            snapshot_topics.append(topic_entry)
    snapshot: dict[str, Any] = {
        "version": 1,
        "cluster": options.cluster,
        "capturedAt": _iso(job.last_ts_ms),
        "brokers": snapshot_brokers,
        "partitions": snapshot_parts,
    }
    if snapshot_topics:
        snapshot["topics"] = snapshot_topics
    parse_snapshot(snapshot)  # the contract holds for what we write, or we fail here and not in the planner

    # ----- report ---------------------------------------------------------------------------
    windows = parts["windows"].fillna(0).to_numpy(np.int64)
    expected = windows_in_range(job.first_ts_ms, job.last_ts_ms, options.window_seconds)
    complete = int((windows >= options.min_windows).sum())
    groups = dict(options.groups) or {DEFAULT_GROUP: broker_ids}
    group_stats: dict[str, Any] = {}
    for name, members in groups.items():
        unknown = [b for b in members if b not in position]
        if unknown:
            raise AnalysisError(
                f"analysis: resource group {name!r} names broker {unknown[0]} that is not in the samples"
            )
        idx = np.array([position[b] for b in members if alive[position[b]]], dtype=np.int64)
        group_stats[name] = {
            "brokers": sorted(int(b) for b in members),
            "resources": {r: _stats(load[r][idx]) for r in RESOURCES},
        }
    broker_report = []
    for i, b in enumerate(broker_ids):
        entry = {"id": b, "alive": bool(alive[i]), "load": {r: float(load[r][i]) for r in RESOURCES}}
        capacity = options.capacity.get(b, options.default_capacity)
        if capacity is not None:
            caps = {"disk": capacity.disk_bytes, "network-in": capacity.network_in_bytes_per_sec,
                    "network-out": capacity.network_out_bytes_per_sec, "cpu": capacity.cpu_cores}  # fmt: skip
            entry["utilisation"] = {r: float(load[r][i]) / c for r, c in caps.items() if c}
        broker_report.append(entry)
    report = {
        "version": REPORT_VERSION,
        "cluster": options.cluster,
        "capturedAt": snapshot["capturedAt"],
        "from": _iso(job.first_ts_ms),
        "to": _iso(job.last_ts_ms),
        "samples": job.samples,
        "statistic": options.statistic,
        "windowSeconds": options.window_seconds,
        "expectedWindows": int(expected),
        "minWindows": options.min_windows,
        "partitionsTotal": len(parts),
        "partitionsComplete": complete,
        "completeness": complete / len(parts) if len(parts) else 0.0,
        "windowCoverage": float(np.minimum(windows / expected, 1.0).mean()) if len(parts) else 0.0,
        "messageSizeSource": {t: size_sources[t] for t in sorted(size_sources)},
        "messageSizeBytes": {t: sizes[t] for t in sorted(sizes)},
        "bytesOutSource": "consumerOffsets" if np.isfinite(consumed).any() else ("prometheus" if fanout else "none"),
        "cpuSource": cpu_source,
        "cpuCoresPerWeightedBytePerSec": cores_per_byte,
        "brokers": broker_report,
        "groups": group_stats,
    }
    return LoadResult(snapshot, report)

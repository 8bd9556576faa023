"""What the demo prints: per-broker load tables, the proposal, progress lines. Pure formatting.

The per-broker figures are the HTML report's own (:func:`kafka_balancer.report.broker_loads`), so the
terminal and the report never disagree. Spreads are shown per resource group: each group is balanced
against its own average, so a cluster-wide max/avg would mix groups of different sizes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kafka_balancer.model import NO_BROKER, ClusterModel
from kafka_balancer.report import broker_loads

# (report key, column title, divisor, decimals)
COLUMNS = (
    ("replicas", "replicas", 1.0, 0),
    ("leaders", "leaders", 1.0, 0),
    ("disk", "disk GB", 1e9, 1),
    ("network_in", "in MB/s", 1e6, 1),
    ("network_out", "out MB/s", 1e6, 1),
)


def gigabytes(value: float) -> str:
    return f"{value / 1e9:,.1f} GB"


def with_observed_placement(model: ClusterModel, observed: ClusterModel) -> ClusterModel:
    """``model`` (sizes, traffic) with the replicas and leaders ``observed`` read from Kafka.

    The adapter reads placement and sizes but no traffic (that needs samples over time); the demo
    knows the traffic it drives, so it lays the observed placement over its own model.
    """
    width = max(model.replicas.shape[1], observed.replicas.shape[1])
    replicas = np.full((model.num_partitions, width), NO_BROKER, dtype=np.int32)
    leader = np.full(model.num_partitions, NO_BROKER, dtype=np.int32)
    for p in range(model.num_partitions):
        topic, partition = model.topic_name(p), int(model.partition_id[p])
        q = observed.partition_index(topic, partition)
        row = [model.broker_index(b) for b in observed.replica_ids(q)]
        replicas[p, : len(row)] = row
        lead = observed.leader_id(q)
        leader[p] = NO_BROKER if lead is None else model.broker_index(lead)
    return model.with_placement(replicas, leader)


def spreads(model: ClusterModel, groups: Mapping[str, Sequence[int]]) -> dict[str, dict[str, float]]:
    """group -> column key -> max/avg over the group's brokers (0 when the group carries nothing)."""
    loads = broker_loads(model)
    position = {b: i for i, b in enumerate(loads.broker_ids)}
    out: dict[str, dict[str, float]] = {}
    for name, brokers in groups.items():
        out[name] = {}
        for key, *_ in COLUMNS:
            values = [loads.metric(key)[position[b]] for b in brokers if b in position]
            mean = sum(values) / len(values) if values else 0.0
            out[name][key] = max(values) / mean if mean else 0.0
    return out


def broker_table(model: ClusterModel, groups: Mapping[str, Sequence[int]]) -> str:
    """One row per broker, then the max/avg spread of each column in each group."""
    loads = broker_loads(model)
    group_of = {b: name for name, brokers in groups.items() for b in brokers}
    head = f"{'broker':>6}  {'rack':<7} {'group':<10}" + "".join(f"{title:>10}" for _, title, _, _ in COLUMNS)
    lines = [head, "-" * len(head)]
    for i, broker in enumerate(loads.broker_ids):
        cells = "".join(f"{loads.metric(key)[i] / div:>10,.{dec}f}" for key, _, div, dec in COLUMNS)
        rack = loads.racks[i] or "-"
        lines.append(f"{broker:>6}  {rack:<7} {group_of.get(broker, '-'):<10}{cells}")
    lines.append("-" * len(head))
    for name, ratios in spreads(model, groups).items():
        cells = "".join(f"{ratios[key]:>10.2f}" for key, *_ in COLUMNS)
        lines.append(f"{'max/avg':>6}  {'':<7} {name:<10}{cells}")
    return "\n".join(lines)


def proposal_lines(proposal: Mapping[str, Any]) -> list[str]:
    lines = [
        f"  id                  {proposal['id']}",
        f"  replica moves       {proposal['moves']} ({proposal.get('partitions', '?')} partitions)",
        f"  bytes to move       {gigabytes(float(proposal['bytesToMove']))}",
        f"  leader changes      {proposal['leaderChanges']}",
        f"  balancedness        {proposal['balancednessBefore']:.1f} -> {proposal['balancednessAfter']:.1f} (0..100)",
    ]
    for group in proposal.get("groups") or []:
        after = group.get("after")
        shown = "?" if after is None else f"{after:.2f}"
        lines.append(f"  {group['name']:<19} {group['resource']} max/avg {group['before']:.2f} -> {shown}")
    lines.append(f"  plan                ConfigMap {proposal['configMap']} (plan.json, summary.json)")
    return lines


def progress_line(elapsed: float, progress: Mapping[str, Any], in_flight: int, rate: float | None) -> str:
    """``rate`` in bytes per emulated second (what the throttle limits); ``elapsed`` real seconds."""
    eta = progress.get("etaSeconds")
    moved, total = float(progress.get("bytesMoved", 0)), float(progress.get("bytesTotal", 0))
    return (
        f"  [{elapsed:6.1f}s] partitions {progress.get('partitionsDone', 0)}/{progress.get('partitionsTotal', 0)}"
        f"  moved {gigabytes(moved)} of {gigabytes(total)}"
        f" ({float(progress.get('percent', 0.0)):5.1f}%)  in flight {in_flight:>3}"
        f"  rate {'-' if rate is None else f'{rate / 1e6:,.0f} MB/s'}"
        f"  eta {'-' if eta is None else f'{eta}s'}"
    )


def command_line(namespace: str, name: str, patch: Mapping[str, Any]) -> str:
    """The kubectl command a person would type for the same change."""
    return f"kubectl -n {namespace} patch bp {name} --type merge -p '{json.dumps(patch, separators=(',', ':'))}'"

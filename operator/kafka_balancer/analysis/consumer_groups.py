"""Consumer-group balance across a cluster: read groups through the Kafka port, simulate every
assignor on each group's real members and subscriptions, rank groups by imbalance.

Each group becomes a what-if document (the same G.json that ``kafka-balancer consumers simulate``
reads), so the plain-Python path, the Spark path and the offline CLI share one code path per group.
Spark only pays off with thousands of groups; below ``spark_threshold`` it runs in-process.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final

from kafka_balancer.consumers import ASSIGNOR_NAMES, parse_group, simulate
from kafka_balancer.consumers.simulate import DEFAULT_MAX_LEAVERS, check_work
from kafka_balancer.kafka.port import ConsumerGroupInfo, KafkaPort, TopicPartition
from kafka_balancer.model.cluster import ClusterModel
from kafka_balancer.model.errors import ModelError

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

DEFAULT_SPARK_THRESHOLD = 1000

# Every gauge metric_samples() may emit: pass as Metrics.set_analysis_samples(replaces=...) so a group
# that disappears (or stops reporting lag) loses its series even when no group is left.
METRIC_NAMES: Final = (
    "kafka_balancer_consumer_group_imbalance_ratio",
    "kafka_balancer_consumer_group_lag_imbalance_ratio",
    "kafka_balancer_consumer_group_lag",
    "kafka_balancer_consumer_group_members",
    "kafka_balancer_consumer_group_recommended_assignor_info",
    "kafka_balancer_consumer_groups",
    "kafka_balancer_consumer_groups_lag",
)


@dataclass(frozen=True)
class GroupsInput:
    """What the analysis needs from the cluster: the groups, partitions per topic, message rates."""

    groups: tuple[ConsumerGroupInfo, ...]
    partitions: Mapping[str, int]
    rates: Mapping[tuple[str, int], float]

    @cached_property
    def screened(self) -> Screened:
        """The groups sorted once into documents to analyse and refusals (see :func:`refusal`)."""
        documents: list[tuple[str, str, dict[str, Any]]] = []
        refused: dict[str, str] = {}
        for info in sorted(self.groups, key=lambda g: g.group_id):
            doc = group_document(info, self.partitions, self.rates)
            if doc is None:
                continue
            why = refusal(doc)
            if why is None:
                documents.append((info.group_id, info.state, doc))
            else:
                refused[info.group_id] = why
        return Screened(tuple(documents), refused)


@dataclass(frozen=True)
class Screened:
    """Groups with members: (group, state, what-if document) of those within the simulation limits, in
    group order, and why each other one is left out."""

    documents: tuple[tuple[str, str, dict[str, Any]], ...]
    skipped: Mapping[str, str]


def collect(port: KafkaPort, model: ClusterModel | None = None) -> GroupsInput:
    """Read groups and topic sizes; rates come from ``model`` (an analysed snapshot) when given."""
    model = model or port.read_cluster(with_sizes=False)
    partitions = Counter(model.topic_name(p) for p in range(model.num_partitions))
    rates = {
        (model.topic_name(p), int(model.partition_id[p])): float(model.messages_in[p])
        for p in range(model.num_partitions)
        if model.messages_in[p] > 0
    }
    return GroupsInput(tuple(port.consumer_groups()), dict(partitions), rates)


def group_document(
    info: ConsumerGroupInfo, partitions: Mapping[str, int], rates: Mapping[tuple[str, int], float]
) -> dict[str, Any] | None:
    """The group as a G.json document, or None when there is nothing to simulate (no members, not a
    consumer group, or its members read no existing topic)."""
    if info.protocol_type not in ("consumer", "") or not info.members:
        return None
    subscribed = sorted({t for m in info.members for t in m.subscription if t in partitions})
    if not subscribed:
        return None
    lag_by_tp = info.lag()
    doc: dict[str, Any] = {
        "topics": {t: partitions[t] for t in subscribed},
        "members": [
            {
                "id": m.member_id,
                "topics": list(m.subscription),
                "assignment": {
                    t: [p for p in parts if p < partitions[t]] for t, parts in m.assignment.items() if t in subscribed
                },
            }
            for m in info.members
        ],
    }
    if info.assignor in ASSIGNOR_NAMES:
        doc["assignor"] = info.assignor
    if lag_by_tp:
        doc["lag"] = {
            t: [float(lag_by_tp.get(TopicPartition(t, p), 0)) for p in range(partitions[t])] for t in subscribed
        }
    if any((t, p) in rates for t in subscribed for p in range(partitions[t])):
        doc["rate"] = {t: [rates.get((t, p), 0.0) for p in range(partitions[t])] for t in subscribed}
    return doc


def analyze_document(group_id: str, state: str, doc: dict[str, Any]) -> dict[str, Any]:
    """One group's report: current balance and lag, every assignor simulated, the recommendation."""
    result = simulate(parse_group(doc))
    current = result.get("current", {})
    balance = current.get("balance", {})
    lag_total = sum(sum(v) for v in doc.get("lag", {}).values())
    return {
        "group": group_id,
        "state": state,
        "assignor": doc.get("assignor"),
        "members": len(doc["members"]),
        "partitions": sum(doc["topics"].values()),
        "totalLag": lag_total,
        "imbalanceRatio": balance.get("imbalanceRatio", 1.0),
        "lagImbalanceRatio": balance.get("lagImbalanceRatio"),
        "rateImbalanceRatio": balance.get("rateImbalanceRatio"),
        "maxPartitions": balance.get("maxPartitions", 0),
        "minPartitions": balance.get("minPartitions", 0),
        "recommendation": result["recommendation"],
        "simulation": result,
        # Members, subscriptions, current assignment, lag and rate per partition, as a G.json what-if
        # document: `kafka-balancer consumers simulate --group` takes it back as is.
        "input": doc,
    }


def refusal(doc: dict[str, Any]) -> str | None:
    """Why the group's simulation is refused (above a limit of docs/consumers.md, "Limits"), or None.
    Checked before any assignor runs, so one oversized group costs no more than reading it."""
    try:
        check_work(parse_group(doc), DEFAULT_MAX_LEAVERS)
    except ModelError as err:
        return str(err)
    return None


def skipped(data: GroupsInput) -> dict[str, str]:
    """Group -> why it is left out of the reports: its simulation is above the limits."""
    return dict(data.screened.skipped)


def analyze_python(data: GroupsInput) -> list[dict[str, Any]]:
    return [analyze_document(g, s, doc) for g, s, doc in data.screened.documents]


def _analyze_batch(batches: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    # Runs in Spark's Python workers: imports stay inside so the driver-side module has no pandas cost.
    import pandas as pd  # noqa: PLC0415

    for batch in batches:
        reports = [
            json.dumps(analyze_document(g, s, json.loads(d)), sort_keys=True)
            for g, s, d in zip(batch["group"], batch["state"], batch["document"], strict=True)
        ]
        yield pd.DataFrame({"group": batch["group"], "report": reports})


def analyze_spark(data: GroupsInput, spark: SparkSession) -> list[dict[str, Any]]:
    """The same reports computed on Spark, one task per slice of groups (DataFrame API only, so it
    also runs over Spark Connect)."""
    rows = [(g, s, json.dumps(doc, sort_keys=True)) for g, s, doc in data.screened.documents]
    if not rows:
        return []
    frame = spark.createDataFrame(rows, schema="group string, state string, document string")
    result = frame.mapInPandas(_analyze_batch, schema="group string, report string").collect()
    reports = {row["group"]: json.loads(row["report"]) for row in result}
    return [reports[g] for g, _s, _d in rows]


def analyze(
    data: GroupsInput, *, spark: SparkSession | None = None, spark_threshold: int = DEFAULT_SPARK_THRESHOLD
) -> list[dict[str, Any]]:
    """Reports for every group with members within the simulation limits (the others: ``skipped``); on
    Spark when a session is given and groups are many."""
    if spark is not None and len(data.groups) >= spark_threshold:
        return analyze_spark(data, spark)
    return analyze_python(data)


def ranked(reports: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Reports most imbalanced first: by imbalance ratio, then lag imbalance, then name."""
    return sorted(reports, key=lambda r: (-r["imbalanceRatio"], -(r["lagImbalanceRatio"] or 0.0), r["group"]))


def most_imbalanced(reports: Iterable[dict[str, Any]], top_n: int) -> list[dict[str, Any]]:
    """The ``top_n`` groups by imbalance ratio (then lag imbalance, then name), as status entries."""
    return [
        {
            "group": r["group"],
            "assignor": r["assignor"],
            "members": r["members"],
            "imbalanceRatio": r["imbalanceRatio"],
            "lagImbalanceRatio": r["lagImbalanceRatio"],
            "totalLag": r["totalLag"],
            "recommendedAssignor": r["recommendation"]["assignor"],
        }
        for r in ranked(reports)[:top_n]
    ]


def metric_samples(reports: Iterable[dict[str, Any]], top_n: int) -> list[tuple[str, dict[str, str], float]]:
    """(metric name, labels, value) for the consumer-group gauges the operator exports.

    Per group only for the ``top_n`` most imbalanced (the groups status lists), so the series grow with
    ``top_n``, not with the cluster's groups; the number of groups and their total lag cover them all."""
    everyone = list(reports)
    out: list[tuple[str, dict[str, str], float]] = [
        ("kafka_balancer_consumer_groups", {}, float(len(everyone))),
        ("kafka_balancer_consumer_groups_lag", {}, float(sum(r["totalLag"] or 0 for r in everyone))),
    ]
    for r in ranked(everyone)[:top_n]:
        labels = {"group": r["group"]}
        out.append(("kafka_balancer_consumer_group_imbalance_ratio", labels, float(r["imbalanceRatio"])))
        if r["lagImbalanceRatio"] is not None:
            out.append(("kafka_balancer_consumer_group_lag_imbalance_ratio", labels, float(r["lagImbalanceRatio"])))
        out.append(("kafka_balancer_consumer_group_lag", labels, float(r["totalLag"])))
        out.append(("kafka_balancer_consumer_group_members", labels, float(r["members"])))
        recommended = r["recommendation"]["assignor"]
        out.append(
            (
                "kafka_balancer_consumer_group_recommended_assignor_info",
                {**labels, "current": r["assignor"] or "unknown", "recommended": recommended},
                1.0,
            )
        )
    return out

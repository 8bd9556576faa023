"""Plan many resource groups in parallel inside Spark: one group per task.

Groups share no brokers and no partitions, so each one is planned on its own sub-model
(:func:`kafka_balancer.planner.groups.split`), and the whole-cluster proposal is the merge of every
group's targets (:func:`~kafka_balancer.planner.groups.merge`, which also computes the summary and
the id). Here the per-group step runs as Spark tasks: each row of a small DataFrame carries one
group's job, the rows are range-partitioned on their index into as many partitions as there are
groups (an explicit count, which adaptive execution keeps, so no two groups share a task), and
``mapInPandas`` plans each one. With dozens of groups the whole Spark cluster plans at once; the
driver only splits, collects the small target lists and merges.

The result is the same proposal (same plan, same id) as planning the groups one after the other in
the driver; tests/analysis/test_group_planning.py checks exactly that.
"""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pandas as pd
from pyspark import TaskContext
from pyspark.sql import SparkSession

from kafka_balancer.analysis.spark import EngineConfig, get_session
from kafka_balancer.model.cluster import ClusterModel
from kafka_balancer.model.plan import PartitionTarget
from kafka_balancer.model.proposal import Proposal
from kafka_balancer.planner import PlannerOptions, PlanningError
from kafka_balancer.planner.groups import GroupJob, merge, plan_group, split

_OUTPUT_SCHEMA = "idx int, task int, seconds double, error string, targets string, cut_short string, worsened string"
_OUTPUT_COLUMNS = ["idx", "task", "seconds", "error", "targets", "cut_short", "worsened"]


@dataclass(frozen=True)
class ParallelPlan:
    """The merged proposal, plus which Spark task planned each group and how long it took."""

    proposal: Proposal
    tasks: Mapping[str, int]  # group name -> Spark partition id of the task that planned it
    seconds: Mapping[str, float]  # group name -> planning time inside the task


def _plan_batches(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """Runs on the executors: unpickle each group's job, plan it, return its targets as JSON.

    A PlanningError is returned as data (not raised) so the driver can name the group in the error
    instead of surfacing a Python traceback wrapped in a Spark task failure.
    """
    context = TaskContext.get()
    task = context.partitionId() if context is not None else -1
    for batch in batches:
        rows: list[dict[str, object]] = []
        for idx, payload in zip(batch["idx"], batch["job"], strict=True):
            # The payload was pickled by our own driver a moment ago (never external data).
            job: GroupJob = pickle.loads(payload)  # noqa: S301
            started = time.perf_counter()
            error: str | None = None
            targets: list[list[object]] = []
            cut_short: str | None = None
            worsened: list[str] = []
            try:
                planned = plan_group(job)
                targets = [[t.topic, t.partition, list(t.replicas)] for t in planned.targets]
                cut_short = planned.cut_short
                worsened = list(planned.worsened_by_hard_goals)
            except PlanningError as exc:
                error = json.dumps({"reason": exc.reason, "details": exc.details})
            rows.append(
                {
                    "idx": int(idx),
                    "task": task,
                    "seconds": time.perf_counter() - started,
                    "error": error,
                    "targets": json.dumps(targets),
                    "cut_short": cut_short,
                    "worsened": json.dumps(worsened),
                }
            )
        yield pd.DataFrame(rows, columns=_OUTPUT_COLUMNS)


def plan_groups(
    model: ClusterModel,
    options: PlannerOptions,
    engine: EngineConfig | None = None,
    *,
    spark: SparkSession | None = None,
) -> ParallelPlan:
    """Plan every resource group of ``options`` as its own Spark task and merge the results.

    Raises PlanningError when the operation cannot be planned per group (see ``split``) or when a
    group cannot meet a hard goal (the message names the group).
    """
    jobs = split(model, options)
    if not jobs:
        return ParallelPlan(merge(model, options, []), {}, {})
    session = spark or get_session(engine)
    frame = pd.DataFrame(
        {
            "idx": list(range(len(jobs))),
            "name": [job.name for job in jobs],
            "job": [pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL) for job in jobs],
        }
    )
    groups = session.createDataFrame(frame, schema="idx int, name string, job binary")
    # Range partitioning on the distinct indexes 0..n-1 into n partitions puts one group in each.
    planned = groups.repartitionByRange(len(jobs), "idx").mapInPandas(_plan_batches, schema=_OUTPUT_SCHEMA)
    results = planned.toPandas().sort_values("idx")
    if len(results) != len(jobs):
        raise RuntimeError(f"group planning returned {len(results)} results for {len(jobs)} groups")
    targets: list[PartitionTarget] = []
    tasks: dict[str, int] = {}
    seconds: dict[str, float] = {}
    cut: dict[str, str] = {}
    worsened: dict[str, list[str]] = {}
    for idx, task, elapsed, error, encoded, cut_short, forced in results.itertuples(index=False, name=None):
        name = jobs[int(idx)].name
        if isinstance(error, str):
            failure = json.loads(error)
            raise PlanningError(failure["reason"], f"resource group '{name}': {failure['details']}")
        for topic, partition, replicas in json.loads(encoded):
            targets.append(
                PartitionTarget(topic=topic, partition=int(partition), replicas=tuple(int(r) for r in replicas))
            )
        tasks[name] = int(task)
        seconds[name] = float(elapsed)
        if isinstance(cut_short, str):
            cut[name] = cut_short
        worsened[name] = json.loads(forced)
    return ParallelPlan(merge(model, options, targets, cut, worsened), tasks, seconds)

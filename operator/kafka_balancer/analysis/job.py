"""The Spark job: a time range of samples -> per-partition windowed rates (avg and p95) and latest state.

Windows start at the range's first sample, so every window but the last covers its whole length; both
statistics weigh each window by the seconds its intervals cover (docs/samples.md, "The analysis and its
estimates"): the average is the range's counter delta over its covered seconds, and the percentile is
the rate the windowed rate stays at or below for 95% of the covered time, so a short last window counts
for its seconds and never as a window of its own.

Only the DataFrame API is used, so the same job runs on local[*], over Spark Connect and in a
SparkApplication driver. The heavy part (every sample row) stays in Spark: one shuffle by partition,
a lag over each partition's samples, then two aggregations (per window, then per partition). What
comes back to the driver is one row per partition and one per broker; turning those into the snapshot
and statistics is :mod:`kafka_balancer.analysis.load`.

Why rates are computed on *message* counts in Spark and turned into bytes later: Kafka has no
per-partition byte counter, so bytes in = messages in x the topic's average message size. That size is
one number per topic over the whole range, so avg and p95 of bytes in are exactly that size times avg
and p95 of the message rate; computing the size after the aggregation saves a second pass over the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import pandas as pd
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F  # noqa: N812  (Spark's own convention)

Statistic = Literal["avg", "p95"]
STATISTICS: Final = ("avg", "p95")
DEFAULT_WINDOW_SECONDS: Final = 300
PERCENTILE: Final = 0.95


@dataclass(frozen=True)
class JobResult:
    """What the job hands to the driver: small tables, one row per partition / broker."""

    partitions: pd.DataFrame
    brokers: pd.DataFrame
    samples: int  # distinct sample times of the cluster in the range
    first_ts_ms: int
    last_ts_ms: int


def _delta(column: str) -> Column:
    return F.col(column) - F.col(f"prev_{column}")


def _leader_size() -> Column:
    # The partition's size is its leader's log (what a move copies); the largest replica when offline.
    leader_slot = F.array_position(F.col("replicas"), F.col("leader"))
    return F.when(leader_slot > 0, F.try_element_at(F.col("replica_sizes"), leader_slot.cast("int"))).otherwise(
        F.array_max(F.col("replica_sizes"))
    )


def _in_sync_size() -> Column:
    """The bytes the partition's log-end offset counts: the smallest log among its in-sync replicas.

    ListOffsets' latest offset is the high watermark, the offset every in-sync replica has reached; the
    leader's log runs ahead of it by what the followers have not fetched yet. On a busy machine that lag
    was 4.7 MB at one end of a 45-s range and 0.5 MB at the other, and the leader's growth over the
    offset growth put 4 KB records at 3,885 B."""
    isr = F.coalesce(F.col("isr"), F.col("replicas"))
    in_sync = F.transform(  # each replica's size when it is in sync, else null (array_min skips nulls)
        F.col("replicas"),
        lambda b, i: F.when(F.array_contains(isr, b), F.try_element_at(F.col("replica_sizes"), (i + 1).cast("int"))),
    )
    return F.coalesce(F.array_min(in_sync), _leader_size())


def _window(origin_ms: int, window_seconds: int) -> Column:
    """The window of an interval, by the instant it ends: window k covers (origin + k w, origin + (k + 1) w]."""
    return F.floor((F.col("t_ms") - F.lit(origin_ms + 1)) / F.lit(window_seconds * 1000)).alias("window")


def windows_in_range(first_ts_ms: int, last_ts_ms: int, window_seconds: int) -> int:
    """How many windows the intervals of a range fall in (at least 1): the same cut as ``_window``."""
    return max(1, -(-(last_ts_ms - first_ts_ms) // (window_seconds * 1000)))


def _time_weighted(rate: str, seconds: str) -> tuple[Column, Column]:
    """avg and p95 of the window rates ``rate``, each window weighed by its covered ``seconds``."""
    covered = F.when(F.col(rate).isNotNull(), F.col(seconds))
    avg = F.try_divide(F.sum(F.col(rate) * covered), F.sum(covered))
    # Spark's exact percentile counts each value ``frequency`` times: one per covered millisecond.
    p95 = F.percentile(F.col(rate), F.lit(PERCENTILE), F.round(covered * 1000).cast("long"))
    return avg.alias(f"{rate}_avg"), p95.alias(f"{rate}_p95")


def _partition_intervals(samples: DataFrame, window: Column) -> DataFrame:
    """One row per sample with the deltas to the partition's previous sample (null for the first)."""
    size = _in_sync_size()  # for the message size: size growth over offset growth
    counters = [
        "t_ms",
        "log_end_offset",
        "size",
        "consumer_offsets_sum",
        "topic_bytes_in_total",
        "topic_messages_in_total",
        "topic_bytes_out_total",
    ]
    by_time = Window.partitionBy("topic", "partition").orderBy("t_ms")
    # Only the counters go through the sort: the replica arrays would make every sorted row several times wider.
    frame = samples.select(
        "topic",
        "partition",
        F.unix_millis(F.col("ts")).alias("t_ms"),
        size.alias("size"),
        *[c for c in counters if c not in ("t_ms", "size")],
    )
    for name in counters:
        frame = frame.withColumn(f"prev_{name}", F.lag(name).over(by_time))
    dt = _delta("t_ms") / F.lit(1000.0)
    d_offset = _delta("log_end_offset")
    # An interval counts when both ends have an offset and the offset did not go back (a recreated
    # topic restarts at 0): such an interval says nothing about the rate.
    valid = F.col("prev_t_ms").isNotNull() & (dt > 0) & d_offset.isNotNull() & (d_offset >= 0)
    d_size = _delta("size")
    # Size growth estimates the message size only when nothing was deleted in between (size did not
    # shrink) and something was written.
    size_ok = valid & d_size.isNotNull() & (d_size >= 0) & (d_offset > 0)
    d_consumed = _delta("consumer_offsets_sum")
    consumed_ok = valid & d_consumed.isNotNull() & (d_consumed >= 0)
    d_bytes, d_msgs, d_out = (
        _delta("topic_bytes_in_total"),
        _delta("topic_messages_in_total"),
        _delta("topic_bytes_out_total"),
    )
    prom_ok = valid & d_bytes.isNotNull() & d_msgs.isNotNull() & (d_bytes >= 0) & (d_msgs > 0)
    out_ok = prom_ok & d_out.isNotNull() & (d_out >= 0)
    return frame.select(
        "topic",
        "partition",
        "t_ms",
        window,
        F.when(valid, dt).alias("dt"),
        F.when(valid, d_offset).alias("d_offset"),
        F.when(consumed_ok, d_consumed).alias("d_consumed"),
        F.when(consumed_ok, dt).alias("dt_consumed"),
        F.when(size_ok, d_size).alias("growth_bytes"),
        F.when(size_ok, d_offset).alias("growth_messages"),
        F.when(prom_ok, d_bytes).alias("prom_bytes_in"),
        F.when(prom_ok, d_msgs).alias("prom_messages_in"),
        F.when(out_ok, d_out).alias("prom_bytes_out"),
        F.when(out_ok, d_bytes).alias("prom_bytes_in_for_out"),
    )


def _sum(column: str) -> Column:
    return F.sum(column).alias(column)


def _per_window(intervals: DataFrame) -> DataFrame:
    sums = [
        "dt",
        "d_offset",
        "d_consumed",
        "dt_consumed",
        "growth_bytes",
        "growth_messages",
        "prom_bytes_in",
        "prom_messages_in",
        "prom_bytes_out",
        "prom_bytes_in_for_out",
    ]
    return intervals.groupBy("topic", "partition", "window").agg(*[_sum(c) for c in sums], F.max("t_ms").alias("t_ms"))


def _per_partition(windows: DataFrame) -> DataFrame:
    # A window's rate is its messages over its covered seconds: a missed sample widens an interval
    # but does not bias the rate.
    msg_rate = F.try_divide(F.col("d_offset"), F.col("dt"))
    consumed_rate = F.try_divide(F.col("d_consumed"), F.col("dt_consumed"))
    rated = windows.withColumn("msg_rate", msg_rate).withColumn("consumed_rate", consumed_rate)
    return rated.groupBy("topic", "partition").agg(
        F.count("msg_rate").alias("windows"),
        *_time_weighted("msg_rate", "dt"),
        *_time_weighted("consumed_rate", "dt_consumed"),
        *[
            _sum(c)
            for c in (
                "growth_bytes",
                "growth_messages",
                "prom_bytes_in",
                "prom_messages_in",
                "prom_bytes_out",
                "prom_bytes_in_for_out",
            )
        ],
        F.max("t_ms").alias("last_ts_ms"),
    )


def _latest_state(samples: DataFrame, last_ts_ms: int) -> DataFrame:
    """Leader, replicas, ISR, sizes and settings of every partition in the latest sample.

    Taken with a filter on the latest instant rather than carried through the rate aggregation: the
    arrays would otherwise ride along every row of the sort and every aggregation buffer, which made
    the job several times slower on a day of samples (see docs/performance.md).
    """
    # A plain comparison on the column (not on a function of it) is pushed down to Parquet, whose
    # statistics then skip every file but the latest sample's.
    latest = samples.where(F.col("ts") == F.timestamp_millis(F.lit(last_ts_ms)))
    return latest.select(
        "topic",
        "partition",
        "leader",
        "replicas",
        "isr",
        "replica_sizes",
        _leader_size().alias("size"),
        "min_insync_replicas",
        "unclean_leader_election",
    )


def _brokers(samples: DataFrame, window: Column) -> DataFrame:
    by_time = Window.partitionBy("broker_id").orderBy("t_ms")
    frame = samples.withColumn("t_ms", F.unix_millis(F.col("ts")))
    frame = frame.withColumn("prev_t_ms", F.lag("t_ms").over(by_time)).withColumn(
        "prev_cpu", F.lag("cpu_seconds_total").over(by_time)
    )
    dt = (F.col("t_ms") - F.col("prev_t_ms")) / F.lit(1000.0)
    d_cpu = F.col("cpu_seconds_total") - F.col("prev_cpu")
    ok = F.col("prev_t_ms").isNotNull() & (dt > 0) & d_cpu.isNotNull() & (d_cpu >= 0)
    frame = frame.select(
        "broker_id",
        "t_ms",
        window,
        F.when(ok, d_cpu).alias("d_cpu"),
        F.when(ok, dt).alias("dt"),
        F.struct("rack", "alive").alias("state"),
    )
    windows = frame.groupBy("broker_id", "window").agg(
        _sum("d_cpu"), _sum("dt"), F.max("t_ms").alias("t_ms"), F.max_by("state", "t_ms").alias("state")
    )
    windows = windows.withColumn("cpu_rate", F.try_divide(F.col("d_cpu"), F.col("dt")))
    return windows.groupBy("broker_id").agg(
        *_time_weighted("cpu_rate", "dt"),
        F.max("t_ms").alias("last_ts_ms"),
        F.max_by("state", "t_ms").alias("state"),
    )


def run_job(partitions: DataFrame, brokers: DataFrame, *, window_seconds: int = DEFAULT_WINDOW_SECONDS) -> JobResult:
    """Aggregate sample rows (already restricted to one cluster and time range) into per-partition rates."""
    if window_seconds <= 0:
        raise ValueError(f"analysis: field 'windowSeconds' must be > 0, got {window_seconds!r}")
    times = partitions.agg(
        F.countDistinct("ts").alias("samples"),
        F.min(F.unix_millis(F.col("ts"))).alias("first"),
        F.max(F.unix_millis(F.col("ts"))).alias("last"),
    ).collect()[0]
    window = _window(int(times["first"] or 0), window_seconds)
    per_partition = _per_partition(_per_window(_partition_intervals(partitions, window)))
    # Partitions missing from the latest sample (deleted) keep null state; the load step drops them.
    state = _latest_state(partitions, int(times["last"] or 0))
    flat = per_partition.join(state, on=["topic", "partition"], how="left")
    broker_rows = (
        _brokers(brokers, window)
        .select("*", F.col("state.rack").alias("rack"), F.col("state.alive").alias("alive"))
        .drop("state")
    )
    return JobResult(
        partitions=flat.toPandas(),
        brokers=broker_rows.toPandas(),
        samples=int(times["samples"] or 0),
        first_ts_ms=int(times["first"] or 0),
        last_ts_ms=int(times["last"] or 0),
    )

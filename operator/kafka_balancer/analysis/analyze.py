"""One analysis run: read a time range of samples, run the Spark job, build the snapshot and the report."""

from __future__ import annotations

from datetime import datetime

from kafka_balancer.analysis.job import run_job
from kafka_balancer.analysis.load import LoadOptions, LoadResult, build_load
from kafka_balancer.analysis.spark import EngineConfig, get_session
from kafka_balancer.analysis.store import SampleStore

# The report lists at most this many corrupt files by name (all are counted).
_CORRUPT_LISTED = 20


def analyze(
    store: SampleStore,
    start: datetime,
    end: datetime,
    options: LoadOptions,
    engine: EngineConfig | None = None,
) -> LoadResult:
    """Samples of ``options.cluster`` with ``start <= ts <= end`` -> snapshot + report."""
    spark = get_session(engine)
    frames = store.read(spark, options.cluster, start, end)
    job = run_job(frames.partitions, frames.brokers, window_seconds=options.window_seconds)
    result = build_load(job, options)
    result.report["filesRead"] = frames.files_read
    result.report["corruptFiles"] = len(frames.corrupt_files)
    result.report["corruptFileNames"] = list(frames.corrupt_files[:_CORRUPT_LISTED])
    result.report["engine"] = {"type": (engine or EngineConfig()).type, "url": (engine or EngineConfig()).url}
    return result

"""The sample store: Parquet files partitioned by cluster and hour, on a local path/PVC or any Spark URL.

Layout (Hive-style, so any engine can prune by cluster and hour)::

    <root>/partitions/cluster=<name>/hour=<YYYY-MM-DDTHH>/part-<epoch ms>-<random>.parquet
    <root>/brokers/cluster=<name>/hour=<YYYY-MM-DDTHH>/part-<epoch ms>-<random>.parquet

The sampler writes with pyarrow (no JVM in the sampling loop); the analysis reads with Spark. Before a
read, every file in the requested hours has its footer checked: unreadable files are skipped and
counted (a half-written file after a crash must not stop the analysis), while a readable file with the
wrong schema is an error that names the file and the column, because it means a writer is broken.
"""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from kafka_balancer.analysis.samples import (
    BROKER_SCHEMA,
    PARTITION_SCHEMA,
    REQUIRED_BROKER_COLUMNS,
    REQUIRED_PARTITION_COLUMNS,
    Sample,
    check_file_schema,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Dataset = Literal["partitions", "brokers"]
DATASETS: Final[tuple[Dataset, ...]] = ("partitions", "brokers")
_HOUR_FORMAT: Final = "%Y-%m-%dT%H"
_SCHEMAS: Final = {"partitions": PARTITION_SCHEMA, "brokers": BROKER_SCHEMA}
_REQUIRED: Final = {"partitions": REQUIRED_PARTITION_COLUMNS, "brokers": REQUIRED_BROKER_COLUMNS}


class StoreError(ValueError):
    """The store cannot be used as asked (unreachable, empty range); the message names the URL."""


def hour_of(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime(_HOUR_FORMAT)


def _spark_type(arrow_type: pa.DataType) -> str:
    if pa.types.is_timestamp(arrow_type):
        return "TIMESTAMP"
    if pa.types.is_list(arrow_type):
        return f"ARRAY<{_spark_type(arrow_type.value_type)}>"
    names = {
        pa.string(): "STRING",
        pa.int32(): "INT",
        pa.int64(): "BIGINT",
        pa.float64(): "DOUBLE",
        pa.bool_(): "BOOLEAN",
    }
    return names[arrow_type]


def spark_ddl(schema: pa.Schema) -> str:
    """The Spark DDL of a sample schema, e.g. ``ts TIMESTAMP, topic STRING, ...``."""
    return ", ".join(f"`{f.name}` {_spark_type(f.type)}" for f in schema)


@dataclass(frozen=True)
class FileListing:
    files: tuple[str, ...]  # Spark-readable URLs of the usable files
    corrupt: tuple[str, ...]  # skipped: not a readable Parquet file


@dataclass(frozen=True)
class SampleFrames:
    partitions: DataFrame
    brokers: DataFrame
    files_read: int
    corrupt_files: tuple[str, ...]


class SampleStore:
    """Samples of many clusters under one root URL (a path, ``file://``, ``s3a://``, ``s3://``, ``gs://``...)."""

    def __init__(self, url: str):
        if not url:
            raise StoreError("samples: field 'url' must not be empty")
        self.url = url
        parsed = urlparse(url)
        try:
            if parsed.scheme in ("", "file"):
                local = Path(parsed.path if parsed.scheme else url).expanduser().resolve()
                self._fs: pafs.FileSystem = pafs.LocalFileSystem()
                self._root = str(local)
                self._spark_root = local.as_uri()
            else:
                # Spark speaks s3a:// (hadoop-aws); pyarrow speaks s3:// to the same bucket.
                arrow_url = url.replace("s3a://", "s3://", 1) if parsed.scheme == "s3a" else url
                self._fs, self._root = pafs.FileSystem.from_uri(arrow_url)
                self._spark_root = url.rstrip("/")
        except (pa.ArrowException, OSError) as err:
            raise StoreError(f"samples: cannot open store {url!r}: {err}") from None
        self._root = self._root.rstrip("/")

    # ----- paths ------------------------------------------------------------------------
    def _dir(self, dataset: Dataset, cluster: str, hour: str | None = None) -> str:
        parts = [self._root, dataset, f"cluster={cluster}"] + ([f"hour={hour}"] if hour else [])
        return posixpath.join(*parts)

    def _spark_url(self, path: str) -> str:
        return self._spark_root + path[len(self._root) :]

    # ----- write ------------------------------------------------------------------------
    def append(self, sample: Sample) -> list[str]:
        """Write one sample (one file per dataset); returns the paths written."""
        hour = hour_of(sample.ts)
        name = f"part-{int(sample.ts.timestamp() * 1000)}-{uuid.uuid4().hex[:8]}.parquet"
        written = []
        for dataset, table in (("partitions", sample.partition_table()), ("brokers", sample.broker_table())):
            directory = self._dir(dataset, sample.cluster, hour)  # type: ignore[arg-type]
            try:
                self._fs.create_dir(directory, recursive=True)
                # Write then rename, so a reader never lists a half-written file under its final name.
                final = posixpath.join(directory, name)
                temporary = posixpath.join(directory, "." + name + ".tmp")
                pq.write_table(table, temporary, filesystem=self._fs, compression="zstd")
                self._fs.move(temporary, final)
            except (pa.ArrowException, OSError) as err:
                raise StoreError(f"samples: cannot write to store {self.url!r}: {err}") from None
            written.append(final)
        return written

    # ----- listing ----------------------------------------------------------------------
    def require_readable(self) -> None:
        """Raise :class:`StoreError` unless the root exists and is a directory (a typo'd URL is not "no samples")."""
        try:
            info = self._fs.get_file_info(self._root)
        except (pa.ArrowException, OSError) as err:
            raise StoreError(f"samples: cannot read store {self.url!r}: {err}") from None
        if info.type == pafs.FileType.NotFound:
            raise StoreError(f"samples: cannot read store {self.url!r}: it does not exist")
        if info.type != pafs.FileType.Directory:
            raise StoreError(f"samples: cannot read store {self.url!r}: it is not a directory")

    def hours(self, dataset: Dataset, cluster: str) -> list[str]:
        """The hour partitions present for ``cluster``, oldest first."""
        selector = pafs.FileSelector(self._dir(dataset, cluster), allow_not_found=True)
        try:
            infos = self._fs.get_file_info(selector)
        except (pa.ArrowException, OSError) as err:
            raise StoreError(f"samples: cannot read store {self.url!r}: {err}") from None
        found = []
        for info in infos:
            base = posixpath.basename(info.path)
            if info.type == pafs.FileType.Directory and base.startswith("hour="):
                found.append(base[len("hour=") :])
        return sorted(found)

    def clusters(self) -> list[str]:
        self.require_readable()
        selector = pafs.FileSelector(posixpath.join(self._root, "partitions"), allow_not_found=True)
        try:
            infos = self._fs.get_file_info(selector)
        except (pa.ArrowException, OSError) as err:
            raise StoreError(f"samples: cannot read store {self.url!r}: {err}") from None
        names = [posixpath.basename(i.path) for i in infos if i.type == pafs.FileType.Directory]
        return sorted(n[len("cluster=") :] for n in names if n.startswith("cluster="))

    def list_files(self, dataset: Dataset, cluster: str, start: datetime, end: datetime) -> FileListing:
        """Usable and corrupt files of the hours overlapping [start, end]; a wrong schema raises."""
        first, last = hour_of(start), hour_of(end)
        good: list[str] = []
        corrupt: list[str] = []
        for hour in self.hours(dataset, cluster):
            if not first <= hour <= last:
                continue
            selector = pafs.FileSelector(self._dir(dataset, cluster, hour))
            try:
                infos = self._fs.get_file_info(selector)
            except (pa.ArrowException, OSError) as err:
                raise StoreError(f"samples: cannot read store {self.url!r}: {err}") from None
            for info in sorted(infos, key=lambda i: i.path):
                base = posixpath.basename(info.path)
                if info.type != pafs.FileType.File or base.startswith((".", "_")):
                    continue  # in-progress writes and Spark/Hadoop markers
                try:
                    found = pq.read_schema(info.path, filesystem=self._fs)
                except (pa.ArrowException, OSError):
                    corrupt.append(self._spark_url(info.path))
                    continue
                check_file_schema(found, _SCHEMAS[dataset], _REQUIRED[dataset], self._spark_url(info.path))
                good.append(self._spark_url(info.path))
        return FileListing(tuple(good), tuple(corrupt))

    # ----- retention --------------------------------------------------------------------
    def apply_retention(self, cluster: str, max_age: timedelta, *, now: datetime | None = None) -> int:
        """Delete whole hours older than ``max_age``; returns how many hour directories went."""
        cutoff = hour_of((now or datetime.now(UTC)) - max_age)
        removed = 0
        for dataset in DATASETS:
            for hour in self.hours(dataset, cluster):
                # An hour is dropped only once all of it is older than the cutoff.
                if hour < cutoff:
                    try:
                        self._fs.delete_dir(self._dir(dataset, cluster, hour))
                    except (pa.ArrowException, OSError) as err:
                        raise StoreError(f"samples: cannot remove old hours of store {self.url!r}: {err}") from None
                    removed += 1
        return removed

    # ----- read with Spark --------------------------------------------------------------
    def read(self, spark: SparkSession, cluster: str, start: datetime, end: datetime) -> SampleFrames:
        """Both datasets of ``cluster`` with ``start <= ts <= end`` as Spark DataFrames."""
        if end <= start:
            raise StoreError(
                f"samples: empty time range: --to {end.isoformat()} is not after --from {start.isoformat()}"
            )
        # Imported here: the sampler writes through this module and should not pay for importing pyspark.
        from pyspark.sql import functions as F  # noqa: N812, PLC0415

        self.require_readable()
        listings = {d: self.list_files(d, cluster, start, end) for d in DATASETS}
        if not listings["partitions"].files:
            known = self.clusters()
            hint = f" (clusters in the store: {', '.join(known) or 'none'})"
            raise StoreError(
                f"samples: no samples of cluster {cluster!r} between {start.isoformat()} and {end.isoformat()}"
                f" in {self.url!r}{hint}"
            )
        frames = {}
        for dataset in DATASETS:
            files: Sequence[str] = listings[dataset].files
            reader = spark.read.schema(spark_ddl(_SCHEMAS[dataset]))
            frame = reader.parquet(*files) if files else spark.createDataFrame([], spark_ddl(_SCHEMAS[dataset]))
            # Epoch milliseconds: unambiguous whatever the time zones of Python, JVM and session.
            lo = F.timestamp_millis(F.lit(int(start.timestamp() * 1000)))
            hi = F.timestamp_millis(F.lit(int(end.timestamp() * 1000)))
            frames[dataset] = frame.where((F.col("ts") >= lo) & (F.col("ts") <= hi))
        corrupt = listings["partitions"].corrupt + listings["brokers"].corrupt
        used = len(listings["partitions"].files) + len(listings["brokers"].files)
        return SampleFrames(frames["partitions"], frames["brokers"], used, corrupt)

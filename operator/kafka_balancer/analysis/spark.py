"""One SparkSession per process, chosen by configuration: in-process local, Spark Connect, or in a driver pod.

Starting a JVM-backed session costs ~15 s, so sessions are cached and reused across analysis runs
(and across tests). Every job in this package uses only the DataFrame API, which is what lets the
same code run in-process (``local[*]``), against a remote cluster over Spark Connect (``sc://``), and
inside a SparkApplication driver submitted by the controller.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Final, Literal

from pyspark.sql import SparkSession

EngineType = Literal["local", "connect", "sparkApplication"]
ENGINE_TYPES: Final = ("local", "connect", "sparkApplication")
DEFAULT_LOCAL_MASTER: Final = "local[*]"
DEFAULT_CONNECT_PORT: Final = 15002


class EngineError(ValueError):
    """Bad engine configuration; the message names the field and the value."""


@dataclass(frozen=True)
class EngineConfig:
    """Where the analysis runs (BalancePolicy ``spec.analysis.engine``).

    * ``local``: an in-process Spark; ``url`` is the master (default ``local[*]``).
    * ``connect``: a remote Spark over Spark Connect; ``url`` is ``sc://host:port``.
    * ``sparkApplication``: this process *is* the driver that spark-submit started in a pod; the master
      comes from spark-submit, so ``url`` is ignored. (The controller builds and submits the manifest,
      see :mod:`kafka_balancer.analysis.spark_application`.)
    """

    type: EngineType = "local"
    url: str | None = None
    # The job sorts every sample row once (by partition and time). 32 shuffle partitions keep each
    # task's sort of a day of a 200k-partition cluster in memory (docs/performance.md), while adaptive
    # execution coalesces them into one or two tasks for small inputs; Spark's default of 200 only adds
    # task overhead on a 2-core pod.
    shuffle_partitions: int = 32
    conf: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.type not in ENGINE_TYPES:
            raise EngineError(f"engine: field 'type' must be one of {', '.join(ENGINE_TYPES)}, got {self.type!r}")
        if self.type == "connect" and not (self.url or "").startswith("sc://"):
            raise EngineError(f"engine: field 'url' must be sc://host:port for type 'connect', got {self.url!r}")
        if self.type == "local" and self.url is not None and not self.url.startswith("local"):
            raise EngineError(
                f"engine: field 'url' must be a local master (local[N]) for type 'local', got {self.url!r}"
            )
        if self.shuffle_partitions < 1:
            raise EngineError(f"engine: field 'shufflePartitions' must be >= 1, got {self.shuffle_partitions!r}")

    @property
    def key(self) -> tuple[str, str]:
        return (self.type, self.url or "")


# SQL settings every engine gets (session-level, so they also travel over Spark Connect).
def _sql_defaults(config: EngineConfig) -> list[tuple[str, str]]:
    return [
        ("spark.sql.session.timeZone", "UTC"),
        ("spark.sql.shuffle.partitions", str(config.shuffle_partitions)),
        # The per-partition avg/p95 aggregation keeps one percentile buffer per Kafka partition. Spark
        # falls back to sorting all its input after 128 keys per task; a few thousand buffers of a day of
        # 5-minute windows fit easily, and skipping that second sort of every window row roughly halved
        # the Spark job in the day benchmark (123 s vs 235 s, docs/performance.md). Beyond 20,000 keys
        # per task it still falls back, which bounds the memory.
        ("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", "20000"),
    ]


_lock = threading.Lock()
_sessions: dict[tuple[str, str], SparkSession] = {}


def _prepare_local_environment() -> None:
    # Loopback only: tests and single-pod operators must not bind or advertise other interfaces,
    # and Python workers must run the interpreter that runs us (the venv), not whatever is on PATH.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable


def _local_session(config: EngineConfig) -> SparkSession:
    if any(key[0] == "connect" for key in _sessions):
        raise EngineError("engine: cannot start an in-process Spark session in a process that uses Spark Connect")
    _prepare_local_environment()
    builder = (
        SparkSession.builder.master(config.url or DEFAULT_LOCAL_MASTER)
        .appName("kafka-balancer-analysis")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Corrupt sample files are skipped by the store after it counted them (see store.py); this
        # is the backstop for a file that turns bad between listing and reading.
        .config("spark.sql.files.ignoreCorruptFiles", "true")
    )
    for key, value in [*_sql_defaults(config), *config.conf]:
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _connect_session(config: EngineConfig) -> SparkSession:
    assert config.url is not None  # checked in EngineConfig
    # pyspark decides per process whether its functions build classic or Connect expressions, so one
    # process runs one kind of engine: refuse clearly instead of failing later inside a query.
    if any(key[0] != "connect" for key in _sessions):
        raise EngineError(
            f"engine: cannot use Spark Connect ({config.url}) in a process that already runs an in-process Spark"
            " session; run the Connect analysis in its own process"
        )
    session = SparkSession.builder.remote(config.url).getOrCreate()
    # Session-level settings travel with the client, so the remote cluster runs the job the same way.
    for key, value in [*_sql_defaults(config), *config.conf]:
        session.conf.set(key, value)
    return session


def _driver_session(config: EngineConfig) -> SparkSession:
    builder = SparkSession.builder.appName("kafka-balancer-analysis")
    for key, value in [*_sql_defaults(config), *config.conf]:
        builder = builder.config(key, value)
    return builder.getOrCreate()


def get_session(config: EngineConfig | None = None) -> SparkSession:
    """The process-wide session for ``config`` (default: local ``local[*]``), started on first use."""
    config = config or EngineConfig()
    with _lock:
        session = _sessions.get(config.key)
        if session is not None:
            return session
        if config.type == "local":
            session = _local_session(config)
        elif config.type == "connect":
            session = _connect_session(config)
        else:
            session = _driver_session(config)
        _sessions[config.key] = session
        return session


def stop_session(config: EngineConfig | None = None) -> None:
    """Stop the cached session for ``config`` (or every cached session when ``config`` is None)."""
    with _lock:
        keys = list(_sessions) if config is None else [config.key]
        for key in keys:
            session = _sessions.pop(key, None)
            if session is not None:
                session.stop()

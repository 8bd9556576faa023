"""Where an execution keeps its resumable state, and how another party asks it to stop.

The executor only needs three calls, so the operator can keep the record in the BalancePolicy
status (it is a small JSON-able dict) and the CLI in a file. ``stop_requested`` is polled once
per executor step; it is how a different process (``kafka-balancer stop``) or the operator
(``spec.paused``) stops a running execution.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kafka_balancer.model import ModelError
from kafka_balancer.model.documents import loads_json


@runtime_checkable
class ExecutionStore(Protocol):
    def load(self) -> dict[str, Any] | None:
        """The last saved record, or None when no execution was ever saved here."""
        ...

    def save(self, record: dict[str, Any]) -> None:
        """Persist the record (an :meth:`ExecutionRecord.to_dict`); must be atomic."""
        ...

    def stop_requested(self) -> bool:
        """True once someone asked the execution to stop."""
        ...


class MemoryExecutionStore:
    """An in-process store: for embedding (tests, the operator's own cache) and for dry runs."""

    def __init__(self, record: dict[str, Any] | None = None) -> None:
        self._lock = threading.Lock()
        self._record = record
        self._stop = threading.Event()
        self.saves = 0

    def load(self) -> dict[str, Any] | None:
        with self._lock:
            return json.loads(json.dumps(self._record)) if self._record is not None else None

    def save(self, record: dict[str, Any]) -> None:
        # A JSON round trip proves the record is JSON-able, as the status store will require.
        text = json.dumps(record)
        with self._lock:
            self._record = json.loads(text)
            self.saves += 1

    def request_stop(self) -> None:
        self._stop.set()

    def stop_requested(self) -> bool:
        return self._stop.is_set()


# A record is a few hundred bytes per move in flight or given up (the task list is packed): 16 MiB
# is far beyond any real one, and bounds what a corrupted or crafted file can make us read.
MAX_STATE_BYTES = 16 << 20


class StateInUseError(ModelError):
    """Another live process holds the state file's lock."""


class ClusterTurns:
    """Executors of one cluster on this host take turns from reading what is in flight to submitting more
    (an exclusive lock on a file named after the cluster, in the temporary directory shared by the
    host's processes): two of them never both take a broker's last free slot. Processes on other hosts,
    and other tools, are counted by the reassignments Kafka lists (executor.scheduler.foreign_counts)."""

    def __init__(self, cluster_id: str, directory: str | os.PathLike[str] | None = None) -> None:
        digest = hashlib.sha256(cluster_id.encode()).hexdigest()[:24]
        base = Path(directory) if directory is not None else Path(tempfile.gettempdir()) / "kafka-balancer-turns"
        self.path = base / f"{digest}.lock"

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        self.path.parent.mkdir(mode=0o1777, exist_ok=True)
        # No symlink followed (the directory is shared); readable and writable by every user, so that
        # executors run by different users on this host take turns too.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the lock


class FileExecutionStore:
    """The record in a JSON file, written atomically (temp file + rename, so a SIGKILL mid-write
    leaves the previous record). A stop request is a separate file, ``<state>.stop``, so the
    stopping process and the executor never write the same file. ``lock`` makes one process the
    only writer: two executors on one state would submit the same moves twice and overwrite each
    other's record."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.stop_path = self.path.with_name(self.path.name + ".stop")
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._lock_fd: int | None = None

    def lock(self, holder: str) -> None:
        """Hold an exclusive lock on ``<state>.lock`` until this process ends (the kernel releases it
        also after a SIGKILL); raises StateInUseError naming the holder when another process has it."""
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 512, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise StateInUseError(
                f"state file {self.path} is in use by {owner}: wait for it to end, or stop it "
                f"(kafka-balancer stop --state {self.path})"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.encode(), 0)
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def locked_by_another(self) -> bool:
        """Does a live process hold the lock (an executor running on this state, on this host)?"""
        try:
            fd = os.open(self.lock_path, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def load(self) -> dict[str, Any] | None:
        try:
            with self.path.open("rb") as file:
                text = file.read(MAX_STATE_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as err:
            raise ModelError(f"state file {self.path}: cannot read: {err.strerror or err}") from None
        if len(text) > MAX_STATE_BYTES:
            raise ModelError(f"state file {self.path}: larger than {MAX_STATE_BYTES >> 20} MiB, not a record we wrote")
        data = loads_json(text, f"state file {self.path}")
        if not isinstance(data, dict):
            raise ModelError(f"state file {self.path}: must hold an object, got {type(data).__name__}")
        return data

    def save(self, record: dict[str, Any]) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with tmp.open("w") as out:
            json.dump(record, out, separators=(",", ":"))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)

    def request_stop(self) -> None:
        self.stop_path.write_text("stop\n")

    def clear_stop(self) -> None:
        self.stop_path.unlink(missing_ok=True)

    def stop_requested(self) -> bool:
        return self.stop_path.exists()

"""Where an execution keeps its resumable state, and how another party asks it to stop.

The executor only needs three calls, so the operator can keep the record in the BalancePolicy
status (it is a small JSON-able dict) and the CLI in a file. ``stop_requested`` is polled once
per executor step; it is how a different process (``kafka-balancer stop``) or the operator
(``spec.paused``) stops a running execution.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kafka_balancer.model import ModelError


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


class FileExecutionStore:
    """The record in a JSON file, written atomically (temp file + rename, so a SIGKILL mid-write
    leaves the previous record). A stop request is a separate file, ``<state>.stop``, so the
    stopping process and the executor never write the same file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.stop_path = self.path.with_name(self.path.name + ".stop")

    def load(self) -> dict[str, Any] | None:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ModelError(f"state file {self.path}: not valid JSON: {err}") from None
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

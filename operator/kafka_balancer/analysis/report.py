"""The analysis report: completeness and statistics that travel beside the snapshot (no pyspark here).

The snapshot schema is a fixed contract with ``additionalProperties: false``, so everything the analysis
knows about the *quality* of its numbers lives in this separate JSON document, written next to the
snapshot as ``<snapshot>.analysis.json``. The planner CLI and the controller read it to refuse a
snapshot whose completeness is below a policy's ``minCompleteness``. This module imports neither
pyspark nor Kafka clients, so the CLI and controller can use it cheaply.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

REPORT_VERSION: Final = 1
REPORT_SUFFIX: Final = ".analysis.json"


class ReportError(ValueError):
    """An analysis report is missing, unreadable or malformed; the message names the file and field."""


class IncompleteSnapshotError(ValueError):
    """The snapshot's completeness is below what the policy requires."""

    def __init__(self, completeness: float, minimum: float, detail: str):
        self.completeness = completeness
        self.minimum = minimum
        super().__init__(
            f"snapshot completeness {completeness:.3f} is below the policy's goals.minCompleteness {minimum:.3f}: "
            f"{detail}. Sample for longer (or lower minCompleteness) before planning."
        )


def report_path(snapshot_path: str | Path) -> Path:
    """Where the report of ``snapshot_path`` lives: ``snapshot.json`` -> ``snapshot.json.analysis.json``."""
    path = Path(snapshot_path)
    return path.with_name(path.name + REPORT_SUFFIX)


def write_report(report: dict[str, Any], snapshot_path: str | Path) -> Path:
    target = report_path(snapshot_path)
    target.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return target


def load_report(path: str | Path) -> dict[str, Any]:
    """Read and check a report (the report file itself, not the snapshot)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise ReportError(f"analysis report {str(path)!r}: cannot read: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise ReportError(f"analysis report {str(path)!r}: not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise ReportError(f"analysis report {str(path)!r}: must be an object")
    if data.get("version") != REPORT_VERSION:
        raise ReportError(
            f"analysis report {str(path)!r}: field 'version' must be {REPORT_VERSION}, got {data.get('version')!r}"
        )
    completeness = data.get("completeness")
    if isinstance(completeness, bool) or not isinstance(completeness, int | float) or not 0 <= completeness <= 1:
        raise ReportError(f"analysis report {str(path)!r}: field 'completeness' must be in 0..1, got {completeness!r}")
    return data


def check_completeness(report: dict[str, Any], min_completeness: float) -> None:
    """Raise :class:`IncompleteSnapshotError` when the report's completeness is below ``min_completeness``."""
    completeness = float(report["completeness"])
    if completeness + 1e-12 >= min_completeness:
        return
    total = report.get("partitionsTotal", "?")
    complete = report.get("partitionsComplete", "?")
    need = report.get("minWindows", 1)
    window = report.get("windowSeconds", "?")
    detail = (
        f"{complete} of {total} partitions have rates in at least {need} window(s) of {window} s"
        f" ({report.get('samples', '?')} samples from {report.get('from', '?')} to {report.get('to', '?')})"
    )
    raise IncompleteSnapshotError(completeness, min_completeness, detail)

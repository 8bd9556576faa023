"""The last analysis of each policy, kept beside its samples: what the operator measured and planned on.

``<store>/_analyses/<namespace>.<policy>.json`` is the snapshot and ``<...>.json.analysis.json`` its report
(the two files `kafka-balancer analyze --output` writes), replaced after every analysis of a store that is a
local path or a file:// URL (Spark and the sampler skip folders whose name starts with ``_``). A person can
read what a proposal was made from; `kafka-balancer demo` shows its tables from it rather than analysing
the samples again in a Spark session of its own.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from kafka_balancer.analysis.report import write_report

log = logging.getLogger(__name__)


def last_analysis_path(store_url: str, namespace: str, name: str) -> Path | None:
    """Where the last analysis of policy ``namespace/name`` is kept; None for a store that is not local."""
    parsed = urlparse(store_url)
    if parsed.scheme not in ("", "file"):
        return None
    return Path(parsed.path if parsed.scheme else store_url) / "_analyses" / f"{namespace}.{name}.json"


def keep(store_url: str, key: tuple[str, str], snapshot: dict[str, Any], report: dict[str, Any]) -> None:
    """Replace the policy's last analysis (the snapshot at once, never half written); a store the operator
    cannot write to only loses the copy, never the analysis."""
    path = last_analysis_path(store_url, *key)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(json.dumps(snapshot, indent=1) + "\n", encoding="utf-8")
        os.replace(partial, path)
        write_report(report, path)
    except OSError as err:
        log.warning("cannot keep the last analysis of %s/%s at %s: %s", *key, path, err)

"""The report's per-log-directory table (JBOD): what each directory holds before and after, against
its volume's size and its broker's own average; shown only when the snapshot names directories."""

from __future__ import annotations

from html import escape

from kafka_balancer.model import ClusterModel
from kafka_balancer.model.log_dir_usage import DirLimits, LogDirChange, LogDirUsage, log_dir_changes
from kafka_balancer.report.svg import human

# The row of a broker's replicas in no directory it reports.
NO_DIRECTORY = "not in a known directory"
_SIDES = ("before", "after")


def _percent(value: float | None, *, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def _cell(key: str, value: float | None, text: str, flagged: bool = False) -> str:
    data = "" if value is None else f' data-value="{value!r}"'
    mark = ' class="flag"' if flagged else ""
    return f'<td data-key="{key}"{data}{mark}>{escape(text)}</td>'


def _flags(usage: LogDirUsage | None, limits: DirLimits) -> list[str]:
    if usage is None:
        return []
    flags = ["over capacity"] if limits.over_capacity(usage) else []
    return flags + (["outside band"] if limits.out_of_band(usage) else [])


def _row(change: LogDirChange, limits: DirLimits) -> str:
    current = change.current
    cells = [
        f'<td class="l">{change.broker_id}</td>',
        f'<td class="l">{escape(change.path or NO_DIRECTORY)}</td>',
        f'<td class="l">{"cordoned" if current.cordoned else ""}</td>',
        _cell("size", current.total_bytes, "-" if current.total_bytes is None else human(current.total_bytes, "bytes")),
    ]
    sides = list(zip(_SIDES, (change.before, change.after), strict=True))
    for side, usage in sides:
        held = None if usage is None else usage.bytes
        cells.append(_cell(f"bytes-{side}", held, "-" if held is None else human(held, "bytes")))
    for side, usage in sides:
        share = None if usage is None else usage.share
        cells.append(_cell(f"share-{side}", share, _percent(share)))
    for side, usage in sides:
        utilisation = None if usage is None else usage.utilisation
        over = usage is not None and limits.over_capacity(usage)
        cells.append(_cell(f"utilisation-{side}", utilisation, _percent(utilisation), over))
    for side, usage in sides:
        deviation = None if usage is None or usage.ratio is None else usage.ratio - 1
        outside = usage is not None and limits.out_of_band(usage)
        cells.append(_cell(f"deviation-{side}", deviation, _percent(deviation, signed=True), outside))
    flags = "; ".join(f"{side}: {', '.join(f)}" for side, usage in sides if (f := _flags(usage, limits)))
    cells.append(f'<td class="l flags">{escape(flags)}</td>')
    path = escape(change.path or "", quote=True)
    return f'<tr data-broker="{change.broker_id}" data-log-dir="{path}">{"".join(cells)}</tr>'


def log_dir_table(before: ClusterModel, after: ClusterModel, limits: DirLimits) -> str:
    """The section as HTML; empty when neither side names a log directory."""
    changes = log_dir_changes(before, after)
    if not changes:
        return ""
    pairs = "<th>before</th><th>after</th>" * 4
    band = limits.balance_threshold - 1
    return (
        "<h2>Per log directory</h2>"
        f'<p class="sub">Bytes: the replicas in the directory. Utilisation: bytes over the volume\'s size, flagged '
        f"above capacityThreshold {limits.capacity_threshold:.0%}. Deviation: from the broker's own average over "
        f"its directories, flagged outside ±{band:.0%} (balanceThreshold {limits.balance_threshold:.2f}). "
        f'"{NO_DIRECTORY}": replicas a broker receives with "any", or whose directory it did not report.</p>'
        '<table class="log-dirs"><tr><th class="l" rowspan="2">Broker</th><th class="l" rowspan="2">Directory</th>'
        '<th class="l" rowspan="2">Cordoned</th><th rowspan="2">Size</th><th colspan="2">Bytes</th>'
        '<th colspan="2">Share of broker</th><th colspan="2">Utilisation</th><th colspan="2">Deviation</th>'
        f'<th class="l" rowspan="2">Flagged</th></tr><tr>{pairs}</tr>'
        + "".join(_row(change, limits) for change in changes)
        + "</table>"
    )

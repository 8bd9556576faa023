"""A self-contained HTML report of one balancing run: before/after charts per broker and a table.

Everything is inline (CSS and SVG, no scripts, no external URLs) so the file can be attached to a
ticket or opened from a CI artefact without network access.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Mapping
from html import escape
from pathlib import Path
from typing import Any, Final

from kafka_balancer.model import ClusterModel
from kafka_balancer.model.log_dir_usage import DirLimits
from kafka_balancer.report.loads import METRICS, BrokerLoads, broker_loads
from kafka_balancer.report.log_dirs import log_dir_table
from kafka_balancer.report.svg import AFTER_COLOUR, BEFORE_COLOUR, BarChart, human

# Summary keys shown as headline figures, with the unit used to print them. Other scalar entries
# of the summary are listed below the headline, so a richer summary needs no change here.
HEADLINE: tuple[tuple[str, str, str], ...] = (
    ("moves", "Replica moves", "count"),
    ("bytesMoved", "Bytes moved", "bytes"),
    ("bytesToMove", "Bytes to move", "bytes"),
    ("leaderChanges", "Leader changes", "count"),
    ("durationSeconds", "Time", "seconds"),
    ("balancednessBefore", "Balancedness before", "score"),
    ("balancednessAfter", "Balancedness after", "score"),
)

_CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; }
.sub { color: #666; margin-top: 0; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 16px 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 10px 14px; min-width: 130px; }
.card .v { font-size: 20px; font-weight: bold; }
.card .k { color: #666; font-size: 12px; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
table { border-collapse: collapse; margin: 12px 0; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; }
th { background: #f4f4f4; }
td.l, th.l { text-align: left; }
.dead { color: #b00; }
.cordoned { color: #a60; }
td.flag { color: #b00; font-weight: bold; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
"""


def _flatten(summary: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Scalar entries of a nested summary as dotted keys (lists of scalars are joined)."""
    out: list[tuple[str, Any]] = []
    for key, value in summary.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.extend(_flatten(value, f"{name}."))
        elif isinstance(value, list):
            if all(not isinstance(v, Mapping | list) for v in value):
                out.append((name, ", ".join(str(v) for v in value)))
        else:
            out.append((name, value))
    return out


def _format(value: Any, unit: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if unit == "seconds":
        minutes, seconds = divmod(float(value), 60)
        if minutes >= 60:  # long executions: seconds no longer matter
            return f"{int(minutes // 60)} h {int(minutes % 60)} min"
        return f"{int(minutes)} min {seconds:.0f} s" if minutes else f"{seconds:.1f} s"
    if unit == "score":
        return f"{float(value):.1f}"
    return human(float(value), unit)


def _headline(summary: Mapping[str, Any]) -> tuple[str, set[str]]:
    flat = dict(_flatten(summary))
    cards, used = [], set()
    for key, title, unit in HEADLINE:
        if key in flat:
            used.add(key)
            cards.append(
                f'<div class="card" data-key="{escape(key)}"><div class="v">{escape(_format(flat[key], unit))}</div>'
                f'<div class="k">{escape(title)}</div></div>'
            )
    return '<div class="cards">' + "".join(cards) + "</div>", used


def _stat(value: Any) -> str:
    """A goal statistic: a number, or a small mapping of numbers (e.g. max/avg per resource)."""
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {_stat(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:.3g}"
    return "-" if value is None else str(value)


def _goals_table(summary: Mapping[str, Any]) -> str:
    """Per-goal before/after from the planner's summary (``goals``: name -> holdsBefore/After, before/after)."""
    goals = summary.get("goals")
    if not isinstance(goals, Mapping) or not goals:
        return ""
    rows = []
    for name, goal in goals.items():
        if not isinstance(goal, Mapping):
            continue
        marks = [
            "-" if goal.get(k) is None else ("holds" if goal.get(k) else "violated")
            for k in ("holdsBefore", "holdsAfter")
        ]
        rows.append(
            f'<tr data-goal="{escape(str(name))}"><td class="l">{escape(str(name))}</td>'
            f"<td>{escape(marks[0])}</td><td>{escape(marks[1])}</td>"
            f'<td class="l">{escape(_stat(goal.get("before")))}</td>'
            f'<td class="l">{escape(_stat(goal.get("after")))}</td></tr>'
        )
    return (
        '<h2>Goals</h2><table class="goals"><tr><th class="l">Goal</th><th>before</th><th>after</th>'
        '<th class="l">statistic before</th><th class="l">statistic after</th></tr>' + "".join(rows) + "</table>"
    )


def _aligned(before: BrokerLoads, after: BrokerLoads) -> tuple[list[int], dict[int, int], dict[int, int]]:
    """Broker ids of both sides (a broker added or removed by the run shows as zero on the other)."""
    ids = sorted(set(before.broker_ids) | set(after.broker_ids))
    return ids, {b: i for i, b in enumerate(before.broker_ids)}, {b: i for i, b in enumerate(after.broker_ids)}


def _series(loads: BrokerLoads, position: dict[int, int], ids: list[int], key: str) -> list[float]:
    values = loads.metric(key)
    return [values[position[b]] if b in position else 0.0 for b in ids]


def _spread(values: list[float]) -> str:
    """max / mean: 1.00 is perfectly even; the planner's balance threshold is on this scale."""
    mean = sum(values) / len(values) if values else 0.0
    return "n/a" if mean == 0 else f"{max(values) / mean:.2f}"


def _cordon_note(model: ClusterModel, broker_id: int) -> str:
    """``(cordoned)`` for a broker with every log directory cordoned (it takes no new replica),
    ``(k of n log dirs cordoned)`` for one with some (KIP-1066); nothing otherwise."""
    try:
        dirs = model.log_dirs(model.broker_index(broker_id))
    except KeyError:
        return ""
    cordoned = sum(d.cordoned for d in dirs)
    if not cordoned:
        return ""
    text = "cordoned" if cordoned == len(dirs) else f"{cordoned} of {len(dirs)} log dirs cordoned"
    return f' <span class="cordoned">({text})</span>'


def render_report(
    before: ClusterModel,
    after: ClusterModel,
    summary: Mapping[str, Any],
    *,
    title: str = "kafka-balancer report",
    limits: DirLimits | None = None,
) -> str:
    """The report as one HTML document (a string); ``summary`` is the proposal/run summary JSON,
    ``limits`` the thresholds the per-log-directory table flags against (the policy defaults if None)."""
    loads_before, loads_after = broker_loads(before), broker_loads(after)
    ids, pos_before, pos_after = _aligned(loads_before, loads_after)
    racks = {b: loads_after.racks[i] for b, i in pos_after.items()} | {
        b: loads_before.racks[i] for b, i in pos_before.items() if b not in pos_after
    }
    alive = {b: loads_after.alive[i] for b, i in pos_after.items()}
    labels = [f"{b}" if racks.get(b) is None else f"{b} ({racks[b]})" for b in ids]

    charts, spread_rows = [], []
    for key, name, unit in METRICS:
        series_before = _series(loads_before, pos_before, ids, key)
        series_after = _series(loads_after, pos_after, ids, key)
        charts.append(BarChart(f"{name} per broker", unit, labels, series_before, series_after).render())
        spread_rows.append(
            f'<tr><td class="l">{escape(name)}</td><td>{_spread(series_before)}</td><td>{_spread(series_after)}</td>'
            f"<td>{escape(human(max(series_before, default=0.0), unit))}</td>"
            f"<td>{escape(human(max(series_after, default=0.0), unit))}</td></tr>"
        )

    head_cells = "".join(f'<th colspan="2">{escape(name)}</th>' for _, name, _ in METRICS)
    sub_cells = "<th>before</th><th>after</th>" * len(METRICS)
    body_rows = []
    for b, label in zip(ids, labels, strict=True):
        cells = []
        for key, _, unit in METRICS:
            for loads, position in ((loads_before, pos_before), (loads_after, pos_after)):
                value = loads.metric(key)[position[b]] if b in position else None
                cells.append("<td>-</td>" if value is None else f"<td>{escape(human(value, unit))}</td>")
        state = "" if alive.get(b, True) else ' <span class="dead">(offline)</span>'
        state += _cordon_note(after, b)
        body_rows.append(f'<tr data-broker="{b}"><td class="l">{escape(label)}{state}</td>{"".join(cells)}</tr>')

    headline, used = _headline(summary)
    details = "".join(
        f'<tr><td class="l">{escape(k)}</td><td class="l">{escape(str(v))}</td></tr>'
        for k, v in _flatten(summary)
        if k not in used and not k.startswith("goals.")  # goals have their own table
    )
    cluster = before.cluster_name or after.cluster_name or "cluster"
    captured = f" · snapshot {escape(before.captured_at)}" if before.captured_at else ""
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{_CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        f'<p class="sub">{escape(cluster)}: {len(ids)} brokers, {before.num_partitions} partitions, '
        f"{before.num_replicas} replicas{captured}</p>"
        f"{headline}"
        f'<p><span class="swatch" style="background:{BEFORE_COLOUR}"></span>before '
        f'<span class="swatch" style="background:{AFTER_COLOUR}"></span>after</p>'
        f'<div class="charts">{"".join(charts)}</div>'
        "<h2>Spread (max / mean; 1.00 is perfectly even)</h2>"
        '<table class="spread"><tr><th class="l">Resource</th><th>before</th><th>after</th>'
        "<th>busiest before</th><th>busiest after</th></tr>"
        f"{''.join(spread_rows)}</table>"
        "<h2>Per broker</h2>"
        f'<table class="brokers"><tr><th class="l" rowspan="2">Broker (rack)</th>{head_cells}</tr>'
        f"<tr>{sub_cells}</tr>{''.join(body_rows)}</table>"
        + log_dir_table(before, after, limits or DirLimits())
        + _goals_table(summary)
        + (f'<h2>Summary</h2><table class="summary">{details}</table>' if details else "")
        + "</body></html>\n"
    )


_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
)


def _regular_target(target: Path) -> Path:
    """The regular file (or new path) to write for ``target``: OSError naming why not. A symbolic link is
    followed only to a file this user owns: the link stays, and nobody else's file is replaced."""
    try:
        found = target.lstat()
    except FileNotFoundError:
        return target
    if stat.S_ISLNK(found.st_mode):
        real = target.resolve()
        try:
            found = real.stat()
        except FileNotFoundError:
            raise OSError(errno.ENOENT, f"a symbolic link to {real}, which does not exist") from None
        if found.st_uid != os.geteuid():
            raise OSError(errno.EPERM, f"a symbolic link to {real}, owned by uid {found.st_uid}, not this user")
        target = real
    kind = next((name for test, name in _KINDS if test(found.st_mode)), None)
    if kind is not None or not stat.S_ISREG(found.st_mode):
        raise OSError(
            errno.EINVAL, f"not a regular file ({kind or 'a special file'}); name a regular file or a new path"
        )
    return target


def write_report(
    path: str | os.PathLike[str],
    before: ClusterModel,
    after: ClusterModel,
    summary: Mapping[str, Any],
    *,
    title: str = "kafka-balancer report",
    limits: DirLimits | None = None,
) -> Path:
    """Write the report atomically (a reader never sees half a file); returns the path written.

    The rename puts a regular file where the path was, so only a regular file or a new path is written
    over, or what a symbolic link names when this user owns it (see :func:`_regular_target`)."""
    target = _regular_target(Path(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    text = render_report(before, after, summary, title=title, limits=limits)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target

"""Inline SVG bar charts: before/after per broker, drawn with plain text so the report needs no
JavaScript, no web fonts and no network to open."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

BEFORE_COLOUR = "#8da0cb"
AFTER_COLOUR = "#fc8d62"
MEAN_COLOUR = "#444444"

_UNITS = {
    "bytes": ("B", "KB", "MB", "GB", "TB", "PB"),
    "bytes/s": ("B/s", "KB/s", "MB/s", "GB/s", "TB/s", "PB/s"),
}


def human(value: float, unit: str) -> str:
    """A short label: 1.5 GB, 12.3 MB/s, 1,204 (counts stay exact)."""
    if unit not in _UNITS:
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}".rstrip("0").rstrip(".")
    steps = _UNITS[unit]
    scaled, step = float(value), 0
    while abs(scaled) >= 1000 and step < len(steps) - 1:
        scaled /= 1000
        step += 1
    if step == 0 and not scaled.is_integer():
        return f"{scaled:.1f} {steps[0]}"  # ticks of a small range: 0.5 B/s, not a second "0 B/s"
    return f"{scaled:.0f} {steps[step]}" if step == 0 else f"{scaled:.1f} {steps[step]}"


def _nice_ceiling(value: float) -> float:
    """The smallest 1/2/2.5/5 x 10^n at or above ``value`` so axis ticks are round numbers."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power


@dataclass(frozen=True)
class BarChart:
    """Grouped bars: one group per broker, a before bar and an after bar in each."""

    title: str
    unit: str
    labels: Sequence[str]
    before: Sequence[float]
    after: Sequence[float]
    width: int = 640
    height: int = 300

    def __post_init__(self) -> None:
        if not len(self.labels) == len(self.before) == len(self.after):
            raise ValueError(
                f"chart {self.title!r}: labels, before and after must have one entry per broker, "
                f"got {len(self.labels)}, {len(self.before)}, {len(self.after)}"
            )

    def render(self) -> str:
        left, right, top, bottom = 78, 12, 34, 46
        plot_w = self.width - left - right
        plot_h = self.height - top - bottom
        highest = max([*self.before, *self.after, 0.0])
        # All zero (e.g. traffic of a snapshot read without samples): say so instead of a made-up scale.
        empty = highest <= 0
        top_value = _nice_ceiling(highest)
        groups = max(len(self.labels), 1)
        group_w = plot_w / groups
        bar_w = max(group_w * 0.36, 1.0)

        def y_of(value: float) -> float:
            return top + plot_h - plot_h * (value / top_value)

        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{self.width}" '
            f'height="{self.height}" viewBox="0 0 {self.width} {self.height}" '
            f'aria-label="{escape(self.title)}: before and after per broker">',
            f'<text x="{left}" y="20" class="chart-title" font-size="15" font-weight="bold">'
            f"{escape(self.title)}</text>",
        ]
        if empty:
            parts.append(
                f'<text class="no-data" x="{left + plot_w / 2:.1f}" y="{top + plot_h / 2:.1f}" font-size="13" '
                f'text-anchor="middle" fill="#666666">no data: every broker reports 0</text>'
            )
        for i in range(1 if empty else 5):  # horizontal grid with round tick labels
            value = top_value * i / 4
            y = y_of(value)
            parts.append(
                f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#dddddd" stroke-width="1"/>'
            )
            parts.append(
                f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">'
                f"{escape(human(value, self.unit))}</text>"
            )
        for i, label in enumerate(self.labels):
            x0 = left + i * group_w + (group_w - 2 * bar_w) / 2
            for j, (series, value, colour) in enumerate(
                (("before", self.before[i], BEFORE_COLOUR), ("after", self.after[i], AFTER_COLOUR))
            ):
                y = y_of(value)
                parts.append(
                    f'<rect class="bar {series}" data-broker="{escape(label)}" data-value="{value!r}" '
                    f'x="{x0 + j * bar_w:.1f}" y="{y:.1f}" width="{bar_w:.1f}" '
                    f'height="{top + plot_h - y:.1f}" fill="{colour}">'
                    f"<title>{escape(label)} {series}: {escape(human(value, self.unit))}</title></rect>"
                )
            parts.append(
                f'<text x="{left + (i + 0.5) * group_w:.1f}" y="{top + plot_h + 16}" font-size="11" '
                f'text-anchor="middle">{escape(label)}</text>'
            )
        # The mean after balancing is the level every broker is pushed towards.
        if self.after:
            mean = sum(self.after) / len(self.after)
            y = y_of(mean)
            parts.append(
                f'<line class="mean" x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{MEAN_COLOUR}" stroke-dasharray="5,4" stroke-width="1.2"/>'
            )
        legend_y = self.height - 10
        parts.append(
            f'<rect x="{left}" y="{legend_y - 9}" width="10" height="10" fill="{BEFORE_COLOUR}"/>'
            f'<text x="{left + 14}" y="{legend_y}" font-size="11">before</text>'
            f'<rect x="{left + 70}" y="{legend_y - 9}" width="10" height="10" fill="{AFTER_COLOUR}"/>'
            f'<text x="{left + 84}" y="{legend_y}" font-size="11">after</text>'
            f'<line x1="{left + 130}" x2="{left + 150}" y1="{legend_y - 4}" y2="{legend_y - 4}" '
            f'stroke="{MEAN_COLOUR}" stroke-dasharray="5,4"/>'
            f'<text x="{left + 154}" y="{legend_y}" font-size="11">mean after</text>'
        )
        parts.append(
            f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#888888"/>'
            f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#888888"/>'
        )
        parts.append("</svg>")
        return "".join(parts)

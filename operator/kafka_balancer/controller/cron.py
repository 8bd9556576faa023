"""Five-field cron expressions (UTC) for `triggers.schedule` and maintenance windows.

Small on purpose: minute hour day-of-month month day-of-week, each `*`, `a`, `a-b`, lists and `/step`;
day-of-week 0-7 (0 and 7 are Sunday). As in Vixie cron, when both day fields are restricted a day
matches if either does. No names (JAN, MON) and no seconds.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Final

from kafka_balancer.model.policy.balance_policy import MaintenanceWindow

_FIELDS: Final = (("minute", 0, 59), ("hour", 0, 23), ("day-of-month", 1, 31), ("month", 1, 12), ("day-of-week", 0, 7))
# A schedule that has not fired for longer than this fires once, not once per missed minute.
MAX_CATCH_UP: Final = dt.timedelta(days=1)


class CronError(ValueError):
    """An expression that does not parse; the message names the field and the value."""


def _field(text: str, name: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if base == "*":
                start, end = low, high
            elif "-" in base:
                a, b = base.split("-", 1)
                start, end = int(a), int(b)
            else:
                start = int(base)
                end = high if step_text else start
        except ValueError:
            raise CronError(f"cron {name} field: '{part}' is not a number, range or */step") from None
        if step < 1 or start < low or end > high or start > end:
            raise CronError(f"cron {name} field: '{part}' is outside {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    day_restricted: bool
    weekday_restricted: bool

    @classmethod
    def parse(cls, expression: str) -> Cron:
        parts = expression.split()
        if len(parts) != len(_FIELDS):
            raise CronError(f"cron '{expression}': expected 5 fields (minute hour day month weekday), got {len(parts)}")
        sets = [_field(p, name, low, high) for p, (name, low, high) in zip(parts, _FIELDS, strict=True)]
        weekdays = frozenset(d % 7 for d in sets[4])
        # As in Vixie cron, a day field starting with "*" (also "*/2") makes the day fields combine with AND, not OR.
        return cls(
            sets[0], sets[1], sets[2], sets[3], weekdays, not parts[2].startswith("*"), not parts[4].startswith("*")
        )

    def matches(self, moment: dt.datetime) -> bool:
        if moment.minute not in self.minutes or moment.hour not in self.hours or moment.month not in self.months:
            return False
        day_ok = moment.day in self.days
        weekday_ok = (moment.isoweekday() % 7) in self.weekdays
        if self.day_restricted and self.weekday_restricted:
            return day_ok or weekday_ok
        return day_ok and weekday_ok

    def fired_between(
        self, after: dt.datetime, until: dt.datetime, look_back: dt.timedelta = MAX_CATCH_UP
    ) -> dt.datetime | None:
        """The latest matching minute in (after, until], or None. Looks back at most ``look_back``."""
        start = max(after, until - look_back)
        moment = until.replace(second=0, microsecond=0)
        while moment > start:
            if self.matches(moment):
                return moment
            moment -= dt.timedelta(minutes=1)
        return None


def _window_start_cron(window: MaintenanceWindow) -> Cron:
    start = window.start.strip()
    if ":" in start and len(start.split()) == 1:
        hour, minute = start.split(":")
        return Cron.parse(f"{int(minute)} {int(hour)} * * *")
    return Cron.parse(start)


def in_maintenance_window(windows: list[MaintenanceWindow], now: dt.datetime) -> bool:
    """True when there are no windows, or ``now`` is inside one (a window that started at most duration ago)."""
    if not windows:
        return True
    for window in windows:
        cron = _window_start_cron(window)
        length = dt.timedelta(minutes=window.duration_minutes)
        if cron.fired_between(now - length, now, look_back=length) is not None:
            return True
    return False


def validate(expression: str) -> None:
    """Raise CronError if ``expression`` does not parse."""
    Cron.parse(expression)

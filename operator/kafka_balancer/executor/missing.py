"""Pending moves waiting on a target broker the metadata does not list (down, never started, removed).

Such a move waits for its broker like any blocked move (blocked_after_seconds may give it up). Once
the broker has been missing for stuckAfterSeconds the move is also stuck: listed as such, with the
broker and how long it has been missing as its reason, until the broker registers or the move ends.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass
class _Missing:
    broker: int
    since: float
    announced: bool = False  # logged once when it became stuck


class MissingTargets:
    """By task index: the target broker each pending move waits for, and since when."""

    def __init__(self, stuck_after_seconds: float) -> None:
        self.stuck_after = stuck_after_seconds
        self._by_task: dict[int, _Missing] = {}

    def note(self, index: int, broker: int | None, now: float, *, name: str) -> None:
        """This poll's answer for pending move ``index`` (``name`` for the log): the target broker it
        waits for, or None when it waits for none."""
        if broker is None:
            self._by_task.pop(index, None)
            return
        seen = self._by_task.get(index)
        if seen is None or seen.broker != broker:
            seen = self._by_task[index] = _Missing(broker, now)
        if not seen.announced and now - seen.since >= self.stuck_after:
            seen.announced = True
            log.warning("%s: target broker %d missing from the metadata for %gs: stuck", name, broker, self.stuck_after)

    def stuck(self, now: float) -> set[int]:
        """The moves whose broker has been missing for stuckAfterSeconds."""
        return {i for i, m in self._by_task.items() if now - m.since >= self.stuck_after}

    def reason(self, index: int, now: float) -> str | None:
        """Why move ``index`` is stuck, or None when it is not."""
        seen = self._by_task.get(index)
        if seen is None or now - seen.since < self.stuck_after:
            return None
        return (
            f"target broker {seen.broker} has been missing from the metadata for {now - seen.since:.0f} s "
            f"(stuckAfterSeconds {self.stuck_after:g})"
        )

"""Planner test helpers: the synthetic cluster generator lives in bench/, importable from the repo root."""

import sys
import time
from pathlib import Path

import pytest

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from kafka_balancer.planner import pipeline  # noqa: E402  (after the path above, as the tests import bench)
from kafka_balancer.planner.base.budget import Budget  # noqa: E402


@pytest.fixture(autouse=True)
def _budget_in_cpu_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' plans count goals.maxPlanningSeconds in this process's CPU seconds, not wall seconds:
    on a machine busy with other work (load average 40-60 on the 2-core machine) a plan of a few CPU
    seconds took over a minute of wall time, was cut short by the default 60 s budget and was then not
    the plan the test judged (a group planned alone differed from the whole cluster's, a replan from
    the plan). The budget's own tests (test_planner_time_budget.py) set their clocks themselves."""
    monkeypatch.setattr(pipeline, "Budget", lambda seconds: Budget(seconds, clock=time.process_time))

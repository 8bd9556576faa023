"""The controller's pure decisions: cron schedules and maintenance windows, approval, when to propose."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from kafka_balancer.controller.approval import decide
from kafka_balancer.controller.cron import Cron, CronError, in_maintenance_window
from kafka_balancer.controller.triggers import Observed, Recorded, planning_fingerprint, why_propose
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec, MaintenanceWindow
from kafka_balancer.model.policy.parsing import parse_balance_policy_spec

UTC = dt.UTC
MONDAY_0300 = dt.datetime(2026, 11, 16, 3, 0, tzinfo=UTC)  # a Monday


def _spec(**fields: Any) -> BalancePolicySpec:
    return parse_balance_policy_spec({"cluster": {"bootstrapServers": "k:9092"}, **fields})


# ----- cron ---------------------------------------------------------------------------------------


def test_cron_fields_ranges_lists_and_steps() -> None:
    cron = Cron.parse("*/15 3,4 * * 1-5")
    assert cron.matches(MONDAY_0300)
    assert cron.matches(MONDAY_0300.replace(hour=4, minute=45))
    assert not cron.matches(MONDAY_0300.replace(minute=5))
    assert not cron.matches(MONDAY_0300 + dt.timedelta(days=6))  # Sunday
    assert Cron.parse("0 3 * * 7").matches(MONDAY_0300 - dt.timedelta(days=1))  # 7 is Sunday too


def test_cron_day_fields_follow_vixie_cron() -> None:
    # Both restricted: either matches (the 1st of the month OR a Monday).
    both = Cron.parse("0 3 1 * 1")
    assert both.matches(MONDAY_0300)
    assert both.matches(dt.datetime(2026, 12, 1, 3, 0, tzinfo=UTC))  # a Tuesday, but the 1st
    # A day-of-month starting with "*" (here "*/2": odd days) combines with AND: odd-dated Mondays only.
    odd_mondays = Cron.parse("0 3 */2 * 1")
    assert not odd_mondays.matches(MONDAY_0300)  # the 16th
    assert odd_mondays.matches(MONDAY_0300 + dt.timedelta(days=7))  # the 23rd


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("61 * * * *", "minute field: '61' is outside 0-59"),
        ("* 24 * * *", "hour field"),
        ("* * 0 * *", "day-of-month field"),
        ("* * * JAN *", "month field: 'JAN' is not a number"),
        ("* * * *", "expected 5 fields"),
        ("*/0 * * * *", "minute field"),
    ],
)
def test_bad_cron_names_the_field(expression: str, message: str) -> None:
    with pytest.raises(CronError, match=message):
        Cron.parse(expression)


def test_schedule_fires_once_for_the_latest_missed_minute() -> None:
    cron = Cron.parse("0 * * * *")
    after = MONDAY_0300 - dt.timedelta(hours=5, minutes=30)
    assert cron.fired_between(after, MONDAY_0300 + dt.timedelta(minutes=20)) == MONDAY_0300
    assert cron.fired_between(MONDAY_0300, MONDAY_0300 + dt.timedelta(minutes=59)) is None


def test_maintenance_windows() -> None:
    nightly = [MaintenanceWindow(start="02:30", duration_minutes=60)]
    assert in_maintenance_window(nightly, MONDAY_0300)
    assert not in_maintenance_window(nightly, MONDAY_0300.replace(hour=3, minute=31))
    assert in_maintenance_window([], MONDAY_0300)  # no windows: any time
    # A weekend window of two days (Saturday 00:00 for 48 h) is open on Sunday evening, closed on Monday.
    weekend = [MaintenanceWindow(start="0 0 * * 6", duration_minutes=2 * 24 * 60)]
    assert in_maintenance_window(weekend, MONDAY_0300 - dt.timedelta(hours=8))
    assert not in_maintenance_window(weekend, MONDAY_0300)


# ----- approval -----------------------------------------------------------------------------------


def _decide(spec: BalancePolicySpec, proposal: str | None = "abcd1234abcd1234", **kw: Any) -> Any:
    args: dict[str, Any] = {"proposal_empty": False, "executed_ids": frozenset(), "now": MONDAY_0300, **kw}
    return decide(spec, proposal, **args)


def test_manual_executes_only_the_approved_current_proposal() -> None:
    waiting = _decide(_spec(mode="Manual"))
    assert (waiting.execute, waiting.reason, waiting.stalled) == (False, "AwaitingApproval", False)
    assert "abcd1234abcd1234" in waiting.message
    stale = _decide(_spec(mode="Manual", approvedProposal="ffff0000ffff0000"))
    assert (stale.execute, stale.reason, stale.stalled) == (False, "StaleApproval", True)
    assert "ffff0000ffff0000" in stale.message
    assert _decide(_spec(mode="Manual", approvedProposal="abcd1234abcd1234")).execute
    unknown = _decide(_spec(mode="Manual", approvedProposal="abcd1234abcd1234"), proposal=None)
    assert (unknown.reason, unknown.stalled) == ("UnknownProposal", True)


def test_dry_run_never_executes_and_auto_needs_no_approval() -> None:
    assert _decide(_spec(mode="DryRun", approvedProposal="abcd1234abcd1234")).reason == "DryRun"
    assert _decide(_spec(mode="Auto")).execute


def test_nothing_runs_twice_paused_empty_or_outside_a_window() -> None:
    assert _decide(_spec(mode="Auto"), executed_ids=frozenset({"abcd1234abcd1234"})).reason == "AlreadyExecuted"
    assert _decide(_spec(mode="Auto", paused=True)).reason == "Paused"
    assert _decide(_spec(mode="Auto"), proposal_empty=True).reason == "NothingToDo"
    windows = {"maintenanceWindows": [{"start": "22:00", "durationMinutes": 120}]}
    outside = _decide(_spec(mode="Auto", execution=windows))
    assert (outside.execute, outside.reason) == (False, "OutsideMaintenanceWindow")
    assert _decide(_spec(mode="Auto", execution=windows), now=MONDAY_0300.replace(hour=23)).execute


# ----- triggers -----------------------------------------------------------------------------------


def _why(spec: BalancePolicySpec, *, brokers: tuple[int, ...] = (1, 2, 3), imbalance: float = 1.0, **rec: Any) -> Any:
    fingerprint = planning_fingerprint(spec, {})
    recorded: dict[str, Any] = {
        "fingerprint": fingerprint,
        "brokers": (1, 2, 3),
        "last_schedule": None,
        "executing": False,
        "pending": False,
        **rec,
    }
    return why_propose(spec, Observed(MONDAY_0300, fingerprint, brokers, imbalance), Recorded(**recorded))


def test_a_proposal_is_remade_only_for_a_reason() -> None:
    spec = _spec(triggers={"onBrokerChange": True, "onImbalance": {"threshold": 1.3}})
    assert _why(spec) is None
    assert _why(spec, fingerprint=None) == "FirstProposal"
    assert _why(spec, fingerprint="0" * 16) == "SpecChanged"
    assert _why(spec, brokers=(1, 2, 3, 4)) == "BrokersChanged"
    assert _why(spec, imbalance=1.31) == "Imbalance"
    assert _why(spec, imbalance=1.31, pending=True) is None  # a waiting proposal already addresses it
    assert _why(spec, imbalance=1.31, executing=True) is None
    assert _why(_spec(triggers={"onImbalance": {"threshold": 1.3}}), brokers=(1, 2)) is None  # not watched


def test_approval_mode_and_limits_do_not_change_the_planning_fingerprint() -> None:
    base = _spec(mode="Manual")
    same = _spec(mode="Auto", approvedProposal="abcd1234abcd1234", paused=True, execution={"throttleBytesPerSec": 5})
    assert planning_fingerprint(base, {}) == planning_fingerprint(same, {})
    assert planning_fingerprint(base, {}) != planning_fingerprint(_spec(goals={"balanceThreshold": 1.2}), {})
    assert planning_fingerprint(base, {}) != planning_fingerprint(base, {"g": {"brokers": {"ids": [1]}}})


def test_schedule_trigger() -> None:
    spec = _spec(triggers={"schedule": "0 3 * * *"})
    assert _why(spec, last_schedule=MONDAY_0300 - dt.timedelta(days=1)) == "Schedule"
    assert _why(spec, last_schedule=MONDAY_0300) is None  # already fired for 03:00

"""When to make a new proposal: a pure function of the spec, what status recorded, and what was observed.

A proposal is remade only for a reason (first time, planning inputs changed, schedule, imbalance,
broker change), never on every timer tick: otherwise the id a person approved would keep changing
under them. Approving, pausing or switching mode does not change the planning inputs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_balancer.controller.cron import Cron
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec


def planning_fingerprint(spec: BalancePolicySpec, groups: Mapping[str, Any]) -> str:
    """Hash of everything that shapes a plan (not mode, approval, pause, triggers or execution limits)."""
    inputs = spec.model_dump(
        mode="json", by_alias=True, include={"cluster", "resource_groups", "goals", "operation", "analysis"}
    )
    inputs["groupSpecs"] = groups
    text = json.dumps(inputs, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Observed:
    """What the controller saw this round."""

    now: dt.datetime
    fingerprint: str
    brokers: tuple[int, ...]
    imbalance: float | None  # worst max/avg of the watched resource, None if not measured


@dataclass(frozen=True)
class Recorded:
    """What status says about earlier rounds."""

    fingerprint: str | None  # of the current proposal
    brokers: tuple[int, ...] | None  # live brokers last seen
    last_schedule: dt.datetime | None
    executing: bool
    pending: bool  # a non-empty proposal waits to be executed


def why_propose(spec: BalancePolicySpec, seen: Observed, before: Recorded) -> str | None:
    """The reason to make a new proposal now (CamelCase, for events), or None."""
    if before.executing or spec.paused:
        return None  # a running execution finishes (or stops) before anything is replanned
    if before.fingerprint is None:
        return "FirstProposal"
    if before.fingerprint != seen.fingerprint:
        return "SpecChanged"
    triggers = spec.triggers
    if triggers.on_broker_change and before.brokers is not None and set(before.brokers) != set(seen.brokers):
        return "BrokersChanged"
    if triggers.schedule is not None:
        since = before.last_schedule or seen.now - dt.timedelta(minutes=1)
        if Cron.parse(triggers.schedule).fired_between(since, seen.now) is not None:
            return "Schedule"
    # While a proposal waits (for approval or a window) the imbalance it fixes is no news.
    imbalance = triggers.on_imbalance
    if (
        imbalance is not None
        and seen.imbalance is not None
        and not before.pending
        and seen.imbalance > imbalance.threshold
    ):
        return "Imbalance"
    return None

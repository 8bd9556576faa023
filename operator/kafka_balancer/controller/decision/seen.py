"""What the reconciler observed, as values the decision reads: each item once it was asked for."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Literal

from kafka_balancer.controller.status import (
    ConsumerGroupStatus,
    DurabilityStatus,
    LastRun,
    ObservedCluster,
    Progress,
    ProposalStatus,
)


@dataclass(frozen=True)
class Problem:
    """Something that needs a human (the Stalled condition's reason and message)."""

    reason: str
    message: str


@dataclass(frozen=True)
class RunView:
    """An execution this process runs for the policy, as it is now."""

    proposal_id: str
    done: bool
    stop_reason: str | None = None
    progress: Progress | None = None
    proposal: ProposalStatus | None = None  # the proposal it executes, as status held it when it started
    # Why a stuck move is stuck, when it is not that it copies nothing (summaries.stuck_reasons).
    stuck_reasons: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ClusterSeen:
    """What reading the cluster found (the durability audit and consumer groups ride along)."""

    cluster: ObservedCluster
    durability: DurabilityStatus | None = None
    consumer_groups: list[ConsumerGroupStatus] | None = None

    @property
    def alive(self) -> tuple[int, ...]:
        return tuple(self.cluster.brokers)


@dataclass(frozen=True)
class NotAnalysed:
    """The first usable analysis of the load is not there yet (ProposalReady=False says why)."""

    reason: str
    message: str


@dataclass(frozen=True)
class Seen:
    """What the reconciler observed, each item once asked for (None: not observed yet)."""

    now: dt.datetime
    generation: int
    fingerprint: str = ""
    refused: Problem | None = None  # the spec, its groups or its Secret cannot be used
    run: RunView | None = None  # an execution of this process (running, or done: then ``finished`` says how)
    finished: LastRun | None = None  # the execution that just ended (recorded by this reconciliation)
    progress: Progress | None = None  # that execution's last progress
    last_finished: LastRun | None = None  # the newest execution this process finished
    cluster: ClusterSeen | Problem | None = None
    resumed: RunView | Problem | None = None
    analysis: NotAnalysed | Problem | Literal["measured", "live"] | None = None
    imbalance: float | None = None
    measured: bool = False  # the imbalance was asked for (it may still be None: not computed)
    proposal: ProposalStatus | Problem | None = None  # made by this reconciliation
    started: RunView | Problem | None = None
    # (proposal id, why) when this process found the copies people review of that proposal tampered: kept
    # here too, for a reconciliation that starts from a body older than the status that says so.
    review_tampered: tuple[str, str] | None = None

"""The proposal summary as a typed model: what the planner reports about a proposal, read by its users.

The planner writes the summary as JSON (``Proposal.summary``, ``summary.json``; docs/goals.md, "The
proposal"); :meth:`ProposalSummary.of` reads it back with every field checked, so a consumer reads
``summary.moves`` rather than ``summary.get("moves")``. A malformed summary is a
:class:`~kafka_balancer.model.errors.ModelError` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from kafka_balancer.model.errors import ModelError


class _SummaryModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore")


class QuantityStats(_SummaryModel):
    """One quantity over a group's active brokers."""

    avg: float
    max_over_avg: float
    min_over_avg: float
    stddev_over_avg: float


class GroupStats(_SummaryModel):
    """A resource group's brokers and every quantity's statistics (replicas, disk, network-in, ...)."""

    brokers: list[int] = Field(default_factory=list)
    quantities: dict[str, QuantityStats] = Field(default_factory=dict)

    @classmethod
    def of(cls, raw: Any) -> GroupStats:
        """From the summary's form: ``{"brokers": [...], "<quantity>": {stats}, ...}``."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"must be an object, got {raw!r}")
        quantities = {name: stats for name, stats in raw.items() if name != "brokers"}
        return cls.model_validate({"brokers": raw.get("brokers", []), "quantities": quantities})


class GroupSummary(_SummaryModel):
    """A resource group before and after the plan."""

    brokers: list[int]
    before: GroupStats
    after: GroupStats

    @field_validator("before", "after", mode="before")
    @classmethod
    def _stats(cls, raw: Any) -> GroupStats:
        return raw if isinstance(raw, GroupStats) else GroupStats.of(raw)


class GoalSummary(_SummaryModel):
    """A distribution goal before and after the plan."""

    holds_before: bool
    holds_after: bool
    violation_before: float
    violation_after: float


class TimeBudgetReached(_SummaryModel):
    """The planner's time budget ran out (goals.maxPlanningSeconds): the stage it cut short."""

    seconds: float
    stage: str


class ProposalSummary(_SummaryModel):
    """The summary of a proposal (docs/goals.md, "The proposal")."""

    proposal_id: str
    operation: str
    moves: int
    partitions_moved: int
    bytes_to_move: float
    leader_changes: int
    balancedness_before: float
    balancedness_after: float
    goals_holding: list[str] = Field(default_factory=list)
    goals_violated: list[str] = Field(default_factory=list)
    goals_worsened_by_hard_goals: list[str] = Field(default_factory=list)
    goals: dict[str, GoalSummary] = Field(default_factory=dict)
    hard_goals: dict[str, bool] = Field(default_factory=dict)
    groups: dict[str, GroupSummary] = Field(default_factory=dict)
    time_budget_reached: TimeBudgetReached | None = None

    @classmethod
    def of(cls, summary: Mapping[str, Any]) -> ProposalSummary:
        """The typed summary; a ModelError names the field that is missing or malformed."""
        try:
            return cls.model_validate(dict(summary))
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ModelError(f"proposal summary: field '{where}': {first['msg']}") from None

    def max_over_avg(self, group: str, resource: str, *, after: bool) -> float | None:
        """The group's max/avg ratio of ``resource`` before or after the plan (None when not reported)."""
        stats = self.groups.get(group)
        if stats is None:
            return None
        found = (stats.after if after else stats.before).quantities.get(resource)
        return None if found is None else found.max_over_avg

"""What the decision asks the reconciler to do: observe one more thing, stop an execution, emit an
Event, count an error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Observation = Literal["cluster", "resume", "analysis", "imbalance", "proposal", "start"]


@dataclass(frozen=True)
class Ask:
    """One more observation the decision needs: ``what`` names it; ``model`` is the model to plan
    and measure on (``measured`` or ``live``, see :func:`~.planning.analysing`)."""

    what: Observation
    trigger: str = ""  # why a proposal is made
    model: Literal["measured", "live"] = "measured"


@dataclass(frozen=True)
class StopRun:
    """Stop the running execution cleanly (in-flight moves cancelled, throttles removed)."""

    reason: str


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event on the policy."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclass(frozen=True)
class CountError:
    """The reconciliation stalled with this reason (kafka_balancer_reconcile_errors_total)."""

    reason: str


Action = Ask | StopRun | Event | CountError

"""The operations a proposal carries, one record each: which fields it needs and how a plan treats it.

``spec.operation.type`` names one of :data:`OPERATION_KINDS` (the names are the CRD's
``OperationName``); the policy's validation and the planner read the record, never the name, so
what an operation needs (``brokers``, ``topics``...) and whether it balances afterwards are written
here once. docs/goals.md, "Operations", describes each one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pydantic.alias_generators import to_camel

from kafka_balancer.model.policy.fields import OPERATIONS


@dataclass(frozen=True)
class OperationKind:
    """One operation: the fields it needs, and what a plan of it may do."""

    name: str
    required: tuple[str, ...] = ()  # fields (attribute names) it needs, each non-empty
    one_of: tuple[str, ...] = ()  # it needs at least one of these fields
    shape_only: bool = False  # changes the cluster's shape only: no distribution goals afterwards
    per_group: bool = False  # may be planned one resource group at a time
    moves_data: bool = True  # False: only leaderships move
    removes_brokers: bool = False  # its ``brokers`` leave the cluster
    balances_from_start: bool = False  # its plan's distribution goals are compared with the cluster's before

    @property
    def needs_brokers(self) -> bool:
        return "brokers" in self.required

    def missing(self, operation: object) -> tuple[str, ...]:
        """The spec names (camelCase) of the fields of which ``operation`` (the policy's or the
        planner's, whose attributes are named alike) needs one and has none; empty when complete."""
        for name in self.required:
            if _empty(getattr(operation, name)):
                return (to_camel(name),)
        if self.one_of and all(_empty(getattr(operation, name)) for name in self.one_of):
            return tuple(to_camel(name) for name in self.one_of)
        return ()


def _empty(value: object) -> bool:
    return value is None or (isinstance(value, tuple | list | str) and not value)


REBALANCE: Final = OperationKind("rebalance", per_group=True, balances_from_start=True)
ADD_BROKERS: Final = OperationKind("add-brokers", ("brokers",), per_group=True, balances_from_start=True)
REMOVE_BROKERS: Final = OperationKind("remove-brokers", ("brokers",), per_group=True, removes_brokers=True)
DEMOTE_BROKERS: Final = OperationKind("demote-brokers", ("brokers",), shape_only=True, moves_data=False)
FIX_OFFLINE_REPLICAS: Final = OperationKind("fix-offline-replicas", shape_only=True, per_group=True)
CHANGE_REPLICATION_FACTOR: Final = OperationKind(
    "change-replication-factor", ("topics", "replication_factor"), shape_only=True
)
MOVE_TOPICS: Final = OperationKind("move-topics", ("topics",), ("target_brokers", "target_group"), shape_only=True)
REMOVE_DISKS: Final = OperationKind("remove-disks", ("log_dirs",), shape_only=True)

OPERATION_KINDS: Final = (
    REBALANCE,
    ADD_BROKERS,
    REMOVE_BROKERS,
    DEMOTE_BROKERS,
    FIX_OFFLINE_REPLICAS,
    CHANGE_REPLICATION_FACTOR,
    MOVE_TOPICS,
    REMOVE_DISKS,
)
_BY_NAME: Final = {kind.name: kind for kind in OPERATION_KINDS}
if tuple(_BY_NAME) != OPERATIONS:  # the CRD's names and the records list the same operations
    raise AssertionError(f"operation records {tuple(_BY_NAME)} differ from the CRD's {OPERATIONS}")


def operation_kind(name: str, field: str = "operation.type") -> OperationKind:
    """The record of operation ``name``; a ValueError naming ``field`` and the value for an unknown name."""
    kind = _BY_NAME.get(name)
    if kind is None:
        raise ValueError(f"field '{field}' must be one of {', '.join(OPERATIONS)}, got {name!r}")
    return kind

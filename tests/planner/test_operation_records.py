"""Each operation is one record (model/policy/operations): the policy's validation and the planner's
read the same required fields, and the planner treats an operation by its record, not its name."""

from __future__ import annotations

import pytest
from kafka_balancer.model.policy.balance_policy import Operation
from kafka_balancer.model.policy.fields import OPERATIONS
from kafka_balancer.model.policy.operations import OPERATION_KINDS, operation_kind
from kafka_balancer.planner import OperationOptions, PlannerOptions, PlanningError
from kafka_balancer.planner.groups import split
from pydantic import ValidationError

from bench.random_operations import random_case

# A value for every field an operation may need, as the planner's options take it.
COMPLETE = {
    "brokers": (1,),
    "topics": ("t0",),
    "replication_factor": 2,
    "target_brokers": (2,),
    "target_group": "b",
    "log_dirs": ((1, "/data/a"),),
}


def _policy_value(name: str, value: object) -> object:
    if name == "log_dirs":
        return [{"broker": 1, "path": "/data/a"}]
    return list(value) if isinstance(value, tuple) else value


@pytest.mark.parametrize("name", OPERATIONS)
def test_both_validations_name_the_same_missing_field(name: str) -> None:
    record = operation_kind(name)
    wanted = {name: COMPLETE[name] for name in (*record.required, *record.one_of)}
    OperationOptions(record.name, **wanted)  # type: ignore[arg-type]
    Operation(type=record.name, **{k: _policy_value(k, v) for k, v in wanted.items()})  # type: ignore[arg-type]
    for field in record.required:
        without = {k: v for k, v in wanted.items() if k != field}
        spec_name = Operation.model_fields[field].alias or field
        with pytest.raises(PlanningError, match=f"field 'operation.{spec_name}' must not be empty for {record.name}"):
            OperationOptions(record.name, **without)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match=f"operation {record.name} needs a non-empty '{spec_name}'"):
            Operation(type=record.name, **{k: _policy_value(k, v) for k, v in without.items()})  # type: ignore[arg-type]


def test_every_operation_of_the_crd_has_a_record_and_a_bad_name_is_named() -> None:
    assert tuple(k.name for k in OPERATION_KINDS) == OPERATIONS
    with pytest.raises(PlanningError, match=r"field 'operation.type' must be one of .*, got 'remove-broker'"):
        OperationOptions("remove-broker", brokers=(1,))


def test_move_topics_needs_target_brokers_or_a_target_group() -> None:
    with pytest.raises(
        PlanningError, match=r"'operation.targetBrokers' must not be empty for move-topics \(or targetGroup\)"
    ):
        OperationOptions("move-topics", topics=("t0",))
    with pytest.raises(ValidationError, match="needs a non-empty 'targetBrokers' or 'targetGroup'"):
        Operation(type="move-topics", topics=["t0"])


@pytest.mark.parametrize("name", OPERATIONS)
def test_only_the_per_group_operations_are_split_by_group(name: str) -> None:
    record = operation_kind(name)
    model, _ = random_case(3, "rebalance")
    wanted = {name: COMPLETE[name] for name in (*record.required, *record.one_of[:1])}
    options = PlannerOptions(operation=OperationOptions(record.name, **wanted))  # type: ignore[arg-type]
    if record.per_group:
        assert split(model, options)
    else:
        with pytest.raises(PlanningError, match=f"operation {record.name} is planned whole"):
            split(model, options)

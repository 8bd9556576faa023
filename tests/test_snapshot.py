"""The snapshot contract: the project's schema copy, round trips, and clear errors for bad input."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_balancer.model import ModelError, models_equal, parse_snapshot, snapshot_to_dict
from kafka_balancer.model.snapshot import schema

SHARED_SCHEMA = Path(__file__).resolve().parents[2] / "shared" / "schemas" / "cluster-snapshot.schema.json"

GOOD: dict[str, Any] = {
    "version": 1,
    "cluster": "test",
    "brokers": [
        {"id": 1, "rack": "a", "capacity": {"diskBytes": 1e12, "cpuCores": 8}},
        {"id": 2, "rack": "b"},
        {"id": 3, "rack": "c", "alive": False},
    ],
    "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [1, 2], "sizeBytes": 100, "bytesInPerSec": 5.5},
        {"topic": "orders", "partition": 1, "replicas": [2, 3], "leader": 2, "isr": [2]},
        {"topic": "audit", "partition": 0, "replicas": [3], "leader": None, "isr": []},
    ],
    "topics": [{"name": "orders", "minInsyncReplicas": 2, "uncleanLeaderElection": False}],
}


def test_project_schema_is_identical_to_shared_contract() -> None:
    if not SHARED_SCHEMA.exists():
        pytest.fail(f"shared schema not found at {SHARED_SCHEMA}: the checkout must sit beside shared/")
    assert json.loads(SHARED_SCHEMA.read_text()) == schema()


def test_round_trip_keeps_everything() -> None:
    model = parse_snapshot(GOOD)
    again = parse_snapshot(snapshot_to_dict(model))
    assert models_equal(model, again)
    assert model.num_brokers == 3
    assert model.num_partitions == 3
    assert model.num_replicas == 5
    orders1 = model.partition(model.partition_index("orders", 1))
    assert orders1.isr == (2,)
    assert orders1.leader == 2
    audit = model.partition(model.partition_index("audit", 0))
    assert audit.leader is None
    assert model.topic_settings()[1].min_insync_replicas == 2
    jsonschema.validate(snapshot_to_dict(model), schema())


def test_arrays_are_read_only() -> None:
    model = parse_snapshot(GOOD)
    with pytest.raises(ValueError, match="read-only"):
        model.replicas[0, 0] = 5


def _with(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(GOOD)
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_with(("partitions", 0, "sizee"), 1), r"orders'-0\).*unknown field 'sizee'"),
        (_with(("partitions", 0, "replicas"), [1, 9]), r"orders-0: field 'replicas' names unknown broker 9"),
        (_with(("partitions", 1, "partition"), 0), r"orders-0: duplicate partition"),
        (
            _with(("partitions", 0, "sizeBytes"), -5),
            r"orders-0: field 'sizeBytes' must be a number in 0..9223372036854775807, got -5",
        ),
        (_with(("partitions", 0, "replicas"), []), r"orders-0: field 'replicas' must not be empty"),
        (_with(("partitions", 0, "replicas"), [1, 1]), r"orders-0: field 'replicas' has a duplicate"),
        (_with(("partitions", 0, "isr"), [3]), r"orders-0: field 'isr' names broker 3, which is not a replica"),
        (_with(("partitions", 0, "leader"), 3), r"orders-0: field 'leader' must be one of the replicas"),
        (_with(("brokers", 0, "capacity", "diskBytes"), 0), r"broker 1: field 'capacity.diskBytes' must be > 0"),
        (_with(("brokers", 1, "alive"), "yes"), r"brokers\[1\] \(id 2\): field 'alive' must be true or false"),
        (_with(("version",), 2), r"field 'version' must be 1, got 2"),
        (_with(("topics", 0, "minInsyncReplicas"), 0), r"topic 'orders': field 'minInsyncReplicas'"),
        (_with(("brokers",), []), r"field 'brokers' must be a non-empty list"),
    ],
)
def test_bad_input_names_field_and_value(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelError, match=message):
        parse_snapshot(doc)


@st.composite
def snapshots(draw: st.DrawFn) -> dict[str, Any]:
    ids = draw(st.lists(st.integers(0, 50), min_size=1, max_size=6, unique=True))
    racks = draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=len(ids), max_size=len(ids)))
    brokers = [{"id": b, "rack": r} for b, r in zip(ids, racks, strict=True)]
    partitions = []
    for t in range(draw(st.integers(0, 3))):
        for p in range(draw(st.integers(1, 4))):
            reps = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=len(ids), unique=True))
            partitions.append(
                {
                    "topic": f"t{t}",
                    "partition": p,
                    "replicas": reps,
                    "sizeBytes": draw(st.integers(0, 10**12)),
                    "bytesInPerSec": draw(st.floats(0, 1e9)),
                }
            )
    return {"version": 1, "brokers": brokers, "partitions": partitions}


@settings(max_examples=60, deadline=None)
@given(snapshots())
def test_reader_and_json_schema_agree_and_round_trip(doc: dict[str, Any]) -> None:
    jsonschema.validate(doc, schema())
    model = parse_snapshot(doc)
    out = snapshot_to_dict(model)
    jsonschema.validate(out, schema())
    assert models_equal(model, parse_snapshot(out))

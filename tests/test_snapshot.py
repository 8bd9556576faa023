"""The snapshot contract: the project's schema copy, round trips, and clear errors for bad input."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_balancer.model import ModelError, models_equal, parse_snapshot, snapshot_to_dict
from kafka_balancer.model.snapshot import schema

GOOD: dict[str, Any] = {
    "version": 1,
    "cluster": "test",
    "brokers": [
        {"id": 1, "rack": "a", "capacity": {"diskBytes": 1e12, "cpuCores": 8}},
        {"id": 2, "rack": "b", "logDirs": [{"path": "/d0", "cordoned": True}, {"path": "/d1"}]},
        {"id": 3, "rack": "c", "alive": False},
    ],
    "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [1, 2], "sizeBytes": 100, "bytesInPerSec": 5.5},
        {"topic": "orders", "partition": 1, "replicas": [2, 3], "leader": 2, "isr": [2]},
        {"topic": "audit", "partition": 0, "replicas": [3], "leader": None, "isr": []},
    ],
    "topics": [{"name": "orders", "minInsyncReplicas": 2, "uncleanLeaderElection": False}],
}


def test_log_dirs_and_cordons_round_trip_and_old_snapshots_still_load() -> None:
    model = parse_snapshot(GOOD)
    assert [(d.path, d.cordoned) for d in model.broker(1).log_dirs] == [("/d0", True), ("/d1", False)]
    assert model.broker(0).log_dirs == ()
    assert model.broker_cordoned.tolist() == [False, False, False]  # /d1 still takes replicas
    all_cordoned = _with(("brokers", 1, "logDirs", 1, "cordoned"), True)
    assert parse_snapshot(all_cordoned).broker_cordoned.tolist() == [False, True, False]
    assert snapshot_to_dict(parse_snapshot(all_cordoned))["brokers"][1]["logDirs"][1] == {
        "path": "/d1",
        "cordoned": True,
    }
    old = copy.deepcopy(GOOD)
    del old["brokers"][1]["logDirs"]
    assert parse_snapshot(old).broker_log_dirs == ()
    assert "logDirs" not in snapshot_to_dict(parse_snapshot(old))["brokers"][1]


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
        (
            _with(("brokers", 1, "logDirs", 0, "cordoned"), "yes"),
            r"logDirs\[0\]: field 'cordoned' must be true or false",
        ),
        (_with(("brokers", 1, "logDirs", 1, "path"), ""), r"logDirs\[1\]: field 'path' must be a non-empty string"),
        (_with(("brokers", 1, "logDirs", 1, "path"), "/d0"), r"broker 2: field 'logDirs' must name distinct"),
        (_with(("brokers", 1, "logDirs"), "/d0"), r"field 'logDirs' must be a list"),
        (
            _with(("partitions", 0, "untieredBytes"), 101),
            r"orders-0: field 'untieredBytes' \(101\) must not exceed field 'sizeBytes' \(100\)",
        ),
        (_with(("partitions", 0, "remoteBytes"), -1), r"orders-0: field 'remoteBytes' must be a number"),
        (
            _with(("brokers", 0, "followerFetchLastTieredOffset"), "yes"),
            r"brokers\[0\] \(id 1\): field 'followerFetchLastTieredOffset' must be true or false",
        ),
    ],
)
def test_bad_input_names_field_and_value(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelError, match=message):
        parse_snapshot(doc)


def test_tiered_storage_round_trips_and_prices_what_a_new_replica_copies() -> None:
    doc = _with(("partitions", 0, "remoteBytes"), 9_000)
    doc["partitions"][0]["untieredBytes"] = 10
    model = parse_snapshot(doc)
    assert model.size_bytes.tolist() == [0, 100, 0]  # audit-0, orders-0, orders-1: the local logs
    assert model.remote_bytes is not None
    assert model.remote_bytes.tolist() == [0, 9_000, 0]
    # The brokers copy the leader's local log until every live one fetches from the last tiered offset.
    assert model.copy_bytes.tolist() == [0, 100, 0]
    for b in doc["brokers"]:
        b["followerFetchLastTieredOffset"] = b["id"] != 3  # broker 3 is down: it receives nothing
    model = parse_snapshot(doc)
    assert model.copy_bytes.tolist() == [0, 10, 0]
    assert model.copy_share.tolist() == [1.0, 0.1, 1.0]
    out = snapshot_to_dict(model)
    jsonschema.validate(out, schema())
    assert (out["partitions"][1]["remoteBytes"], out["partitions"][1]["untieredBytes"]) == (9_000, 10)
    assert "remoteBytes" not in out["partitions"][0]  # untiered partitions stay as they were
    assert [b.get("followerFetchLastTieredOffset", False) for b in out["brokers"]] == [True, True, False]
    assert models_equal(model, parse_snapshot(out))
    doc["brokers"][0]["followerFetchLastTieredOffset"] = False
    assert parse_snapshot(doc).copy_bytes.tolist() == [0, 100, 0]


@st.composite
def snapshots(draw: st.DrawFn) -> dict[str, Any]:
    ids = draw(st.lists(st.integers(0, 50), min_size=1, max_size=6, unique=True))
    racks = draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=len(ids), max_size=len(ids)))
    brokers: list[dict[str, Any]] = [{"id": b, "rack": r} for b, r in zip(ids, racks, strict=True)]
    for broker in brokers:
        cordons = draw(st.lists(st.booleans(), max_size=3))
        if cordons:
            broker["logDirs"] = [{"path": f"/data/{k}", "cordoned": c} for k, c in enumerate(cordons)]
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


def test_replica_log_dirs_and_volumes_round_trip_and_a_wrong_directory_is_named() -> None:
    """JBOD: each replica's log directory (one entry per replica, null = not known) and each
    directory's volume (totalBytes, usableBytes) round trip; a directory the broker lacks is refused by name."""
    doc = copy.deepcopy(GOOD)
    doc["brokers"][1]["logDirs"][1].update({"totalBytes": 1000, "usableBytes": 400})
    doc["partitions"][0]["logDirs"] = [None, "/d1"]
    model = parse_snapshot(doc)
    jsonschema.validate(snapshot_to_dict(model), schema())
    assert model.replica_log_dirs(model.partition_index("orders", 0)) == (None, "/d1")
    assert model.replica_log_dir(model.partition_index("orders", 0), 2) == "/d1"
    assert model.replica_log_dirs(model.partition_index("orders", 1)) == (None, None)
    d1 = model.broker(1).log_dirs[1]
    assert (d1.total_bytes, d1.usable_bytes, d1.used_bytes) == (1000, 400, 600)
    again = snapshot_to_dict(model)
    assert again["partitions"][1]["logDirs"] == [None, "/d1"]
    assert again["brokers"][1]["logDirs"][1] == {
        "path": "/d1",
        "cordoned": False,
        "totalBytes": 1000,
        "usableBytes": 400,
    }
    assert "logDirs" not in again["partitions"][0]  # audit-0: none known
    assert models_equal(model, parse_snapshot(again))
    # A move keeps the directory of a replica whose broker keeps the partition; a new one's is not known.
    p = model.partition_index("orders", 0)
    moved_rows = model.replicas.copy()
    moved_rows[p, :2] = [model.broker_index(2), model.broker_index(3)]
    moved = model.with_placement(moved_rows, model.leader)
    assert moved.replica_log_dirs(p) == ("/d1", None)

    doc["partitions"][0]["logDirs"] = [None, "/elsewhere"]
    with pytest.raises(ModelError, match=r"partition orders-0: field 'logDirs' names '/elsewhere' for broker 2"):
        parse_snapshot(doc)
    doc["partitions"][0]["logDirs"] = ["/d1"]
    with pytest.raises(ModelError, match=r"field 'logDirs' must give one path \(or null\) per replica"):
        parse_snapshot(doc)

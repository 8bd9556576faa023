"""The sample store without Spark: layout, atomic appends, retention by whole hours, unreadable stores."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from kafka_balancer.analysis.samples import PARTITION_SCHEMA
from kafka_balancer.analysis.store import SampleStore, StoreError
from samplegen import T0, TopicSpec, generate

TOPIC = TopicSpec("orders", partitions=2, message_size=100, rate=lambda p, _i: 10.0 * (p + 1))


def test_samples_land_in_cluster_and_hour_directories_with_the_documented_schema(tmp_path: Path) -> None:
    store = SampleStore(f"file://{tmp_path}/samples")
    # 70 samples a minute apart cross from hour 10 into hour 11.
    for sample in generate([TOPIC], count=70):
        store.append(sample)
    assert store.clusters() == ["c1"]
    assert store.hours("partitions", "c1") == ["2026-11-21T10", "2026-11-21T11"]
    assert store.hours("brokers", "c1") == ["2026-11-21T10", "2026-11-21T11"]
    files = sorted((tmp_path / "samples" / "partitions" / "cluster=c1" / "hour=2026-11-21T11").iterdir())
    assert len(files) == 10
    assert not [f for f in files if f.name.startswith(".")], "temporary files left behind"
    table = pq.read_table(files[0])
    assert table.schema.equals(PARTITION_SCHEMA, check_metadata=False)
    assert table.num_rows == 2
    listing = store.list_files("partitions", "c1", T0 + timedelta(minutes=61), T0 + timedelta(minutes=62))
    assert len(listing.files) == 10  # only hour 11 is listed
    assert all(f.startswith("file://") for f in listing.files)


def test_retention_drops_whole_hours_older_than_the_age(tmp_path: Path) -> None:
    store = SampleStore(str(tmp_path / "samples"))
    for sample in generate([TOPIC], count=3, interval_s=3600):  # hours 10, 11, 12
        store.append(sample)
    now = T0 + timedelta(hours=2, minutes=30)  # 12:30
    # Age 90 min: the cutoff is 11:00, so hour 10 (all older) goes and hour 11 (partly younger) stays.
    assert store.apply_retention("c1", timedelta(minutes=90), now=now) == 2  # one hour in each dataset
    assert store.hours("partitions", "c1") == ["2026-11-21T11", "2026-11-21T12"]
    assert store.hours("brokers", "c1") == ["2026-11-21T11", "2026-11-21T12"]
    assert store.apply_retention("c1", timedelta(minutes=90), now=now) == 0
    assert store.apply_retention("other-cluster", timedelta(0), now=now) == 0


def test_missing_or_non_directory_store_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"cannot read store '.*nowhere': it does not exist"):
        SampleStore(str(tmp_path / "nowhere")).clusters()
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(StoreError, match=r"cannot read store '.*a-file': it is not a directory"):
        SampleStore(str(tmp_path / "a-file")).clusters()
    with pytest.raises(StoreError, match=r"cannot write to store '.*a-file/sub'"):
        SampleStore(str(tmp_path / "a-file" / "sub")).append(generate([TOPIC], count=1)[0])
    with pytest.raises(StoreError, match=r"field 'url' must not be empty"):
        SampleStore("")

"""`kafka-balancer sample` as a user runs it: real adapter over TCP to the emulator, samples in the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from emulator_fixtures import six_broker_model
from kafka_balancer.analysis.store import SampleStore
from kafka_balancer.cli import main


def test_sample_cli_writes_count_samples_of_every_partition_and_broker(
    emulator: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = emulator(six_broker_model(topics={"orders": 3, "logs": 2}))
    samples = tmp_path / "samples"
    args = ["sample", "--bootstrap-servers", cluster.bootstrap_servers, "--samples", str(samples)]
    code = main([*args, "--cluster", "prod", "--interval", "1s", "--count", "2"])
    assert code == 0, capsys.readouterr().err
    assert "took 2 samples of cluster 'prod'" in capsys.readouterr().out
    store = SampleStore(str(samples))
    assert store.clusters() == ["prod"]
    rows = pq.read_table(samples / "partitions" / "cluster=prod").to_pylist()
    assert len(rows) == 2 * 5
    expected = {("orders", 0), ("orders", 1), ("orders", 2), ("logs", 0), ("logs", 1)}
    assert {(r["topic"], r["partition"]) for r in rows} == expected
    assert len({r["ts"] for r in rows}) == 2
    for row in rows:
        assert len(row["replicas"]) == 3
        assert row["leader"] == row["replicas"][0]
        # DescribeLogDirs reports each replica's own size (the emulator's manual clock did not move).
        truth = [cluster.replica_bytes(row["topic"], row["partition"], b) for b in row["replicas"]]
        assert row["replica_sizes"] == truth
        assert row["log_end_offset"] is not None
    brokers = pq.read_table(samples / "brokers" / "cluster=prod").to_pylist()
    assert sorted({b["broker_id"] for b in brokers}) == [1, 2, 3, 4, 5, 6]
    assert all(b["alive"] for b in brokers)
    assert len(brokers) == 12


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--count", "0"], "--count: must be >= 1, got 0"),
        (["--interval", "soon"], "--interval: must be a positive duration like 60s, 5m, 1h or 7d, got 'soon'"),
        (["--prometheus-url", "http://127.0.0.1:1", "--prometheus-query", "cpu"], "must be NAME=PROMQL, got 'cpu'"),
        (["--prometheus-url", "http://127.0.0.1:1", "--prometheus-preset", "x"], "field 'preset' must be one of"),
    ],
)
def test_bad_options_name_the_option_and_value(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["sample", "--bootstrap-servers", "127.0.0.1:1", "--samples", str(tmp_path / "s"), *extra]
    assert main(args) == 2
    assert message in capsys.readouterr().err

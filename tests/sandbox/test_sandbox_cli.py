"""`kafka-balancer sandbox`: serves a snapshot on consecutive ports until SIGTERM, then exits cleanly."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from emulator_fixtures import six_broker_model
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import TopicPartition
from kafka_balancer.model import ClusterBuilder, snapshot_to_dict
from kafka_balancer.sandbox.ports import free_port_range

CLI = str(Path(sys.executable).parent / "kafka-balancer")  # the console script, as users run it


def test_sandbox_serves_the_snapshot_and_stops_on_sigterm(tmp_path: Path) -> None:
    model = six_broker_model()
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(json.dumps(snapshot_to_dict(model)))
    base = free_port_range(6)
    proc = subprocess.Popen(
        [CLI, "sandbox", "--snapshot", str(snapshot), "--port-base", str(base)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        expected = ",".join(f"127.0.0.1:{base + i}" for i in range(6))
        assert first.strip() == f"bootstrap.servers={expected}"
        adapter = KafkaAdapter(ConnectionSpec(expected))
        try:
            description = adapter.describe_cluster()
            assert [(b.id, b.port) for b in description.brokers] == [(i + 1, base + i) for i in range(6)]
            assert adapter.read_cluster().num_partitions == model.num_partitions
        finally:
            adapter.close()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "sandbox stopped" in out
    # Nothing listens any more.
    for port in range(base, base + 6):
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0


def test_sandbox_rejects_a_bad_snapshot_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {"version": 1, "brokers": [{"id": 1}], "partitions": [{"topic": "t", "partition": 0, "replicas": []}]}
        )
    )
    result = subprocess.run(
        [CLI, "sandbox", "--snapshot", str(bad), "--port-base", "40000"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "replicas" in result.stderr
    assert "t-0" in result.stderr


def test_time_scale_makes_the_served_cluster_grow_faster_than_real_time(tmp_path: Path) -> None:
    """At --time-scale 50 a partition taking 1 MB/s grows 50 MB per real second, from nothing: it reaches
    100 MB (2 s at x50, 100 s at x1) within 60 s however busy the machine (the clock thread advances by
    the real time passed whenever it runs), and never holds more than 50 MB per second since launch."""
    builder = ClusterBuilder(cluster_name="scaled")
    for b in (1, 2):
        builder.add_broker(b)
    builder.add_partition("t", 0, [1, 2], size_bytes=0.0, bytes_in_per_sec=1e6)
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(json.dumps(snapshot_to_dict(builder.build())))
    base = free_port_range(2)
    launched = time.monotonic()
    proc = subprocess.Popen(
        [CLI, "sandbox", "--snapshot", str(snapshot), "--port-base", str(base), "--time-scale", "50"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        servers = proc.stdout.readline().strip().removeprefix("bootstrap.servers=")
        adapter = KafkaAdapter(ConnectionSpec(servers))
        tp = TopicPartition("t", 0)
        deadline = time.monotonic() + 60
        try:
            while (size := adapter.replica_sizes()[(tp, 1)]) < 100e6:
                assert time.monotonic() < deadline, f"{size / 1e6:.1f} MB after 60 s"
                time.sleep(0.1)
            read = time.monotonic()
        finally:
            adapter.close()
        assert size <= 50e6 * (read - launched)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0

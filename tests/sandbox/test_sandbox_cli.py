"""`kafka-balancer sandbox`: serves a snapshot on consecutive ports until SIGTERM, then exits cleanly."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

from emulator_fixtures import six_broker_model
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.model import snapshot_to_dict

CLI = str(Path(sys.executable).parent / "kafka-balancer")  # the console script, as users run it


def _free_port_range(count: int) -> int:
    """A base port such that base..base+count-1 are free right now (best effort, loopback only)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count >= 65535:
            continue
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port range")


def test_sandbox_serves_the_snapshot_and_stops_on_sigterm(tmp_path: Path) -> None:
    model = six_broker_model()
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(json.dumps(snapshot_to_dict(model)))
    base = _free_port_range(6)
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
        assert first.strip() == f"bootstrap servers: {expected}"
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

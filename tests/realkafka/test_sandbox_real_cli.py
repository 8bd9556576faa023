"""`kafka-balancer sandbox --real` as a user runs it: a real KRaft cluster until SIGTERM, its data gone
afterwards (kept with --data-dir, and started again from it), and one clear line when it cannot start."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.sandbox.ports import free_port_range
from kafka_balancer.sandbox.real import RealCluster, RealClusterOptions, fetched_versions, kafka_libs
from kafka_balancer.sandbox.traffic import RecordWriter, TopicSpec, create_topics, read_digests
from kafka_targets import wait_until

from realkafka.test_tiered_real import RECORD, RECORDS, TIERED, MiB
from realkafka.workflow import CLI, cli


def _start(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [CLI, "sandbox", "--real", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    first = proc.stdout.readline().strip()
    return proc, first


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_sandbox_real_serves_brokers_in_racks_and_stops_on_sigterm(tmp_path: Path) -> None:
    base = free_port_range(3)
    proc, first = _start("--brokers", "2", "--racks", "2", "--log-dirs", "3", "--port-base", str(base))
    try:
        assert first == f"bootstrap.servers=127.0.0.1:{base},127.0.0.1:{base + 1}", proc.stderr
        adapter = KafkaAdapter(ConnectionSpec(first.removeprefix("bootstrap.servers=")))
        try:
            brokers = adapter.describe_cluster().brokers
            assert [(b.id, b.port, b.rack) for b in brokers] == [(1, base, "rack-a"), (2, base + 1, "rack-b")]
            log_dirs = adapter.broker_configs([1])[1]["log.dirs"].split(",")
            assert len(log_dirs) == 3
            assert adapter.broker_configs([2])[2]["auto.leader.rebalance.enable"] == "false"
        finally:
            adapter.close()
        assert _listening(base + 2)  # the controller
        data = Path(log_dirs[0]).parents[1]
        assert data.is_dir()
    finally:
        out, err = _stop(proc)
    assert proc.returncode == 0, err
    assert "sandbox stopped" in out
    assert not any(_listening(p) for p in range(base, base + 3))
    assert not data.exists(), "the cluster's temporary data was not deleted"


def test_sandbox_real_keeps_its_data_dir_and_starts_again_from_it(tmp_path: Path) -> None:
    base = free_port_range(2)
    data = tmp_path / "cluster"
    proc, first = _start("--brokers", "1", "--racks", "1", "--port-base", str(base), "--data-dir", str(data))
    try:
        bootstrap = first.removeprefix("bootstrap.servers=")
        create_topics(bootstrap, [TopicSpec("kept", ((1,),))])
        writer = RecordWriter(bootstrap, record_bytes=100)
        writer.write("kept", [0], 25)
        writer.flush()
    finally:
        _stop(proc)
    assert proc.returncode == 0

    proc, first = _start("--brokers", "1", "--racks", "1", "--port-base", str(base), "--data-dir", str(data))
    try:
        snapshot = tmp_path / "snapshot.json"
        result = cli(
            "snapshot", "--bootstrap-servers", first.removeprefix("bootstrap.servers="), "--output", str(snapshot)
        )
        assert result.returncode == 0, result.stderr
        doc = json.loads(snapshot.read_text())
        assert [(p["topic"], p["replicas"]) for p in doc["partitions"]] == [("kept", [1])]
        assert doc["partitions"][0]["sizeBytes"] > 2500
    finally:
        _stop(proc)
    assert data.is_dir()


def test_sandbox_real_says_in_one_line_why_it_cannot_start(tmp_path: Path) -> None:
    base = free_port_range(3)
    empty = tmp_path / "no-jars"
    empty.mkdir()
    missing = cli("sandbox", "--real", "--brokers", "2", "--port-base", str(base), "--kafka-libs", str(empty))
    assert missing.returncode == 1
    assert missing.stderr.count("\n") == 1
    assert f"sandbox: Kafka jars missing in {empty} (kafka_2.13-*.jar" in missing.stderr
    assert "make kafka" in missing.stderr

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", base + 1))
        taken.listen()
        busy = cli("sandbox", "--real", "--brokers", "2", "--port-base", str(base))
    assert busy.returncode == 1
    assert busy.stderr == f"sandbox: port {base + 1} on 127.0.0.1 is taken (Address already in use)\n"

    no_java = subprocess.run(
        [CLI, "sandbox", "--real", "--port-base", str(base)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "JAVA_HOME": str(tmp_path / "no-java")},
    )
    assert no_java.returncode == 1
    assert no_java.stderr == "sandbox: Java 17 or newer is needed and no java was found (JAVA_HOME or PATH)\n"

    bad = cli("sandbox", "--real", "--brokers", "0", "--port-base", str(base))
    assert bad.returncode == 2
    assert bad.stderr == "sandbox: --brokers must be between 1 and 64, got 0\n"


def test_a_cluster_id_that_begins_with_a_dash_formats(tmp_path: Path) -> None:
    """A random base64url cluster id begins with "-" about once in 64 starts; StorageTool must not read
    it as an option."""
    options = RealClusterOptions(
        brokers=1, racks=1, port_base=free_port_range(2), data_dir=tmp_path, cluster_id="-aW7HGSu1RaSINLrkUW6JA"
    )
    RealCluster(options).prepare()
    assert "cluster.id=-aW7HGSu1RaSINLrkUW6JA" in (tmp_path / "controller" / "metadata" / "meta.properties").read_text()


def test_a_data_dir_that_would_add_lines_to_server_properties_is_refused(tmp_path: Path) -> None:
    """Before: a --data-dir with a line break wrote extra lines into every server.properties (issue 55)."""
    base = free_port_range(3)
    cases = {"a\nlisteners=PLAINTEXT://0.0.0.0:1": r"'\n'", "a,b": "','", "a\\b": r"'\\'", "a\tb": r"'\t'"}
    for name, shown in cases.items():
        data_dir = tmp_path / name
        refused = cli("sandbox", "--real", "--brokers", "2", "--port-base", str(base), "--data-dir", str(data_dir))
        assert refused.returncode == 2, refused
        assert refused.stderr.count("\n") == 1, refused.stderr
        assert f"--data-dir {str(data_dir)!r}: {shown} cannot be written into server.properties" in refused.stderr
        assert not data_dir.exists()


def test_sandbox_real_tiers_closed_segments_on_the_newest_version(tmp_path: Path) -> None:
    """`--tiered-storage` on the newest fetched Kafka (from 4.4 on, LocalTieredStorage comes in kafka-storage's
    test-fixtures jar, not its test jar): closed segments go to remote storage, and every record reads back
    from offset 0. The main test cluster's version does the same in tests/realkafka/test_tiered_real.py."""
    newest = fetched_versions()[-1]
    base = free_port_range(2)
    libs = kafka_libs(version=newest)
    proc, first = _start("--brokers", "1", "--racks", "1", "--log-dirs", "1", "--port-base", str(base),
                         "--tiered-storage", "--kafka-libs", str(libs))  # fmt: skip
    if not first.startswith("bootstrap.servers="):
        pytest.fail(f"sandbox --real --tiered-storage on Kafka {newest} did not start: {_stop(proc)[1]}")
    try:
        bootstrap = first.removeprefix("bootstrap.servers=")
        create_topics(bootstrap, [TopicSpec("logs", ((1,),), TIERED)])
        writer = RecordWriter(bootstrap, record_bytes=RECORD)
        writer.write("logs", [0], RECORDS)
        writer.flush()
        adapter = KafkaAdapter(ConnectionSpec(bootstrap))
        try:

            def tiered() -> bool:
                model = adapter.read_cluster()
                row = model.partition_index("logs", 0)
                return model.remote_bytes is not None and model.remote_bytes[row] > 4 * MiB >= model.size_bytes[row]

            wait_until(tiered, f"Kafka {newest} to keep closed segments in remote storage only", timeout_s=120)
        finally:
            adapter.close()
        offsets, _ = read_digests(bootstrap, [("logs", 0)])[("logs", 0)]
        assert offsets == RECORDS
    finally:
        _out, err = _stop(proc)
    assert proc.returncode == 0, err

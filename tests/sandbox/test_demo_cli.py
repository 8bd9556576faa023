"""`kafka-balancer demo` (issue 2 stage): emulator up, read back through the adapter, table, clean stop."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafka_balancer.sandbox.demo_cluster import skewed_demo_model

CLI = str(Path(sys.executable).parent / "kafka-balancer")


def test_demo_prints_the_cluster_it_reads_back_and_stops() -> None:
    result = subprocess.run([CLI, "demo", "--port-base", "0"], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    model = skewed_demo_model()
    assert f"{model.num_partitions} partitions, {model.num_replicas} replicas, controller 1" in lines[1]
    table = {int(line.split()[0]): line.split() for line in lines[3:9]}
    assert sorted(table) == [1, 2, 3, 4, 5, 6]
    assert table[6][3:5] == ["0", "0"]  # the new broker holds nothing yet
    replicas = {b: sum(b in p.replicas for p in model.partitions()) for b in range(1, 7)}
    assert {b: int(row[3]) for b, row in table.items()} == replicas
    assert lines[-1] == "emulator stopped"

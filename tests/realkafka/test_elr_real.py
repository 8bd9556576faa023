"""Eligible leader replicas (KIP-966, on by default in Kafka 4.x KRaft) on real Kafka 4.3.1 brokers:
a partition made unsafe by stopping brokers is reported at risk by `kafka-balancer audit` and never
moved by `kafka-balancer execute`, while a healthy partition of the same plan moves."""

from __future__ import annotations

import json
from pathlib import Path

from real_kafka import RealKafka

from realkafka.workflow import cli, execute, finish

RECORD = 10_000


def test_audit_and_executor_read_elr_and_leave_the_unsafe_partition_alone(
    real_kafka: RealKafka, tmp_path: Path
) -> None:
    real_kafka.create_topic("critical", [[1, 2, 3]], {"min.insync.replicas": "2"})
    real_kafka.create_topic("ledger", [[1, 2, 3]], {"min.insync.replicas": "3"})
    real_kafka.create_topic("ok", [[4, 5, 6]], {"min.insync.replicas": "2"})
    for topic in ("critical", "ledger", "ok"):
        real_kafka.produce(topic, partitions=[0], records_per_partition=50, record_bytes=RECORD)
    real_kafka.stop_broker(3)  # critical-0: ISR [1, 2] at min ISR 2; ledger-0: below min ISR 3
    real_kafka.wait_until(lambda: 3 not in real_kafka.partitions()[("critical", 0)].isr, "broker 3 out of the ISR")

    audited = cli("audit", "--bootstrap-servers", real_kafka.bootstrap_servers, "--json")
    assert audited.returncode == 0, audited.stderr
    listed = {p["topic"]: p for p in json.loads(audited.stdout)["partitionsAtRisk"]}
    assert (listed["critical"]["isrState"], listed["critical"]["elrState"]) == ("at-min-isr", "none")
    assert "no-eligible-leader-replica" in listed["critical"]["risks"]
    # ledger lost broker 3 while below its min ISR 3: broker 3 is an eligible leader replica.
    assert (listed["ledger"]["isrState"], listed["ledger"]["elr"]) == ("below-min-isr", [3])
    assert "no-eligible-leader-replica" not in listed["ledger"]["risks"]
    assert "ok" not in listed
    table = cli("audit", "--bootstrap-servers", real_kafka.bootstrap_servers)
    rows = {line.split()[0]: line.split() for line in table.stdout.splitlines()[2:] if line.strip()}
    assert rows["critical-0"][4:6] == ["at-min-isr", "none"], table.stdout

    plan = {
        "version": 1,
        "partitions": [
            {"topic": "critical", "partition": 0, "replicas": [1, 2, 4]},
            {"topic": "ok", "partition": 0, "replicas": [4, 5, 1]},
        ],
    }
    (tmp_path / "proposal.json").write_text(json.dumps(plan))
    code = finish(execute(real_kafka, tmp_path, "--give-up-blocked-after", "5", "--json"))
    log = (tmp_path / "execute.log").read_text()
    assert code != 0, log  # one move given up: the run does not report success
    assert "critical-0" in log
    assert "and no eligible leader replica (KIP-966)" in log, log
    after = real_kafka.partitions()
    assert after[("critical", 0)].replicas == (1, 2, 3)  # never moved
    assert after[("ok", 0)].replicas == (4, 5, 1)

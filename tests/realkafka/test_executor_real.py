"""The executor moving real data on real Kafka brokers of each tested version (issue 32, 54): produce,
`snapshot`, `plan`, `execute` under a throttle, all as separate processes, and check the cluster throughout
and after."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_targets import no_throttle_left
from real_kafka import TESTED_VERSIONS, RealKafka

from realkafka.workflow import execute, finish, run_watched, snapshot_and_plan, targets, watch_for

MB = 1_000_000
# Topics of very different sizes, on brokers 1-4 only: brokers 5 and 6 (racks b and c) are new and empty.
TOPICS = {
    # name: (partitions, replication factor, MB per partition, min.insync.replicas)
    "clicks": (6, 3, 30, 2),  # the hot topic
    "orders": (4, 3, 20, 2),
    "audit": (8, 2, 6, 1),
    "config": (3, 3, 1, 2),
}
RECORD = 10_000


def _assignment(index: int, partitions: int, rf: int) -> list[list[int]]:
    return [[1 + (index + p + k) % 4 for k in range(rf)] for p in range(partitions)]


def _fill(kafka: RealKafka) -> dict[str, dict[int, object]]:
    written: dict[str, dict[int, object]] = {}
    for i, (name, (partitions, rf, mb, min_isr)) in enumerate(TOPICS.items()):
        kafka.create_topic(name, _assignment(i, partitions, rf), {"min.insync.replicas": str(min_isr)})
        written[name] = dict(
            kafka.produce(
                name,
                partitions=range(partitions),
                records_per_partition=mb * MB // RECORD,
                record_bytes=RECORD,
            )
        )
    return written


@pytest.mark.parametrize("kafka_version", TESTED_VERSIONS, indirect=True)
def test_execute_moves_real_data_under_a_throttle_and_loses_nothing(real_kafka: RealKafka, tmp_path: Path) -> None:
    written = _fill(real_kafka)
    assert sum(len(w) * TOPICS[t][2] for t, w in written.items()) >= 300  # MB of records in all
    proposal = snapshot_and_plan(real_kafka, tmp_path)
    wanted = targets(proposal)
    assert {b for replicas in wanted.values() for b in replicas} >= {5, 6}, "the plan fills the new brokers"
    watch = watch_for(real_kafka, {t: v[3] for t, v in TOPICS.items()})
    before = real_kafka.partitions()

    proc = execute(real_kafka, tmp_path, "--throttle", "20MB/s")
    seconds = run_watched(real_kafka, proc, watch)
    code = finish(proc)

    log = (tmp_path / "execute.log").read_text()
    assert code == 0, log
    assert not watch.violations, watch.violations
    assert watch.throttled_seen, "no throttled replica was ever listed during the run"
    after = real_kafka.led_by_first_replicas()
    for key, view in after.items():
        assert view.replicas == wanted.get(key, before[key].replicas), key
        assert view.leader == view.replicas[0], f"{key}: led by {view.leader}, preferred {view.replicas[0]}"
        assert set(view.isr) == set(view.replicas), key
    no_throttle_left(real_kafka.throttle_leftovers)
    for topic, partitions in written.items():
        assert real_kafka.read_back(topic, sorted(partitions)) == partitions, topic
    moved = proposal["summary"]["bytesToMove"]
    assert moved > 50 * MB
    print(f"moved {moved / MB:.0f} MB in {seconds:.1f} s ({watch.polls} polls)")

"""Preferred leader racks on real Kafka 4.3.1 brokers: `snapshot`, `plan --policy` and `execute` as
separate processes. With `preferredLeaderRacks: [rack-a]` on the session's 3-rack cluster, every
partition ends led from rack-a by leadership changes alone (no data moves), with the leaders even
between rack-a's two brokers. (No records: reading them back costs ~1 s a partition, and a leadership
change moves no data; tests/realkafka/test_executor_real.py reads records back after its moves
and elections.)"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml
from real_kafka import RealKafka

from realkafka.workflow import execute, finish, snapshot_and_plan, targets

PARTITIONS = 12


def _policy(kafka: RealKafka, work: Path) -> Path:
    path = work / "policy.yaml"
    manifest = {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BalancePolicy",
        "metadata": {"name": "leaders-in-rack-a"},
        "spec": {
            "cluster": {"bootstrapServers": kafka.bootstrap_servers},
            "goals": {"preferredLeaderRacks": ["rack-a"]},
        },
    }
    path.write_text(yaml.safe_dump(manifest))
    return path


def _led_by_first_replicas(kafka: RealKafka, partitions: int) -> None:
    """Wait until the metadata shows every partition, each led by its first replica (a new topic's
    leaders, and the elections' results, reach every broker's metadata in a moment)."""

    def settled() -> bool:
        views = kafka.partitions()
        return len(views) == partitions and all(v.leader == v.replicas[0] for v in views.values())

    kafka.wait_until(settled, "every partition led by its first replica")


def test_every_partition_is_led_from_rack_a_after_execution_by_leadership_changes_alone(
    real_kafka: RealKafka, tmp_path: Path
) -> None:
    brokers = real_kafka.broker_ids
    rack_a = [b for b in brokers if real_kafka.rack(b) == "rack-a"]
    assert len(rack_a) == 2
    for i, name in enumerate(("clicks", "orders")):
        # Three consecutive brokers: one replica in each rack; the first (preferred leader) in every rack in turn.
        assignment = [[brokers[(i + p + k) % len(brokers)] for k in range(3)] for p in range(PARTITIONS)]
        real_kafka.create_topic(name, assignment)
    _led_by_first_replicas(real_kafka, 2 * PARTITIONS)
    before = real_kafka.partitions()
    led_elsewhere = sum(real_kafka.rack(v.leader) != "rack-a" for v in before.values())
    assert led_elsewhere == 2 * PARTITIONS * 2 // 3  # two thirds led from rack-b and rack-c

    proposal = snapshot_and_plan(real_kafka, tmp_path, "--policy", str(_policy(real_kafka, tmp_path)))
    summary = proposal["summary"]
    assert summary["hardGoals"]["preferred-leader-racks"] is True
    assert summary["preferredLeaderRacks"]["misledBefore"] == led_elsewhere
    assert summary["preferredLeaderRacks"]["misledAfter"] == 0
    # Leadership changes suffice: the plan only reorders replica lists (no data moves).
    assert summary["moves"] == 0
    assert summary["leaderChanges"] == led_elsewhere
    assert all(set(r) == set(before[key].replicas) for key, r in targets(proposal).items())

    code = finish(execute(real_kafka, tmp_path))
    assert code == 0, (tmp_path / "execute.log").read_text()
    _led_by_first_replicas(real_kafka, 2 * PARTITIONS)  # the elections, as every broker's metadata shows them
    after = real_kafka.partitions()
    assert all(real_kafka.rack(v.leader) == "rack-a" for v in after.values()), after
    assert all(set(v.replicas) == set(before[k].replicas) for k, v in after.items())
    leaders = Counter(v.leader for v in after.values())
    assert leaders == dict.fromkeys(rack_a, PARTITIONS)  # 24 partitions, even between rack-a's two brokers


def test_where_rack_a_holds_every_partition_on_one_broker_replica_moves_inside_rack_a_even_the_leaders(
    real_kafka: RealKafka, tmp_path: Path
) -> None:
    brokers = real_kafka.broker_ids
    by_rack = {r: [b for b in brokers if real_kafka.rack(b) == r] for r in ("rack-a", "rack-b", "rack-c")}
    (a1, a2), (b1, b2), (c1, c2) = by_rack["rack-a"], by_rack["rack-b"], by_rack["rack-c"]
    # Every partition's rack-a replica on a1, led from rack-b or rack-c: leadership alone would pile
    # every leader on a1.
    real_kafka.create_topic("events", [[(b1, b2)[p % 2], a1, (c1, c2)[p // 2 % 2]] for p in range(PARTITIONS)])
    _led_by_first_replicas(real_kafka, PARTITIONS)
    proposal = snapshot_and_plan(real_kafka, tmp_path, "--policy", str(_policy(real_kafka, tmp_path)))
    summary = proposal["summary"]
    assert summary["hardGoals"]["preferred-leader-racks"] is True
    # About half of a1's replicas move to a2 (its rack peer, the only broker keeping the racks spread),
    # nothing else: data moves stop at the band's edge (balanceThreshold 1.10: 5 to 7 leaders of 6).
    assert summary["moves"] in {PARTITIONS // 2 - 1, PARTITIONS // 2}
    assert summary["goals"]["leader-count-distribution"]["holdsAfter"] is True
    before = real_kafka.partitions()
    for key, replicas in targets(proposal).items():
        assert set(replicas) - set(before[key].replicas) <= {a2}

    code = finish(execute(real_kafka, tmp_path))
    assert code == 0, (tmp_path / "execute.log").read_text()
    _led_by_first_replicas(real_kafka, PARTITIONS)
    after = real_kafka.partitions()
    assert all(real_kafka.rack(v.leader) == "rack-a" for v in after.values()), after
    leaders = Counter(v.leader for v in after.values())
    assert set(leaders) == {a1, a2}
    assert all(5 <= n <= 7 for n in leaders.values()), leaders
    assert leaders[a2] == summary["moves"]  # each replica a2 took leads there

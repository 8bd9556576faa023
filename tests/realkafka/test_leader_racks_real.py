"""Preferred leader racks on real Kafka 4.3.1 brokers: `snapshot`, `plan --policy` and `execute` as
separate processes. With `preferredLeaderRacks: [rack-a]` on the session's 3-rack cluster, every
partition ends led from rack-a by leadership changes alone (no data moves), with the leaders even
between rack-a's two brokers; with two ResourceGroups of their own lists, each group's partitions end led
from its own first rack holding a replica. (No records: reading them back costs ~1 s a partition, and a leadership
change moves no data; tests/realkafka/test_executor_real.py reads records back after its moves
and elections.)"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

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
    before = real_kafka.led_by_first_replicas(2 * PARTITIONS)
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
    after = real_kafka.led_by_first_replicas(2 * PARTITIONS)  # the elections, as every broker's metadata shows them
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
    real_kafka.led_by_first_replicas(PARTITIONS)
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
    after = real_kafka.led_by_first_replicas(PARTITIONS)
    assert all(real_kafka.rack(v.leader) == "rack-a" for v in after.values()), after
    leaders = Counter(v.leader for v in after.values())
    assert set(leaders) == {a1, a2}
    assert all(5 <= n <= 7 for n in leaders.values()), leaders
    assert leaders[a2] == summary["moves"]  # each replica a2 took leads there


def _groups_policy(kafka: RealKafka, work: Path, east: list[int], west: list[int]) -> Path:
    """A policy of two ResourceGroups (as more documents of the manifest), each with its own racks."""
    path = work / "groups-policy.yaml"

    def group(name: str, brokers: list[int], topic: str, racks: list[str]) -> dict[str, Any]:
        spec = {"brokers": {"ids": brokers}, "topics": {"names": [topic]}, "preferredLeaderRacks": racks}
        return {
            "apiVersion": "kafkabalancer.io/v1alpha1",
            "kind": "ResourceGroup",
            "metadata": {"name": name},
            "spec": spec,
        }

    policy = {
        "apiVersion": "kafkabalancer.io/v1alpha1",
        "kind": "BalancePolicy",
        "metadata": {"name": "leaders-per-group"},
        "spec": {"cluster": {"bootstrapServers": kafka.bootstrap_servers}, "resourceGroups": ["east", "west"]},
    }
    docs = [policy, group("east", east, "clicks", ["rack-a"]), group("west", west, "orders", ["rack-c", "rack-b"])]
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_two_groups_are_each_led_from_their_own_first_rack_holding_a_replica(
    real_kafka: RealKafka, tmp_path: Path
) -> None:
    brokers = real_kafka.broker_ids
    by_rack = {r: [b for b in brokers if real_kafka.rack(b) == r] for r in ("rack-a", "rack-b", "rack-c")}
    east = [by_rack[r][0] for r in ("rack-a", "rack-b", "rack-c")]
    west = [by_rack[r][1] for r in ("rack-a", "rack-b", "rack-c")]
    # rf 2 inside each group (one broker per rack): each pair of racks, each broker of a pair first in turn.
    pairs = [(0, 1), (1, 2), (2, 0), (1, 0), (2, 1), (0, 2)]
    real_kafka.create_topic("clicks", [[east[i], east[j]] for i, j in pairs])
    real_kafka.create_topic("orders", [[west[i], west[j]] for i, j in pairs])
    real_kafka.led_by_first_replicas(2 * len(pairs))
    policy = _groups_policy(real_kafka, tmp_path, east, west)

    def preferred(topic: str, replicas: list[int]) -> str | None:
        """The first rack of the topic's group's list holding a replica (docs/goals.md)."""
        racks = ["rack-a"] if topic == "clicks" else ["rack-c", "rack-b"]
        return next((r for r in racks if r in {real_kafka.rack(b) for b in replicas}), None)

    before = real_kafka.partitions()
    misled = [k for k, v in before.items() if preferred(k[0], v.replicas) not in {None, real_kafka.rack(v.leader)}]
    assert len(misled) == 5  # clicks: 2 of the 4 with a rack-a replica; orders: 3 of 6

    proposal = snapshot_and_plan(real_kafka, tmp_path, "--policy", str(policy))
    summary = proposal["summary"]
    assert summary["hardGoals"]["preferred-leader-racks"] is True
    assert summary["preferredLeaderRacks"]["groupRacks"] == {"east": ["rack-a"], "west": ["rack-c", "rack-b"]}
    assert summary["preferredLeaderRacks"]["misledBefore"] == len(misled)
    assert summary["preferredLeaderRacks"]["misledAfter"] == 0
    assert summary["moves"] == 0  # leadership changes suffice
    assert summary["leaderChanges"] == len(misled)

    code = finish(execute(real_kafka, tmp_path))
    assert code == 0, (tmp_path / "execute.log").read_text()
    after = real_kafka.led_by_first_replicas(2 * len(pairs))
    for key, view in after.items():
        want = preferred(key[0], view.replicas)
        assert want is None or real_kafka.rack(view.leader) == want, (key, view)
        assert set(view.replicas) == set(before[key].replicas)
    # Each group's partitions are led by its own brokers only: east's rack-a, west's rack-c then rack-b.
    assert Counter(v.leader for k, v in after.items() if k[0] == "orders") == {west[2]: 4, west[1]: 2}
    assert Counter(v.leader for k, v in after.items() if k[0] == "clicks")[east[0]] == 4

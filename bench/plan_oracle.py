"""Same plans: a fixed list of planning cases, each with the fingerprint of its plan, checked in.

    .venv/bin/python -m bench.plan_oracle                  # every case's name and fingerprint
    .venv/bin/python -m bench.plan_oracle --check          # against bench/plan_oracle_expected.json
    .venv/bin/python -m bench.plan_oracle --write          # rewrite that file (a change that moves plans)
    .venv/bin/python -m bench.plan_oracle --check --only strong-skew
    .venv/bin/python -m bench.plan_oracle --check --quick  # the slice tests/planner/test_plan_oracle.py runs

The cases: seeds of ``bench.random_operations`` (each seed's operation the next of OPERATIONS in
turn, as ``bench.small_plans``), its JBOD cases (``jbod_case``, ``remove-disks`` among them) and small
clusters of the benchmarks' generators: ``bench.synthetic`` (its seed shapes, mixed rf, disks near
full, a dead broker, preferred leader racks, log directories) and ``bench.strong_skew`` (its three
placements, traffic tied to or independent of partition count, a replica limit it refuses).

A plan's fingerprint is the proposal id's hash of what the plan decides (model.proposal.content_id:
each moved partition's target replicas, leader first, and log directories, and the leader changes)
without the id's basis, the hash of the snapshot and the options: the snapshot's loads are floats the
generators compute through numpy's exp and log, whose last bit may differ between machines (numpy
picks their SIMD code by CPU), and a case's name already says what was planned. A refusal's
fingerprint is its reason (``disk-capacity``), not its message, which prints loads. Every case plans
without the time budget (the limit, ``MAX_PLANNING_SECONDS_LIMIT``), so a loaded machine gives the
same plans.

``--check`` prints every case whose fingerprint differs from the expected file's (and, over every
case, the file's entries that are no longer cases) and exits 1 if there is one. A change that moves
plans on purpose says in its commit which cases moved and why, and rewrites the file with ``--write``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Final

from kafka_balancer.model import ClusterModel
from kafka_balancer.model.policy.fields import MAX_PLANNING_SECONDS_LIMIT
from kafka_balancer.model.proposal import content_id
from kafka_balancer.planner import OperationOptions, PlannerOptions, PlanningError, plan

from bench.random_operations import OPERATIONS, REMOVE_DISKS, jbod_case, random_case
from bench.strong_skew import Shape, strong_skew_cluster
from bench.synthetic import SHAPES, skewed_cluster, with_disk_capacity, with_log_dirs

EXPECTED: Final = Path(__file__).with_name("plan_oracle_expected.json")
RANDOM_SEEDS: Final = range(300)  # 33 or 34 of each operation
JBOD_SEEDS: Final = range(0, 300, 3)  # 100 cases, 10 of each operation (remove-disks among them)
JBOD_KINDS: Final = (*OPERATIONS, REMOVE_DISKS)
# The test's slice: every 7th random and JBOD case (7 is prime to the 9 and 10 kinds, so the slice has
# every kind), and the clusters marked quick.
QUICK_EVERY: Final = 7

Build = Callable[[], tuple[ClusterModel, PlannerOptions]]


@dataclasses.dataclass(frozen=True)
class Case:
    """One planning case: its name (what it plans), how to build it, and whether the test's slice has it."""

    name: str
    build: Build
    quick: bool = False


def _random(seed: int) -> tuple[ClusterModel, PlannerOptions]:
    return random_case(seed, OPERATIONS[seed % len(OPERATIONS)])


def _jbod(seed: int) -> tuple[ClusterModel, PlannerOptions]:
    return jbod_case(seed, JBOD_KINDS[seed % len(JBOD_KINDS)], frozenset())


def _adding(model: ClusterModel, new: int, **options: object) -> tuple[ClusterModel, PlannerOptions]:
    """``model`` and the default policy adding its last ``new`` brokers (a rebalance without new ones)."""
    brokers = model.num_brokers
    operation = OperationOptions("add-brokers", brokers=tuple(range(brokers - new, brokers)))
    return model, PlannerOptions(operation=operation if new else OperationOptions(), **options)  # type: ignore[arg-type]


def _synthetic(shape: str, seed: int, **options: object) -> tuple[ClusterModel, PlannerOptions]:
    fields = {**SHAPES[shape], "seed": seed}
    return _adding(skewed_cluster(**fields), int(fields["new_brokers"]), **options)  # type: ignore[arg-type]


def _mixed_rf() -> tuple[ClusterModel, PlannerOptions]:
    """The mixed-rf seed shape at a sixth of its size: half the partitions rf 2, half rf 3."""
    return _adding(skewed_cluster(brokers=18, new_brokers=3, partitions=3000, rf=2.5, skew=2.0, seed=1), 3)


def _near_full(seed: int) -> tuple[ClusterModel, PlannerOptions]:
    """bench.planner capacity's clusters at 4,000 partitions: disks 1.3x the average use."""
    model = skewed_cluster(brokers=24, new_brokers=6, partitions=4000, rf=3, seed=seed, skew=1.0)
    return _adding(with_disk_capacity(model, 1.3), 6)


def _dead_broker() -> tuple[ClusterModel, PlannerOptions]:
    model = skewed_cluster(brokers=12, new_brokers=0, partitions=3000, rf=3, seed=3, dead_brokers=1)
    return model, PlannerOptions(operation=OperationOptions("fix-offline-replicas"))


def _leader_racks() -> tuple[ClusterModel, PlannerOptions]:
    return _synthetic("12", 1, preferred_leader_racks=("rack-0",))


def _log_dirs() -> tuple[ClusterModel, PlannerOptions]:
    model, options = _synthetic("12", 2)
    return with_log_dirs(model, 4, seed=2), options


def _strong_skew(max_replicas: int = 4000, **shape: object) -> tuple[ClusterModel, PlannerOptions]:
    small = Shape(brokers=24, racks=3, new_brokers=2, topics=300, partitions=4000, **shape)  # type: ignore[arg-type]
    return _adding(strong_skew_cluster(small), small.new_brokers, max_replicas_per_broker=max_replicas)


def _clusters() -> tuple[Case, ...]:
    return (
        Case("synthetic/shape-12/seed-1", partial(_synthetic, "12", 1), quick=True),
        Case("synthetic/shape-15/seed-2", partial(_synthetic, "15", 2)),
        Case("synthetic/mixed-rf", _mixed_rf),
        Case("synthetic/disks-near-full/seed-1", partial(_near_full, 1)),
        Case("synthetic/dead-broker", _dead_broker, quick=True),
        Case("synthetic/leader-racks", _leader_racks),
        Case("synthetic/log-dirs", _log_dirs),
        # Not in the test's slice: the strong-skew generator raises float arrays to powers, and numpy's SIMD
        # kernels for that may differ in the last bit between CPUs (a refusal is judged by its kind only).
        Case("strong-skew/turns", _strong_skew),
        Case("strong-skew/broker-first", partial(_strong_skew, placement="broker-first", seed=2)),
        Case(
            "strong-skew/rack-first-independent", partial(_strong_skew, placement="rack-first", traffic="independent")
        ),
        Case("strong-skew/replica-limit-refused", partial(_strong_skew, max_replicas=350), quick=True),
    )


def cases() -> tuple[Case, ...]:
    """Every case, in a fixed order (names sort the same way: seeds are zero-padded)."""
    random = (
        Case(f"random/{seed:04d}/{OPERATIONS[seed % len(OPERATIONS)]}", partial(_random, seed), i % QUICK_EVERY == 0)
        for i, seed in enumerate(RANDOM_SEEDS)
    )
    jbod = (
        Case(f"jbod/{seed:04d}/{JBOD_KINDS[seed % len(JBOD_KINDS)]}", partial(_jbod, seed), i % QUICK_EVERY == 0)
        for i, seed in enumerate(JBOD_SEEDS)
    )
    return (*random, *jbod, *_clusters())


def fingerprint(case: Case) -> str:
    """The plan's fingerprint (see the module's docstring): 16 hex digits, or ``refused <reason>``."""
    model, options = case.build()
    options = dataclasses.replace(options, max_planning_seconds=MAX_PLANNING_SECONDS_LIMIT)
    try:
        proposal = plan(model, options)
    except PlanningError as error:
        return f"refused {error.reason}"
    return content_id("", proposal.plan, proposal.leader_changes)


def expected() -> dict[str, str]:
    result: dict[str, str] = json.loads(EXPECTED.read_text())
    return result


def changes(found: dict[str, str], wanted: dict[str, str]) -> list[str]:
    """One line per case of ``found`` whose fingerprint is not ``wanted``'s."""
    return [
        f"{name}: expected {wanted.get(name, '(no entry)')}, got {got}"
        for name, got in found.items()
        if wanted.get(name) != got
    ]


def run(selected: Iterable[Case], echo: Callable[[str], None] = lambda _: None) -> dict[str, str]:
    """Every selected case's fingerprint, by name; ``echo`` is told each as it comes."""
    found = {}
    for case in selected:
        found[case.name] = fingerprint(case)
        echo(f"{case.name} {found[case.name]}")
    return found


def write(found: dict[str, str], every_case: bool) -> None:
    """The expected file with ``found``'s fingerprints: all of it when ``every_case`` ran, else merged."""
    merged = found if every_case else {**expected(), **found}
    EXPECTED.write_text(json.dumps(merged, indent=0, sort_keys=True) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="bench.plan_oracle", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--check", action="store_true", help=f"compare with {EXPECTED.name}; exit 1 on a change")
    action.add_argument("--write", action="store_true", help=f"rewrite {EXPECTED.name} with these fingerprints")
    parser.add_argument("--only", default="", help="only the cases whose name contains this")
    parser.add_argument("--quick", action="store_true", help="only the slice tests/planner/test_plan_oracle.py runs")
    args = parser.parse_args()
    selected = [c for c in cases() if args.only in c.name and (c.quick or not args.quick)]
    wall, cpu = time.perf_counter(), time.process_time()
    found = run(selected, echo=(lambda _: None) if args.check else print)
    print(
        f"{len(found)} cases, {sum(f.startswith('refused') for f in found.values())} refused, "
        f"{time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU",
        file=sys.stderr,
    )
    every_case = len(selected) == len(cases())
    if args.write:
        write(found, every_case)
    elif args.check:
        wanted = expected()
        changed = changes(found, wanted)
        if every_case:
            changed += [f"{name}: expected {wanted[name]}, no longer a case" for name in sorted(wanted.keys() - found)]
        print("\n".join(changed) or f"same plans: {len(found)} of {len(found)} cases as {EXPECTED.name}")
        sys.exit(1 if changed else 0)


if __name__ == "__main__":
    main()

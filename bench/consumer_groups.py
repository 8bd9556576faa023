"""Consumer-group analysis figures: assignor speed on large groups, and whole-cluster analysis time.

    .venv/bin/python -m bench.consumer_groups [--groups 1000] [--spark]

Prints one line per measurement; not part of the default test run.
"""

from __future__ import annotations

import argparse
import random
import time

from kafka_balancer.analysis.consumer_groups import GroupsInput, analyze_python, analyze_spark
from kafka_balancer.consumers import ASSIGNOR_NAMES, GroupSpec, Member, assign, simulate
from kafka_balancer.kafka.port import ConsumerGroupInfo, ConsumerGroupMember


def _group(partitions: dict[str, int], members: int, *, unequal: bool) -> GroupSpec:
    topics = sorted(partitions)
    listed = []
    for m in range(members):
        subscribed = topics[: 1 + m % len(topics)] if unequal else topics
        listed.append(Member(f"consumer-{m:04d}", tuple(subscribed)))
    return GroupSpec(partitions, tuple(listed))


def bench_assignors() -> None:
    cases = {
        "uniform 20 topics x 100 partitions, 200 members": _group(
            {f"t{i:02d}": 100 for i in range(20)}, 200, unequal=False
        ),
        "unequal 10 topics x 50 partitions, 50 members": _group({f"t{i:02d}": 50 for i in range(10)}, 50, unequal=True),
        "uniform 50 topics x 200 partitions, 1000 members": _group(
            {f"t{i:02d}": 200 for i in range(50)}, 1000, unequal=False
        ),
    }
    for label, group in cases.items():
        for name in ASSIGNOR_NAMES:
            start = time.perf_counter()
            result = assign(name, group)
            took = time.perf_counter() - start
            sizes = [len(v) for v in result.values()]
            print(f"assign {name:18s} {label}: {took * 1000:8.1f} ms (max/min {max(sizes)}/{min(sizes)})")
        start = time.perf_counter()
        simulate(group.with_owned(assign("sticky", group)))
        print(
            f"simulate (all assignors, up to 50 members leaving, one joining) {label}: "
            f"{time.perf_counter() - start:.1f} s"
        )


def synthetic(count: int, seed: int = 11) -> GroupsInput:
    rng = random.Random(seed)
    partitions = {f"topic-{i:03d}": rng.randint(1, 24) for i in range(200)}
    groups = []
    for g in range(count):
        topics = rng.sample(sorted(partitions), rng.randint(1, 3))
        members = [Member(f"c-{m}", tuple(topics)) for m in range(rng.randint(2, 8))]
        name = ASSIGNOR_NAMES[g % 4]
        assignment = assign(name, GroupSpec(partitions, tuple(members)))
        infos = tuple(
            ConsumerGroupMember(m.id, "client", "/10.0.0.1", m.topics,
                                {t: tuple(p for tt, p in assignment[m.id] if tt == t) for t in m.topics})
            for m in members
        )  # fmt: skip
        groups.append(ConsumerGroupInfo(f"group-{g:05d}", "Stable", "consumer", name, infos))
    return GroupsInput(tuple(groups), partitions, {})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--spark", action="store_true", help="also time the Spark path (local[2])")
    args = parser.parse_args()
    bench_assignors()
    data = synthetic(args.groups)
    start = time.perf_counter()
    python_reports = analyze_python(data)
    print(f"analyze {args.groups} groups, plain Python: {time.perf_counter() - start:.1f} s")
    if args.spark:
        from kafka_balancer.analysis.spark import EngineConfig, get_session, stop_session

        engine = EngineConfig(type="local", url="local[2]", shuffle_partitions=2)
        session = get_session(engine)
        try:
            # The first job pays for JVM warm-up and Python worker start; the second is the steady state.
            for run in ("first run", "second run"):
                start = time.perf_counter()
                spark_reports = analyze_spark(data, session)
                took = time.perf_counter() - start
                same = spark_reports == python_reports
                print(
                    f"analyze {args.groups} groups, Spark local[2], {run}: {took:.1f} s "
                    f"(same results as Python: {same})"
                )
        finally:
            stop_session(engine)


if __name__ == "__main__":
    main()

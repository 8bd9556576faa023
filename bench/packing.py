"""Disk limits that only a packing satisfies: how often the planner finds a plan where one exists.

    .venv/bin/python -m bench.packing --seeds 0-299                 # random start placement
    .venv/bin/python -m bench.packing --seeds 0-299 --dead          # and one broker dead
    .venv/bin/python -m bench.packing --seeds 0-399 --valid-start   # starts under every limit
    .venv/bin/python -m bench.packing --seeds 0-299 --offline       # fix-offline-replicas

Each small cluster (1-3 racks of 2-4 brokers, rf 1-3, 5-100 partitions of 1-900 bytes) is built
around a rack-aware target placement, and each broker's disk limit is 1.0-1.1x its load in that
placement (1.0 for an empty one): brokers differ in capacity and a placement under every limit
exists by construction. The planner starts from a random placement (or from the target itself with
--valid-start) and must find one. A failure here is the planner's, not the cluster's.

With --offline the start is the target placement with some replicas (those on brokers of one rack)
moved onto a dead broker of that rack, and the operation is fix-offline-replicas: putting each
back where the target has it is a plan that moves nothing else, so every cluster must plan; the
run also counts the partitions moved beyond the offline ones (to make room).
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter

from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.model.proposal import Proposal
from kafka_balancer.planner import OperationOptions, PlannerOptions, PlanningError, plan

from bench.planner import SEARCH_TO_THE_END
from bench.synthetic import seed_range

# Share of the partitions (with a replica in the dead broker's rack) that have a replica offline.
OFFLINE_SHARE = 0.3


def packed_cluster(seed: int, *, dead: bool, valid_start: bool, offline: bool = False) -> ClusterModel:
    rng = random.Random(seed)
    racks, per_rack = rng.randint(1, 3), rng.randint(2, 4)
    brokers = racks * per_rack
    down = rng.randrange(brokers) if dead else -1
    alive = [b for b in range(brokers) if b != down]
    rf = rng.randint(1, min(3, len(alive)))
    target_load: Counter[int] = Counter()
    partitions = []
    for t in range(rng.randint(1, 4)):
        for p in range(rng.randint(5, 25)):
            size = rng.choice([1, 10, 100]) * rng.randint(1, 9)
            order = rng.sample(range(racks), racks)
            target: list[int] = []
            i = 0
            while len(target) < rf:
                choices = [b for b in alive if b % racks == order[i % racks] and b not in target]
                if choices:
                    target.append(rng.choice(choices))
                i += 1
            for b in target:
                target_load[b] += size
            start = target if valid_start or offline else rng.sample(range(brokers), rf)
            if offline and rng.random() < OFFLINE_SHARE:
                in_rack = [i for i, b in enumerate(target) if b % racks == down % racks]
                if in_rack:
                    start = list(target)
                    start[rng.choice(in_rack)] = down
            partitions.append((f"t{t}", p, start, size))
    builder = ClusterBuilder()
    for b in range(brokers):
        limit = max(target_load[b] * rng.uniform(1.0, 1.1), 1.0)
        builder.add_broker(b, rack=f"r{b % racks}", alive=b != down, disk_bytes=limit / 0.8)
    for topic, p, replicas, size in partitions:
        builder.add_partition(topic, p, replicas, size_bytes=size, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    return builder.build()


def _moved_beyond_offline(model: ClusterModel, proposal: Proposal) -> int:
    """Replica moves beyond the offline replicas' own (the plan's moves count replicas added)."""
    dead = {b.id for b in model.brokers() if not b.alive}
    offline = sum(b in dead for p in model.partitions() for b in p.replicas)
    return int(proposal.summary["moves"]) - offline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=seed_range, default=seed_range("0-299"), help="e.g. 0-299")
    parser.add_argument("--dead", action="store_true", help="one broker is dead (its replicas must be re-placed)")
    parser.add_argument("--valid-start", action="store_true", help="start from the target placement")
    parser.add_argument(
        "--offline", action="store_true", help="fix-offline-replicas of replicas moved onto a dead broker"
    )
    args = parser.parse_args()
    outcomes: Counter[str] = Counter()
    extra: list[int] = []
    started = time.perf_counter()
    operation = OperationOptions("fix-offline-replicas") if args.offline else OperationOptions()
    options = PlannerOptions(operation=operation, max_planning_seconds=SEARCH_TO_THE_END)
    for seed in args.seeds:
        model = packed_cluster(seed, dead=args.dead or args.offline, valid_start=args.valid_start, offline=args.offline)
        try:
            proposal = plan(model, options)
        except PlanningError as error:
            outcomes[error.reason] += 1
            print(f"seed {seed}: {error}", flush=True)
        else:
            outcomes["plan"] += 1
            extra.append(_moved_beyond_offline(model, proposal))
    total = sum(outcomes.values())
    failures = {reason: n for reason, n in outcomes.items() if reason != "plan"}
    print(f"{outcomes['plan']} of {total} clusters planned; failures: {failures or 'none'}")
    if args.offline:
        made_room = [n for n in extra if n]
        print(f"replica moves beyond the offline replicas: {sum(made_room)} in {len(made_room)} of {len(extra)} plans")
    print(f"{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()

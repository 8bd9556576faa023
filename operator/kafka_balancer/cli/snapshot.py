"""`kafka-balancer snapshot`: read a live cluster into a cluster snapshot, without Spark or samples.

The snapshot holds what Kafka itself tells: brokers with their racks and liveness, every partition's
replicas, leader and ISR, its size (the leader's log, from DescribeLogDirs), and each topic's
min.insync.replicas and unclean.leader.election.enable when the topic sets them. Traffic rates are not
in it (they need samples over time: `sample` then `analyze`), so a plan from it balances replicas,
leaders and disk. `snapshot`, then `plan`, then `execute` works on any cluster you can reach.

Exit status: 0 written, 1 the cluster could not be read, 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kafka_balancer.cli.consumers import add_connection_arguments, open_port

HELP = "Read a live cluster (placement, sizes, topic configs, racks) into a cluster snapshot JSON."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    parser.add_argument("--output", required=True, type=Path, help="where to write the snapshot JSON")
    parser.add_argument(
        "--no-sizes",
        action="store_true",
        help="skip DescribeLogDirs and the brokers' log.dirs (every partition's size is then 0, nothing cordoned)",
    )


def run(args: argparse.Namespace) -> int:
    from kafka_balancer.kafka.port import KafkaError  # noqa: PLC0415 - loads the client libraries
    from kafka_balancer.model import ModelError, dumps_snapshot  # noqa: PLC0415

    port = open_port(args)
    try:
        model = port.read_cluster(with_sizes=not args.no_sizes)
    except (KafkaError, ModelError) as err:
        print(f"kafka-balancer snapshot: cannot read {args.bootstrap_servers}: {err}", file=sys.stderr)
        return 1
    finally:
        port.close()
    try:
        args.output.write_text(dumps_snapshot(model, indent=2) + "\n", encoding="utf-8")
    except OSError as err:
        print(f"kafka-balancer snapshot: cannot write {args.output}: {err.strerror}", file=sys.stderr)
        return 2
    print(
        f"snapshot of {model.num_brokers} brokers, {len(model.topics)} topics, {model.num_partitions} partitions "
        f"written to {args.output}"
    )
    return 0

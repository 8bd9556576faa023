"""`kafka-balancer sample`: sample a cluster on an interval into a sample store (Parquet).

Exit status: 0 every round succeeded, 1 some rounds failed (logged), 2 bad input.
"""

from __future__ import annotations

import argparse
import logging
import sys
from datetime import timedelta

from kafka_balancer.cli.analyze import parse_duration
from kafka_balancer.cli.arguments import integer
from kafka_balancer.cli.consumers import add_connection_arguments, connection_spec

HELP = "Sample a Kafka cluster (sizes, offsets, leaders, ISR, optional Prometheus) into the sample store."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)
    parser.add_argument("--samples", required=True, help="sample store: a path, file://, s3a://... URL")
    parser.add_argument("--cluster", default="default", help="cluster name in the store (default 'default')")
    parser.add_argument("--interval", default="60s", help="time between samples (default 60s)")
    parser.add_argument("--count", type=integer, help="number of samples to take (default: until interrupted)")
    parser.add_argument("--retention", default="7d", help="delete samples older than this (default 7d)")
    parser.add_argument("--no-consumer-offsets", action="store_true", help="do not read committed offsets")
    parser.add_argument("--prometheus-url", help="Prometheus base URL for measured rates and CPU")
    parser.add_argument("--prometheus-preset", default="strimzi", help="PromQL preset: strimzi, kube-prometheus")
    parser.add_argument(
        "--prometheus-query", action="append", default=[], metavar="NAME=PROMQL", help="override one PromQL template"
    )


def run(args: argparse.Namespace) -> int:
    from kafka_balancer.analysis.prometheus import PrometheusClient, queries_for  # noqa: PLC0415
    from kafka_balancer.analysis.sampler import Sampler, SamplerOptions  # noqa: PLC0415
    from kafka_balancer.analysis.store import SampleStore, StoreError  # noqa: PLC0415
    from kafka_balancer.kafka.adapter import KafkaAdapter  # noqa: PLC0415

    # Every line names the cluster sampled: a failed round's reason may not (a timed-out request).
    cluster = str(args.bootstrap_servers).replace("%", "%%")
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s {cluster}: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)  # kafka-python's every connection, at INFO
    try:
        if args.count is not None and args.count < 1:
            raise ValueError(f"--count: must be >= 1, got {args.count}")
        overrides = {}
        for item in args.prometheus_query:
            name, sep, promql = item.partition("=")
            if not sep:
                raise ValueError(f"--prometheus-query: must be NAME=PROMQL, got {item!r}")
            overrides[name] = promql
        prometheus = (
            PrometheusClient(args.prometheus_url, queries_for(args.prometheus_preset, overrides))
            if args.prometheus_url
            else None
        )
        options = SamplerOptions(
            cluster=args.cluster,
            interval_seconds=parse_duration(args.interval, "--interval"),
            consumer_offsets=not args.no_consumer_offsets,
            retention=timedelta(seconds=parse_duration(args.retention, "--retention")),
        )
        spec = connection_spec(args)
        store = SampleStore(args.samples)
    except (ValueError, StoreError) as err:
        print(f"kafka-balancer sample: error: {err}", file=sys.stderr)
        return 2
    port = KafkaAdapter(spec)
    try:
        sampler = Sampler(port, store, options, prometheus=prometheus)
        try:
            taken = sampler.run(args.count)
        except KeyboardInterrupt:
            return 0
    finally:
        port.close()
    print(f"took {taken} samples of cluster {args.cluster!r} into {args.samples}")
    return 0 if args.count is None or taken == args.count else 1

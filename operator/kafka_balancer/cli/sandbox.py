"""`kafka-balancer sandbox`: a local Kafka cluster on 127.0.0.1 to rehearse on, until SIGTERM or Ctrl-C.

- ``--real``: real Apache Kafka brokers (KRaft; jars from `make kafka`), empty: N broker JVMs on
  PORT, PORT+1, ... (node ids 1..N) and a controller-only JVM on PORT+N. Data is deleted at the end
  unless ``--data-dir`` keeps it (the same command then starts the same cluster again).
- ``--snapshot FILE``: the protocol emulator serving a cluster snapshot, brokers on PORT, PORT+1, ...
  in ascending broker id order; copies run at the emulated clock (``--time-scale``).

Either way the first line printed is ``bootstrap.servers=...`` once every broker answers.
Exit status: 0 stopped by a signal, 1 the cluster failed, 2 bad input.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from kafka_balancer.cli.arguments import integer, number
from kafka_balancer.cli.files import load_snapshot
from kafka_balancer.sandbox import EmulatedCluster, EmulatorOptions
from kafka_balancer.sandbox.real import KAFKA_VERSION, RealCluster, RealClusterOptions, SandboxError

HELP = "Run a local Kafka cluster on 127.0.0.1: real brokers (--real) or the emulator serving a snapshot."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    kind = parser.add_mutually_exclusive_group(required=True)
    kind.add_argument("--real", action="store_true", help="real Apache Kafka brokers (KRaft), empty")
    kind.add_argument("--snapshot", type=Path, help="cluster snapshot JSON file for the emulator to serve")
    parser.add_argument("--port-base", required=True, type=integer, help="port of broker 1 (lowest id); +1 per broker")
    real = parser.add_argument_group("real brokers (--real)")
    real.add_argument("--brokers", type=integer, default=3, help="number of brokers, node ids 1..N (default 3)")
    real.add_argument("--racks", type=integer, default=3, help="racks rack-a, rack-b, ... round robin (default 3)")
    real.add_argument("--log-dirs", type=integer, default=2, help="log directories per broker (default 2)")
    real.add_argument("--data-dir", type=Path, help="keep the cluster's data here (default: a temporary folder)")
    real.add_argument(
        "--kafka-libs",
        type=Path,
        help=f"folder of Kafka's jars (default: build/kafka/{KAFKA_VERSION}/libs, sandbox.real.KAFKA_VERSION)",
    )
    real.add_argument(
        "--heap-mb",
        type=integer,
        default=RealClusterOptions.heap_mb,
        help=f"heap of each JVM in MB (default {RealClusterOptions.heap_mb}; "
        "about 1024 for 4,000 partitions per broker)",
    )
    real.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server.properties entry of every broker (repeatable)",
    )
    real.add_argument(
        "--tiered-storage",
        action="store_true",
        help="remote storage (KIP-405, Kafka's LocalTieredStorage in the data directory); topics opt in "
        "with remote.storage.enable=true",
    )
    emulated = parser.add_argument_group("emulator (--snapshot)")
    emulated.add_argument(
        "--time-scale", type=number, default=1.0, help="emulated seconds per real second (copying, growth)"
    )


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stop


def run(args: argparse.Namespace) -> int:
    if not 0 < args.port_base < 65536:
        print(f"sandbox: --port-base must be a TCP port, got {args.port_base}", file=sys.stderr)
        return 2
    return _run_real(args) if args.real else _run_emulated(args)


def _broker_configs(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SandboxError(f"--broker-config must be KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def _run_real(args: argparse.Namespace) -> int:
    stop = _stop_on_signals()
    try:
        options = RealClusterOptions(
            brokers=args.brokers,
            racks=args.racks,
            port_base=args.port_base,
            log_dirs=args.log_dirs,
            data_dir=args.data_dir,
            kafka_libs=args.kafka_libs,
            heap_mb=args.heap_mb,
            broker_configs=_broker_configs(args.broker_config),
            tiered_storage=args.tiered_storage,
        )
    except SandboxError as err:
        print(f"sandbox: {err}", file=sys.stderr)
        return 2
    try:
        cluster = RealCluster(options)  # finds Java and the jars
        cluster.start()
    except SandboxError as err:
        print(f"sandbox: {err}", file=sys.stderr)
        return 1
    try:
        print(f"bootstrap.servers={cluster.bootstrap_servers}", flush=True)
        print(
            f"{args.brokers} Apache Kafka brokers in {min(args.racks, args.brokers)} racks, controller on "
            f"127.0.0.1:{options.controller_port}, data in {cluster.data_dir}; stop with Ctrl-C or SIGTERM",
            flush=True,
        )
        while not stop.wait(0.5):
            if not all(cluster.running(b) for b in cluster.brokers):
                down = [b for b in cluster.brokers if not cluster.running(b)]
                print(f"sandbox: broker(s) {down} exited; stopping", file=sys.stderr)
                return 1
    finally:
        cluster.stop()
    print("sandbox stopped", flush=True)
    return 0


def _run_emulated(args: argparse.Namespace) -> int:
    if args.time_scale <= 0:
        print(f"sandbox: --time-scale must be > 0, got {args.time_scale}", file=sys.stderr)
        return 2
    model = load_snapshot(args.snapshot, "--snapshot", "sandbox")
    options = EmulatorOptions(time_scale=args.time_scale, port_base=args.port_base)
    cluster = EmulatedCluster(model, options)
    stop = _stop_on_signals()
    try:
        cluster.open()
    except OSError as err:
        print(f"sandbox: cannot listen from port {args.port_base}: {err.strerror}", file=sys.stderr)
        return 1
    try:
        print(f"bootstrap.servers={cluster.bootstrap_servers}", flush=True)
        print(
            f"{model.num_brokers} brokers, {model.num_partitions} partitions, time scale {args.time_scale:g}x; "
            "stop with Ctrl-C or SIGTERM",
            flush=True,
        )
        while not stop.wait(0.2):
            pass
    finally:
        cluster.close()
    print("sandbox stopped", flush=True)
    return 0

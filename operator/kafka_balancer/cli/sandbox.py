"""`kafka-balancer sandbox`: serve a cluster snapshot as a live emulated Kafka cluster.

Brokers listen on 127.0.0.1:PORT, PORT+1, ... in ascending broker id order until SIGTERM or
Ctrl-C. Point any Kafka admin tool at the printed bootstrap servers to rehearse a plan.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from kafka_balancer.model import ModelError, loads_snapshot
from kafka_balancer.sandbox import EmulatedCluster, EmulatorOptions

HELP = "Serve a cluster snapshot as an emulated Kafka cluster on 127.0.0.1 (for rehearsals and tests)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--snapshot", required=True, type=Path, help="cluster snapshot JSON file")
    parser.add_argument("--port-base", required=True, type=int, help="port of the lowest broker id; +1 per broker")
    parser.add_argument(
        "--time-scale", type=float, default=1.0, help="emulated seconds per real second (copying, growth)"
    )


def run(args: argparse.Namespace) -> int:
    if args.time_scale <= 0:
        print(f"sandbox: --time-scale must be > 0, got {args.time_scale}", file=sys.stderr)
        return 2
    if not 0 < args.port_base < 65536:
        print(f"sandbox: --port-base must be a TCP port, got {args.port_base}", file=sys.stderr)
        return 2
    try:
        model = loads_snapshot(args.snapshot.read_bytes())
    except OSError as err:
        print(f"sandbox: cannot read --snapshot {args.snapshot}: {err.strerror}", file=sys.stderr)
        return 2
    except ModelError as err:
        print(f"sandbox: invalid snapshot {args.snapshot}: {err}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    options = EmulatorOptions(time_scale=args.time_scale, port_base=args.port_base)
    try:
        cluster = EmulatedCluster(model, options)
        cluster.open()
    except OSError as err:
        print(f"sandbox: cannot listen from port {args.port_base}: {err.strerror}", file=sys.stderr)
        return 1
    try:
        print(f"bootstrap servers: {cluster.bootstrap_servers}", flush=True)
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

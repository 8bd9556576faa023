"""`kafka-balancer demo`: the embedded demo (see README)."""

from __future__ import annotations

import argparse

HELP = "Run the embedded demo: an emulated skewed cluster balanced end to end."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port-base", type=int, default=19092, help="first emulated broker port")


def run(args: argparse.Namespace) -> int:
    raise SystemExit(f"demo: not built yet (port base {args.port_base})")

"""The `kafka-balancer` command line: one module per subcommand, loaded on demand.

Each subcommand module defines ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
Loading lazily keeps `kafka-balancer plan` from importing pyspark or kopf.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Protocol, cast

# name -> module under kafka_balancer.cli
SUBCOMMANDS: dict[str, str] = {
    "demo": "demo",
    "plan": "plan",
    "sandbox": "sandbox",
    "snapshot": "snapshot",
    "analyze": "analyze",
    "sample": "sample",
    "execute": "execute",
    "stop": "stop",
    "crds": "crds",
    "consumers": "consumers",
    "audit": "audit",
    "report": "report",
}


class _Subcommand(Protocol):
    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _load(module: str) -> _Subcommand:
    return cast(_Subcommand, importlib.import_module(f"kafka_balancer.cli.{module}"))


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-balancer", description="Keeps Apache Kafka clusters balanced.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # Only import the module of the subcommand being run (and all of them for --help).
    wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, module in SUBCOMMANDS.items():
        if wanted in SUBCOMMANDS and name != wanted:
            sub.add_parser(name)
            continue
        command = _load(module)
        command_parser = sub.add_parser(name, help=command.HELP, description=command.HELP)
        command.add_arguments(command_parser)
        command_parser.set_defaults(_run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(args_list).parse_args(args_list)
    run = args._run
    return int(run(args))


if __name__ == "__main__":
    sys.exit(main())

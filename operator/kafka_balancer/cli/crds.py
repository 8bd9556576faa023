"""`kafka-balancer crds`: write the CustomResourceDefinitions generated from the typed models."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "Write the BalancePolicy and ResourceGroup CRDs (generated from the models) to a directory."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", nargs="?", default="crds", type=Path, help="output directory (default: crds)")
    parser.add_argument("--stdout", action="store_true", help="print the CRDs as one YAML stream instead")
    parser.add_argument("--docs", type=Path, metavar="FILE", help="also write the field reference (docs/crds.md)")


def run(args: argparse.Namespace) -> int:
    from kafka_balancer.controller.crddocs import render_docs  # noqa: PLC0415 - lazy on purpose
    from kafka_balancer.controller.crdgen import all_crds, render, write_crds  # noqa: PLC0415 - lazy on purpose

    if args.docs is not None:
        args.docs.write_text(render_docs(), encoding="utf-8")
        print(args.docs)

    if args.stdout:
        print("---\n".join(render(crd) for crd in all_crds().values()), end="")
        return 0
    for path in write_crds(args.directory):
        print(path)
    return 0

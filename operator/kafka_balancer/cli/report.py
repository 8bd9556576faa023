"""`kafka-balancer report`: the HTML before/after report from snapshots, a plan or a proposal.

The "after" side is either a second snapshot (taken after an execution) or the first snapshot with a
plan applied (a dry run: what the plan would do). The summary comes from `kafka-balancer plan
--summary`/`--proposal` output, or is left out.
"""

from __future__ import annotations

import argparse
from typing import Any

from kafka_balancer.cli import CommandError
from kafka_balancer.cli.files import load_snapshot, read_json
from kafka_balancer.model import ClusterModel, ReassignmentPlan
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.log_dir_usage import DirLimits
from kafka_balancer.report import planned, write_report

HELP = "Write the HTML before/after report of a plan or an execution (per-broker charts)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--before", required=True, help="cluster snapshot JSON before the run")
    after = parser.add_mutually_exclusive_group(required=True)
    after.add_argument("--after", help="cluster snapshot JSON after the execution")
    after.add_argument("--plan", help="reassignment JSON to apply to --before (a dry run)")
    after.add_argument("--proposal", help="proposal JSON (kafka-balancer plan --proposal): its plan and summary")
    parser.add_argument("--summary", help="summary JSON (kafka-balancer plan --summary); overrides a proposal's")
    parser.add_argument("--title", default="kafka-balancer report", help="page title")
    defaults = DirLimits()
    parser.add_argument(
        "--capacity-threshold",
        type=float,
        default=defaults.capacity_threshold,
        help="flag a log directory above this share of its volume (goals.capacityThreshold)",
    )
    parser.add_argument(
        "--balance-threshold",
        type=float,
        default=defaults.balance_threshold,
        help="flag a log directory outside this band around its broker's average (goals.balanceThreshold)",
    )
    parser.add_argument("--output", required=True, help="where to write the HTML file")


def _after(args: argparse.Namespace, before: ClusterModel) -> tuple[ClusterModel, dict[str, Any]]:
    if args.after:
        return load_snapshot(args.after, "--after", "report"), {}
    if args.plan:
        return planned(before, ReassignmentPlan.from_dict(read_json(args.plan, "--plan"))), {}
    proposal = read_json(args.proposal, "--proposal")
    if not isinstance(proposal, dict) or "plan" not in proposal:
        raise ModelError(f"--proposal {args.proposal}: expected an object with a 'plan' field")
    summary = proposal.get("summary") or {}
    if not isinstance(summary, dict):
        raise ModelError(f"--proposal {args.proposal}: field 'summary' must be an object, got {summary!r}")
    return planned(before, ReassignmentPlan.from_dict(proposal["plan"])), summary


def run(args: argparse.Namespace) -> int:
    before = load_snapshot(args.before, "--before", "report")
    after, summary = _after(args, before)
    if args.summary:
        summary = read_json(args.summary, "--summary")
        if not isinstance(summary, dict):
            raise ModelError(f"--summary {args.summary}: expected a JSON object, got {type(summary).__name__}")
    try:
        limits = DirLimits(args.capacity_threshold, args.balance_threshold)
        path = write_report(args.output, before, after, summary, title=args.title, limits=limits)
    except OSError as err:
        raise CommandError(f"--output {args.output}: cannot write: {err.strerror or err}") from None
    print(f"report written to {path.resolve()}")
    return 0

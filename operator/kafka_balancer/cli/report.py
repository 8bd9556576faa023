"""`kafka-balancer report`: the HTML before/after report from snapshots, a plan or a proposal.

The "after" side is either a second snapshot (taken after an execution) or the first snapshot with a
plan applied (a dry run: what the plan would do). The summary comes from `kafka-balancer plan
--summary`/`--proposal` output, or is left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from kafka_balancer.model import ClusterModel, ReassignmentPlan
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.snapshot import loads_snapshot
from kafka_balancer.report import planned, write_report

HELP = "Write the HTML before/after report of a plan or an execution (per-broker charts)."
EXIT_INVALID = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--before", required=True, help="cluster snapshot JSON before the run")
    after = parser.add_mutually_exclusive_group(required=True)
    after.add_argument("--after", help="cluster snapshot JSON after the execution")
    after.add_argument("--plan", help="reassignment JSON to apply to --before (a dry run)")
    after.add_argument("--proposal", help="proposal JSON (kafka-balancer plan --proposal): its plan and summary")
    parser.add_argument("--summary", help="summary JSON (kafka-balancer plan --summary); overrides a proposal's")
    parser.add_argument("--title", default="kafka-balancer report", help="page title")
    parser.add_argument("--output", required=True, help="where to write the HTML file")


def _json(path: str, what: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ModelError(f"{what} {path}: not JSON: {err}") from None


def _after(args: argparse.Namespace, before: ClusterModel) -> tuple[ClusterModel, dict[str, Any]]:
    if args.after:
        return loads_snapshot(Path(args.after).read_text(encoding="utf-8")), {}
    if args.plan:
        return planned(before, ReassignmentPlan.from_dict(_json(args.plan, "--plan"))), {}
    proposal = _json(args.proposal, "--proposal")
    if not isinstance(proposal, dict) or "plan" not in proposal:
        raise ModelError(f"--proposal {args.proposal}: expected an object with a 'plan' field")
    summary = proposal.get("summary") or {}
    if not isinstance(summary, dict):
        raise ModelError(f"--proposal {args.proposal}: field 'summary' must be an object, got {summary!r}")
    return planned(before, ReassignmentPlan.from_dict(proposal["plan"])), summary


def run(args: argparse.Namespace) -> int:
    try:
        before = loads_snapshot(Path(args.before).read_text(encoding="utf-8"))
        after, summary = _after(args, before)
        if args.summary:
            summary = _json(args.summary, "--summary")
            if not isinstance(summary, dict):
                raise ModelError(f"--summary {args.summary}: expected a JSON object, got {type(summary).__name__}")
        path = write_report(args.output, before, after, summary, title=args.title)
    except (OSError, ModelError, ValueError) as err:
        print(f"kafka-balancer report: {err}", file=sys.stderr)
        return EXIT_INVALID
    print(f"report written to {path.resolve()}")
    return 0

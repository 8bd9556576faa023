"""`kafka-balancer plan`: compute a proposal from a cluster snapshot and (optionally) a BalancePolicy file.

Writes Kafka's reassignment JSON (usable as is by kafka-reassign-partitions.sh) and optionally the
summary. Exit 0 with a plan; exit 2 with the reason on invalid input or an unmet hard goal.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from kafka_balancer.analysis.report import (
    IncompleteSnapshotError,
    ReportError,
    check_completeness,
    load_report,
    report_path,
)
from kafka_balancer.model.cluster import ClusterModel
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.policy import BalancePolicy, ResourceGroup, parse_manifests
from kafka_balancer.model.snapshot import loads_snapshot
from kafka_balancer.planner import OPERATIONS, OperationOptions, PlannerOptions, PlanningError, Trace, plan
from kafka_balancer.planner.policy import options_from_policy

HELP = "Compute a balancing proposal from a cluster snapshot (and a BalancePolicy file)."
EXIT_INVALID = 2


def _ids(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated broker ids, got {text!r}") from None


def _names(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--snapshot", required=True, help="cluster snapshot JSON (cluster-snapshot.schema.json)")
    parser.add_argument("--policy", help="BalancePolicy manifest YAML (ResourceGroups may follow as more documents)")
    parser.add_argument("--resource-groups", help="YAML file with the ResourceGroup manifests the policy names")
    parser.add_argument("--operation", choices=OPERATIONS, help="override the policy's operation type")
    parser.add_argument("--brokers", type=_ids, help="broker ids for add/remove/demote-brokers, e.g. 12,13")
    parser.add_argument("--topics", type=_names, help="topics for change-replication-factor/move-topics/rebalance")
    parser.add_argument("--replication-factor", type=int, help="new replication factor (change-replication-factor)")
    parser.add_argument("--target-brokers", type=_ids, help="brokers to move topics onto (move-topics)")
    parser.add_argument("--target-group", help="ResourceGroup to move topics into (move-topics)")
    parser.add_argument("--output", required=True, help="where to write the reassignment JSON")
    parser.add_argument("--summary", help="where to write the summary JSON")
    parser.add_argument("--proposal", help="where to write the whole proposal (plan, leader changes, summary)")
    parser.add_argument(
        "--trace",
        nargs="?",
        const="-",
        metavar="FILE",
        help="record what each planner stage did (moves, bytes, goals out of band after it): a table on "
        "stdout, or JSON in FILE",
    )


def _policy(args: argparse.Namespace) -> tuple[BalancePolicy | None, list[ResourceGroup]]:
    if not args.policy:
        return None, []
    docs = list(yaml.safe_load_all(Path(args.policy).read_text(encoding="utf-8")))
    policies, groups = parse_manifests(docs)
    if args.resource_groups:
        _, more = parse_manifests(list(yaml.safe_load_all(Path(args.resource_groups).read_text(encoding="utf-8"))))
        groups += more
    if len(policies) != 1:
        raise ModelError(f"{args.policy}: expected exactly one BalancePolicy document, found {len(policies)}")
    return policies[0], groups


def _operation(args: argparse.Namespace, base: OperationOptions) -> OperationOptions:
    given = {
        "type": args.operation,
        "brokers": args.brokers,
        "topics": args.topics,
        "replication_factor": args.replication_factor,
        "target_brokers": args.target_brokers,
        "target_group": args.target_group,
    }
    changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if args.operation is not None and args.operation != base.type:
        base = OperationOptions()  # a different operation does not inherit the policy's parameters
    return dataclasses.replace(base, **changes)


def build_options(args: argparse.Namespace, model: ClusterModel) -> tuple[PlannerOptions, float]:
    policy, groups = _policy(args)
    if policy is None:
        options, min_completeness = PlannerOptions(), 0.0
    else:
        named = [(g.metadata.name, g.spec) for g in groups]
        options = options_from_policy(policy.spec, named, model)
        min_completeness = policy.spec.goals.min_completeness
    operation = _operation(args, options.operation)
    topics = options.topics
    if operation.type == "rebalance" and args.topics:
        topics, operation = args.topics, dataclasses.replace(operation, topics=())
    return dataclasses.replace(options, operation=operation, topics=topics), min_completeness


def run(args: argparse.Namespace) -> int:
    try:
        text = Path(args.snapshot).read_text(encoding="utf-8")
        model = loads_snapshot(text)
        options, min_completeness = build_options(args, model)
        report = report_path(args.snapshot)
        if min_completeness > 0:
            if not report.exists():
                raise ModelError(
                    f"goals.minCompleteness is {min_completeness} but the snapshot has no analysis report ({report})"
                )
            check_completeness(load_report(report), min_completeness)
        trace = Trace() if args.trace else None
        started = time.perf_counter()
        proposal = plan(model, options, trace=trace)
        seconds = time.perf_counter() - started
    except (OSError, ModelError, PlanningError, ReportError, IncompleteSnapshotError, yaml.YAMLError) as err:
        print(f"kafka-balancer plan: {err}", file=sys.stderr)
        return EXIT_INVALID
    Path(args.output).write_text(proposal.plan.dumps(indent=2) + "\n", encoding="utf-8")
    summary = dict(proposal.summary)
    summary["planningSeconds"] = round(seconds, 3)
    if args.summary:
        Path(args.summary).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if args.proposal:
        Path(args.proposal).write_text(proposal.dumps(indent=2) + "\n", encoding="utf-8")
    print(
        f"proposal {proposal.id}: {summary['moves']} replica moves, {summary['bytesToMove']:.0f} bytes, "
        f"{summary['leaderChanges']} leader changes, balancedness {summary['balancednessBefore']} -> "
        f"{summary['balancednessAfter']} in {seconds:.2f} s"
    )
    if trace is not None:
        _write_trace(trace, args.trace)
    return 0


def _write_trace(trace: Trace, where: str) -> None:
    """The trace as a table on stdout (``-``), or as JSON in the file named."""
    if where == "-":
        print(trace.table())
    else:
        steps = [step.to_dict() for step in trace.steps]
        Path(where).write_text(json.dumps({"stages": steps}, indent=2) + "\n", encoding="utf-8")

"""`kafka-balancer plan`: compute a proposal from a cluster snapshot and (optionally) a BalancePolicy file.

Writes Kafka's reassignment JSON (usable as is by kafka-reassign-partitions.sh) and optionally the
summary. Exit 0 with a plan; exit 2 with the reason on invalid input or an unmet hard goal.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from typing import Any

from kafka_balancer.analysis.report import (
    IncompleteSnapshotError,
    ReportError,
    check_completeness,
    load_report,
    report_path,
)
from kafka_balancer.cli import CommandError
from kafka_balancer.cli.arguments import integer, number
from kafka_balancer.cli.files import load_snapshot, read_input, write_output
from kafka_balancer.model.cluster import ClusterModel
from kafka_balancer.model.documents import MAX_MANIFEST_BYTES, loads_manifests
from kafka_balancer.model.errors import ModelError
from kafka_balancer.model.limits import INT32_MAX, shown
from kafka_balancer.model.policy.fields import DEFAULT_MAX_PLANNING_SECONDS, MAX_PLANNING_SECONDS_LIMIT
from kafka_balancer.model.policy.operations import REBALANCE
from kafka_balancer.model.policy.parsing import BalancePolicy, ResourceGroup, parse_manifests
from kafka_balancer.planner import OPERATIONS, OperationOptions, PlannerOptions, PlanningError, Trace, plan
from kafka_balancer.planner.policy import options_from_policy

HELP = "Compute a balancing proposal from a cluster snapshot (and a BalancePolicy file)."


def _ids(text: str) -> tuple[int, ...]:
    try:
        ids = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated broker ids, got {shown(text)}") from None
    if any(not 0 <= b <= INT32_MAX for b in ids):
        raise argparse.ArgumentTypeError(f"broker ids must be within 0..{INT32_MAX}, got {shown(text)}")
    return ids


def _log_dirs(text: str) -> tuple[tuple[int, str], ...]:
    """``BROKER:PATH,...`` (remove-disks), e.g. ``1:/var/lib/kafka/data-0,2:/var/lib/kafka/data-0``."""
    out = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        broker, sep, path = item.partition(":")
        if not sep or not broker.strip().isdigit() or not path.startswith("/"):
            raise argparse.ArgumentTypeError(f"expected BROKER:/absolute/path entries, got {shown(item)}")
        out.append((_ids(broker)[0], path))
    return tuple(out)


def _names(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--snapshot", required=True, help="cluster snapshot JSON (cluster-snapshot.schema.json)")
    parser.add_argument("--policy", help="BalancePolicy manifest YAML (ResourceGroups may follow as more documents)")
    parser.add_argument("--resource-groups", help="YAML file with the ResourceGroup manifests the policy names")
    parser.add_argument("--operation", choices=OPERATIONS, help="override the policy's operation type")
    parser.add_argument("--brokers", type=_ids, help="broker ids for add/remove/demote-brokers, e.g. 12,13")
    parser.add_argument("--topics", type=_names, help="topics for change-replication-factor/move-topics/rebalance")
    parser.add_argument("--replication-factor", type=integer, help="new replication factor (change-replication-factor)")
    parser.add_argument("--target-brokers", type=_ids, help="brokers to move topics onto (move-topics)")
    parser.add_argument("--target-group", help="ResourceGroup to move topics into (move-topics)")
    parser.add_argument(
        "--log-dirs", type=_log_dirs, help="log directories to empty (remove-disks), e.g. 1:/data/0,2:/data/0"
    )
    parser.add_argument("--output", required=True, help="where to write the reassignment JSON")
    parser.add_argument("--summary", help="where to write the summary JSON")
    parser.add_argument("--proposal", help="where to write the whole proposal (plan, leader changes, summary)")
    parser.add_argument(
        "--max-seconds",
        type=number,
        help="the planner's time budget (overrides the policy's goals.maxPlanningSeconds, default "
        f"{DEFAULT_MAX_PLANNING_SECONDS:g}): then the best plan found that holds every hard goal",
    )
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
    policies, groups = parse_manifests(_manifests(args.policy, "--policy"))
    if args.resource_groups:
        _, more = parse_manifests(_manifests(args.resource_groups, "--resource-groups"))
        groups += more
    if len(policies) != 1:
        raise ModelError(f"{args.policy}: expected exactly one BalancePolicy document, found {len(policies)}")
    return policies[0], groups


def _manifests(path: str, option: str) -> list[Any]:
    return loads_manifests(read_input(path, option, limit=MAX_MANIFEST_BYTES), f"{option} {path}")


def _operation(args: argparse.Namespace, base: OperationOptions) -> OperationOptions:
    given = {
        "type": args.operation,
        "brokers": args.brokers,
        "topics": args.topics,
        "replication_factor": args.replication_factor,
        "target_brokers": args.target_brokers,
        "target_group": args.target_group,
        "log_dirs": args.log_dirs,
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
    if operation.kind is REBALANCE and args.topics:
        topics, operation = args.topics, dataclasses.replace(operation, topics=())
    budget = options.max_planning_seconds if args.max_seconds is None else args.max_seconds
    if not 0 < budget <= MAX_PLANNING_SECONDS_LIMIT:
        raise CommandError(f"--max-seconds must be in (0, {MAX_PLANNING_SECONDS_LIMIT:g}], got {budget:g}")
    replaced = dataclasses.replace(options, operation=operation, topics=topics, max_planning_seconds=budget)
    return replaced, min_completeness


def run(args: argparse.Namespace) -> int:
    try:
        model = load_snapshot(args.snapshot, "--snapshot", "plan")
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
    except (PlanningError, ReportError, IncompleteSnapshotError) as err:
        raise CommandError(str(err)) from None
    write_output(args.output, proposal.plan.dumps(indent=2) + "\n", "--output")
    summary = dict(proposal.summary)
    summary["planningSeconds"] = round(seconds, 3)
    if args.summary:
        write_output(args.summary, json.dumps(summary, indent=2, sort_keys=True) + "\n", "--summary")
    if args.proposal:
        write_output(args.proposal, proposal.dumps(indent=2) + "\n", "--proposal")
    print(
        f"proposal {proposal.id}: {summary['moves']} replica moves, {summary['bytesToMove']:.0f} bytes, "
        f"{summary['leaderChanges']} leader changes, balancedness {summary['balancednessBefore']} -> "
        f"{summary['balancednessAfter']} in {seconds:.2f} s"
    )
    _print_caveats(summary)
    if trace is not None:
        _write_trace(trace, args.trace)
    return 0


def _print_caveats(summary: dict[str, Any]) -> None:
    """What the summary says the plan could not do: stopped by its time budget, goals left worse."""
    reached = summary.get("timeBudgetReached")
    if reached is not None:
        print(
            f"time budget of {reached['seconds']:g} s reached in stage {reached['stage']}: every hard goal holds; "
            f"out of band: {', '.join(summary['goalsViolated']) or 'none'}"
        )
    worsened = summary.get("goalsWorsenedByHardGoals")
    if worsened:
        print(f"left worse by the hard goals (replicas off dead brokers, hard goals repaired): {', '.join(worsened)}")


def _write_trace(trace: Trace, where: str) -> None:
    """The trace as a table on stdout (``-``), or as JSON in the file named."""
    if where == "-":
        print(trace.table())
    else:
        steps = [step.to_dict() for step in trace.steps]
        write_output(where, json.dumps({"stages": steps}, indent=2) + "\n", "--trace")

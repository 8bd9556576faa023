"""`kafka-balancer audit`: topics that can lose acknowledged data and partitions at risk now.

kafka-balancer audit --bootstrap-servers HOST:PORT [--json] [--fail-on-findings]
kafka-balancer audit --snapshot cluster.json [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_balancer.cli import CommandError
from kafka_balancer.cli.arguments import integer
from kafka_balancer.cli.consumers import add_connection_arguments, open_port, render_table
from kafka_balancer.cli.files import load_snapshot

if TYPE_CHECKING:
    from kafka_balancer.durability import AuditReport

HELP = "Durability audit: RF < 3, min.insync.replicas < 2 or >= RF, unclean election; partitions at risk."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--snapshot", type=Path, help="audit a cluster snapshot file instead of a live cluster")
    parser.add_argument(
        "--default-min-insync-replicas",
        type=integer,
        default=1,
        help="snapshot: broker default for topics without the setting (Kafka's default: 1)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--fail-on-findings", action="store_true", help="exit 1 when anything is flagged")
    add_connection_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from kafka_balancer.durability import AuditOptions, audit  # noqa: PLC0415

    if args.default_min_insync_replicas < 1:
        raise CommandError(f"--default-min-insync-replicas must be >= 1, got {args.default_min_insync_replicas}")
    options = AuditOptions(default_min_insync_replicas=args.default_min_insync_replicas)
    if args.snapshot is not None:
        report = audit(load_snapshot(args.snapshot, "--snapshot", "audit"), None, options)
    else:
        from kafka_balancer.analysis.audit import audit_cluster  # noqa: PLC0415

        port = open_port(args)
        try:
            _model, report = audit_cluster(port, options)
        finally:
            port.close()
    if args.json:
        json.dump(report.to_dict(), sys.stdout, indent=2)
        print()
    else:
        print(render(report))
    findings = bool(report.flagged) or report.at_risk_total > 0
    return 1 if args.fail_on_findings and findings else 0


def render(report: AuditReport) -> str:
    out = [f"{len(report.topics)} topics audited, {len(report.flagged)} flagged, "
           f"{report.at_risk_total} partitions at risk now"]  # fmt: skip
    if report.flagged:
        rows = [
            [t.name, str(t.replication_factor), str(t.min_insync_replicas),
             str(t.unclean_leader_election).lower(), ", ".join(t.flags)]
            for t in report.flagged
        ]  # fmt: skip
        out.append("\n" + render_table(["TOPIC", "RF", "MIN.ISR", "UNCLEAN", "FLAGS"], rows))
    if report.at_risk:
        # Listed by ISR state, worst first, then ELR state (KIP-966): "none" where no replica is eligible.
        rows = [
            [f"{p.topic}-{p.partition}", ",".join(map(str, p.replicas)), ",".join(map(str, p.isr)),
             "none" if p.leader is None else str(p.leader), p.isr_state, _elr(p.elr), ", ".join(p.risks)]
            for p in report.at_risk
        ]  # fmt: skip
        out.append("\n" + render_table(["PARTITION", "REPLICAS", "ISR", "LEADER", "ISR STATE", "ELR", "RISKS"], rows))
        if report.at_risk_total > len(report.at_risk):
            out.append(f"... and {report.at_risk_total - len(report.at_risk)} more")
    return "\n".join(out)


def _elr(elr: tuple[int, ...] | None) -> str:
    """Eligible leader replicas: their ids, ``none``, or ``-`` where the cluster did not report them."""
    if elr is None:
        return "-"
    return ",".join(map(str, elr)) or "none"

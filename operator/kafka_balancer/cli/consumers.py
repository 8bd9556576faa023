"""`kafka-balancer consumers`: consumer-group balance of a live cluster, or an offline what-if.

kafka-balancer consumers --bootstrap-servers HOST:PORT [--top N] [--json]
kafka-balancer consumers simulate --group G.json [--json] [--new-member ID]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_balancer.cli import EXIT_INVALID, CommandError
from kafka_balancer.cli.arguments import integer, number
from kafka_balancer.cli.files import load_snapshot, read_json

if TYPE_CHECKING:
    from kafka_balancer.analysis.consumer_groups import GroupsInput
    from kafka_balancer.kafka.connection import ConnectionSpec
    from kafka_balancer.kafka.port import KafkaPort

HELP = "Consumer-group balance: every assignor simulated, churn when members leave or join, a recommendation."


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """Connection options shared by the commands that talk to a live cluster."""
    parser.add_argument("--bootstrap-servers", help="HOST:PORT[,HOST:PORT...] of the cluster")
    parser.add_argument("--security-protocol", default="PLAINTEXT", help="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
    parser.add_argument("--sasl-mechanism", help="PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
    parser.add_argument("--username", help="SASL user name")
    parser.add_argument(
        "--password-env", default="KAFKA_PASSWORD", help="environment variable holding the SASL password"
    )
    parser.add_argument("--ca-file", help="CA certificate (PEM) for SSL")
    parser.add_argument(
        "--request-timeout",
        type=number,
        default=30.0,
        help="seconds to wait for the cluster to answer a request (default 30); unreachable, the command exits 1",
    )


def open_port(args: argparse.Namespace) -> KafkaPort:
    """A client of the cluster the connection options name."""
    from kafka_balancer.kafka.adapter import KafkaAdapter  # noqa: PLC0415 - loads the client libraries

    port: KafkaPort = KafkaAdapter(connection_spec(args))
    return port


def connection_spec(args: argparse.Namespace) -> ConnectionSpec:
    from kafka_balancer.kafka.connection import ConnectionSpec  # noqa: PLC0415

    if not args.bootstrap_servers:
        raise CommandError("--bootstrap-servers is required")
    try:
        spec = ConnectionSpec(
            bootstrap_servers=args.bootstrap_servers,
            security_protocol=args.security_protocol,
            sasl_mechanism=args.sasl_mechanism,
            username=args.username,
            password=os.environ.get(args.password_env),
            ca_path=args.ca_file,
            request_timeout_s=args.request_timeout,
        )
    except ValueError as err:
        raise CommandError(str(err)) from None
    return spec


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=["simulate"], help="simulate: offline what-if on a G.json file")
    parser.add_argument("--group", type=Path, help="simulate: the group file (topics, members, optional assignment)")
    parser.add_argument("--new-member", default="new-member", help="simulate: id of the member that joins")
    parser.add_argument(
        "--max-leavers",
        type=integer,
        default=50,
        help="simulate: members whose departure is simulated, evenly spread (default 50; 0 = every member)",
    )
    parser.add_argument("--top", type=integer, default=20, help="live: show the N most imbalanced groups")
    parser.add_argument("--snapshot", type=Path, help="live: analysed snapshot with message rates per partition")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--spark-threshold",
        type=integer,
        default=1000,
        help="live: analyse on Spark from this many groups on (default 1000; below it, in-process)",
    )
    parser.add_argument("--engine", choices=("local", "connect"), default="local", help="live: Spark engine")
    parser.add_argument("--engine-url", help="live: local[N] master, or sc://host:15002 for Spark Connect")
    add_connection_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if args.action == "simulate":
        return _simulate(args)
    return _live(args)


# ----- offline what-if ----------------------------------------------------------------------------
def _simulate(args: argparse.Namespace) -> int:
    from kafka_balancer.consumers import parse_group, simulate  # noqa: PLC0415
    from kafka_balancer.consumers.group import claimed_twice  # noqa: PLC0415
    from kafka_balancer.model.errors import ModelError  # noqa: PLC0415

    if args.group is None:
        raise CommandError("simulate: --group G.json is required")
    if args.max_leavers < 0:
        raise CommandError(f"simulate: --max-leavers must be >= 0, got {args.max_leavers}")
    data = read_json(args.group, "--group")
    try:
        spec = parse_group(data)
    except ModelError as err:
        raise CommandError(f"simulate: --group {args.group}: {err}") from None
    for warning in claimed_twice(spec):
        print(f"consumers: warning: --group {args.group}: {warning}", file=sys.stderr)
    try:
        result = simulate(spec, new_member=args.new_member, max_leavers=args.max_leavers)
    except ModelError as err:
        raise CommandError(f"simulate: --group {args.group}: {err}") from None
    except ValueError as err:  # the only other input simulate refuses: a newcomer id already taken
        raise CommandError(f"simulate: --new-member {args.new_member}: {err}") from None
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print(render_simulation(result))
    return 0


def _fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def render_table(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell, two spaces apart (also used by `kafka-balancer audit`)."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    return "\n".join(lines)


def render_simulation(result: dict[str, Any]) -> str:
    rows = []
    for name, res in result["assignors"].items():
        leaves = res["churnIfMemberLeaves"].values()
        worst = max(leaves, key=lambda v: (v["moved"], v["movedBeyondLeaver"]), default=None)
        bal = res["balance"]
        rows.append(
            [
                name,
                _fmt_ratio(bal["imbalanceRatio"]),
                f"{bal['maxPartitions']}/{bal['minPartitions']}",
                _fmt_ratio(bal.get("lagImbalanceRatio")),
                "-" if worst is None else f"{worst['moved']} ({worst['movedBeyondLeaver']} extra)",
                str(res["churnIfMemberJoins"]["moved"]),
                str(res.get("movesFromCurrent", "-")),
            ]
        )
    out = [
        render_table(
            ["ASSIGNOR", "IMBALANCE", "MAX/MIN", "LAG-IMB", "LEAVE-MOVES(WORST)", "JOIN-MOVES", "FROM-CURRENT"], rows
        )
    ]
    for name, res in result["assignors"].items():
        out.append(f"\n{name}:")
        for member, topics in res["assignment"].items():
            parts = " ".join(f"{t}:{','.join(map(str, ps))}" for t, ps in topics.items()) or "(none)"
            out.append(f"  {member}: {parts}")
    sample = result["leaversSimulated"]
    if sample["simulated"] < sample["members"]:
        out.append(f"\nleave churn: {sample['simulated']} of {sample['members']} members simulated (--max-leavers)")
    rec = result["recommendation"]
    switch = rec["switch"]
    cost = "" if switch["partitionsMoved"] is None else f", {switch['partitionsMoved']} partitions change owner"
    out.append(
        f"\nrecommended: {rec['assignor']} ({rec['reason']}); switching takes "
        f"{switch['rollingBounces']} rolling restart(s){cost}"
    )
    return "\n".join(out)


# ----- live cluster -------------------------------------------------------------------------------
def _live(args: argparse.Namespace) -> int:
    from kafka_balancer.analysis.consumer_groups import collect, most_imbalanced, skipped  # noqa: PLC0415

    if args.group is not None:
        raise CommandError(f"--group {args.group} is for the offline what-if: `consumers simulate --group`")
    if args.top < 1:
        raise CommandError(f"--top must be >= 1, got {args.top}")
    if args.spark_threshold < 1:
        raise CommandError(f"--spark-threshold must be >= 1, got {args.spark_threshold}")
    model = None if args.snapshot is None else load_snapshot(args.snapshot, "--snapshot", "consumers")
    port = open_port(args)
    try:
        data = collect(port, model)
    finally:
        port.close()
    reports = _analyze(data, args)
    refused = skipped(data)
    top = most_imbalanced(reports, args.top)
    # The other groups are still reported; each refused one gets one line and the status says the
    # report is incomplete.
    for group, reason in refused.items():
        print(f"consumers: group {group!r} skipped: {reason}", file=sys.stderr)
    status = EXIT_INVALID if refused else 0
    if args.json:
        by_group = {r["group"]: r for r in reports}
        skipped_list = [{"group": g, "reason": r} for g, r in refused.items()]
        json.dump({"groups": [by_group[t["group"]] for t in top], "skipped": skipped_list}, sys.stdout, indent=2)
        print()
        return status
    rows = [
        [
            r["group"],
            r["state"],
            r["assignor"] or "-",
            str(r["members"]),
            str(r["partitions"]),
            f"{r['maxPartitions']}/{r['minPartitions']}",
            _fmt_ratio(r["imbalanceRatio"]),
            str(int(r["totalLag"])),
            _fmt_ratio(r["lagImbalanceRatio"]),
            r["recommendation"]["assignor"],
        ]
        for r in (next(x for x in reports if x["group"] == t["group"]) for t in top)
    ]
    header = ["GROUP", "STATE", "ASSIGNOR", "MEMBERS", "PARTITIONS", "MAX/MIN", "IMBALANCE", "LAG", "LAG-IMB"]
    if rows or not refused:
        print(render_table([*header, "RECOMMENDED"], rows) if rows else "no consumer groups with members")
    return status


def _analyze(data: GroupsInput, args: argparse.Namespace) -> list[dict[str, Any]]:
    """In-process below the threshold; otherwise on Spark (pyspark is imported only then)."""
    from kafka_balancer.analysis.consumer_groups import analyze_python  # noqa: PLC0415

    if len(data.groups) < args.spark_threshold:
        return analyze_python(data)
    from kafka_balancer.analysis.consumer_groups import analyze_spark  # noqa: PLC0415
    from kafka_balancer.analysis.spark import EngineConfig, EngineError, get_session  # noqa: PLC0415

    try:
        engine = EngineConfig(type=args.engine, url=args.engine_url)
    except EngineError as err:
        raise CommandError(str(err)) from None
    # The session is process-wide (as for `analyze`): it ends with the process.
    return analyze_spark(data, get_session(engine))

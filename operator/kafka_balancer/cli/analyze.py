"""`kafka-balancer analyze`: samples in a time range -> load snapshot (+ analysis report) on Spark.

Exit status: 0 written, 2 bad input (unreadable store, wrong schema, empty range, unknown broker),
3 the snapshot was written but its completeness is below ``--min-completeness``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kafka_balancer.cli.arguments import integer, number
from kafka_balancer.cli.files import read_json
from kafka_balancer.model.limits import INT32_MAX, check_amount, shown

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

HELP = "Build a load snapshot from stored samples on Spark (local, Spark Connect or in a driver pod)."


def parse_duration(text: str, field: str) -> float:
    """``90``, ``60s``, ``5m``, ``1h``, ``7d`` -> seconds; the error names the option and the value."""
    match = _DURATION.match(text.strip())
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"{field}: must be a positive duration like 60s, 5m, 1h or 7d, got {text!r}")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def parse_time(text: str, field: str, *, now: datetime | None = None) -> datetime:
    """ISO 8601 (UTC when no zone is given), ``now`` or ``now-<duration>``."""
    now = now or datetime.now(UTC)
    value = text.strip()
    if value == "now":
        return now
    if value.startswith("now-"):
        return now - timedelta(seconds=parse_duration(value[4:], field))
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"{field}: must be an ISO 8601 time (2026-11-21T10:00:00Z), 'now' or 'now-1h', got {text!r}"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--samples", required=True, help="sample store: a path, file://, s3a://... URL")
    parser.add_argument("--cluster", help="cluster name in the store (default: the only one there)")
    parser.add_argument("--from", dest="start", default="now-1h", help="start of the range (ISO 8601, now-1h)")
    parser.add_argument("--to", dest="end", default="now", help="end of the range (ISO 8601, now)")
    parser.add_argument("--output", required=True, help="where to write the snapshot JSON")
    parser.add_argument("--window", default="5m", help="rate window (default 5m)")
    parser.add_argument("--statistic", choices=("p95", "avg"), default="p95", help="load statistic (default p95)")
    parser.add_argument(
        "--min-windows", type=integer, default=1, help="windows with rates a partition needs (default 1)"
    )
    parser.add_argument("--min-completeness", type=number, default=0.0, help="exit 3 when completeness is below")
    parser.add_argument(
        "--group", action="append", default=[], metavar="NAME=ID,ID", help="resource group for statistics (repeat)"
    )
    parser.add_argument("--capacity", help='JSON file: {"default": {"diskBytes": ...}, "brokers": {"1": {...}}}')
    parser.add_argument(
        "--engine",
        choices=("local", "connect", "sparkApplication"),
        default="local",
        help="Spark engine: local (default), connect (Spark Connect), sparkApplication (inside a driver pod)",
    )
    parser.add_argument("--engine-url", help="local[N] master, or sc://host:15002 for Spark Connect")


def _groups(specs: list[str]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for spec in specs:
        name, _, ids = spec.partition("=")
        try:
            groups[name] = [int(x) for x in ids.split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"--group: must be NAME=ID,ID..., got {spec!r}") from None
        if not name or not groups[name] or not all(0 <= b <= INT32_MAX for b in groups[name]):
            raise ValueError(f"--group: must be NAME=ID,ID..., got {spec!r}")
    return groups


def _capacity(path: str | None) -> tuple[Any, dict[int, Any]]:
    from kafka_balancer.analysis.load import BrokerCapacity  # noqa: PLC0415 (keeps --help free of pyspark)

    if path is None:
        return None, {}
    data = read_json(path, "--capacity")
    if not isinstance(data, dict) or set(data) - {"default", "brokers"}:
        raise ValueError(f"--capacity {path}: must be an object with fields default, brokers, got {shown(data)}")
    keys = {
        "diskBytes": "disk_bytes",
        "networkInBytesPerSec": "network_in_bytes_per_sec",
        "networkOutBytesPerSec": "network_out_bytes_per_sec",
        "cpuCores": "cpu_cores",
    }

    def one(entry: Any, where: str) -> BrokerCapacity:
        if not isinstance(entry, dict) or set(entry) - set(keys):
            raise ValueError(f"--capacity {where}: must be an object with fields {', '.join(keys)}, got {entry!r}")
        for key, value in entry.items():
            if check_amount(value, f"--capacity {where}", key) <= 0:
                raise ValueError(f"--capacity {where}: field '{key}' must be a number > 0, got {value!r}")
        return BrokerCapacity(**{keys[k]: float(v) for k, v in entry.items()})

    default = one(data["default"], "default") if "default" in data else None
    brokers = data.get("brokers") or {}
    if not isinstance(brokers, dict) or not all(b.isdigit() and int(b) <= INT32_MAX for b in brokers):
        raise ValueError(f"--capacity {path}: field 'brokers' must map broker ids to capacities, got {shown(brokers)}")
    return default, {int(b): one(e, f"brokers.{b}") for b, e in brokers.items()}


def run(args: argparse.Namespace) -> int:
    from kafka_balancer.analysis.analyze import analyze  # noqa: PLC0415 (imports pyspark)
    from kafka_balancer.analysis.load import AnalysisError, LoadOptions  # noqa: PLC0415
    from kafka_balancer.analysis.report import IncompleteSnapshotError, check_completeness, write_report  # noqa: PLC0415
    from kafka_balancer.analysis.samples import SampleSchemaError  # noqa: PLC0415
    from kafka_balancer.analysis.spark import EngineConfig, EngineError  # noqa: PLC0415
    from kafka_balancer.analysis.store import SampleStore, StoreError  # noqa: PLC0415
    from kafka_balancer.model import ModelError  # noqa: PLC0415

    try:
        now = datetime.now(UTC)
        start, end = parse_time(args.start, "--from", now=now), parse_time(args.end, "--to", now=now)
        window = parse_duration(args.window, "--window")
        if args.min_windows < 1:
            raise ValueError(f"--min-windows: must be >= 1, got {args.min_windows}")
        if not 0.0 <= args.min_completeness <= 1.0:
            raise ValueError(f"--min-completeness: must be in 0..1, got {args.min_completeness}")
        default_capacity, capacity = _capacity(args.capacity)  # the inputs first: refused before any work
        groups = _groups(args.group)
        engine = EngineConfig(type=args.engine, url=args.engine_url)
        store = SampleStore(args.samples)
        cluster = args.cluster
        if cluster is None:
            known = store.clusters()
            if len(known) != 1:
                raise ValueError(
                    f"--cluster: the store {args.samples!r} holds {len(known)} clusters"
                    f" ({', '.join(known) or 'none'}); name one"
                )
            cluster = known[0]
        options = LoadOptions(
            cluster=cluster,
            statistic=args.statistic,
            window_seconds=int(window),
            min_windows=args.min_windows,
            groups=groups,
            capacity=capacity,
            default_capacity=default_capacity,
        )
        result = analyze(store, start, end, options, engine)
    except (StoreError, SampleSchemaError, AnalysisError, ModelError, EngineError, ValueError) as err:
        print(f"kafka-balancer analyze: error: {err}", file=sys.stderr)
        return 2
    output = Path(args.output)
    output.write_text(json.dumps(result.snapshot, indent=1) + "\n", encoding="utf-8")
    report_file = write_report(result.report, output)
    report = result.report
    print(
        f"wrote {output} ({report['partitionsTotal']} partitions, {len(result.snapshot['brokers'])} brokers,"
        f" {report['samples']} samples, completeness {report['completeness']:.3f},"
        f" {report['corruptFiles']} corrupt files skipped) and {report_file}"
    )
    try:
        check_completeness(report, args.min_completeness)
    except IncompleteSnapshotError as err:
        print(f"kafka-balancer analyze: {err}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    # A SparkApplication's mainApplicationFile points at this file: the driver pod runs `analyze`.
    from kafka_balancer.cli import main

    sys.exit(main(["analyze", *sys.argv[1:]]))

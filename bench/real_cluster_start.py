"""From no Kafka jars to a ready real cluster: `make kafka` on a clean folder, storage format, JVM start.

    .venv/bin/python -m bench.real_cluster_start [--brokers 3,6] [--runs 3] [--cold-maven]

Each run fetches the jars with the Makefile's own recipe into a fresh temporary folder
(``make kafka KAFKA_DIR=<tmp> KAFKA_VERSIONS=<KAFKA_VERSION>``, so the repository's build/kafka is left
alone), then, for each
broker count, writes the configs and formats the storage of every node (kafka.tools.StorageTool, all
nodes at once), then starts the controller and broker JVMs and waits until DescribeCluster lists every
broker (kafka_balancer.sandbox.real, what `kafka-balancer sandbox --real` and the tests run). Maven's
local repository is the user's (~/.m2: warm after the first fetch on a machine) unless ``--cold-maven``
gives each run an empty one, which downloads every jar from Maven Central again (a fresh machine).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from kafka_balancer.sandbox.ports import free_port_range
from kafka_balancer.sandbox.real import KAFKA_VERSION, RealCluster, RealClusterOptions

ROOT = Path(__file__).resolve().parents[1]


def fetch(folder: Path, *, cold_maven: bool) -> float:
    """`make kafka` into ``folder``; the seconds it took (with ``cold_maven``, what Maven downloaded is
    printed, which shows that the repository really started empty)."""
    env = dict(os.environ)
    if cold_maven:
        env["MAVEN_OPTS"] = f"{env.get('MAVEN_OPTS', '')} -Dmaven.repo.local={folder / 'm2'}".strip()
    command = ["make", "-s", "-C", str(ROOT), "kafka", f"KAFKA_DIR={folder}", f"KAFKA_VERSIONS={KAFKA_VERSION}"]
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"make kafka failed ({done.returncode}): {(done.stdout + done.stderr)[-2000:]}")
    seconds = time.monotonic() - started
    if cold_maven:
        files = [f for f in (folder / "m2").rglob("*") if f.is_file()]
        print(f"     Maven downloaded {len(files)} files, {sum(f.stat().st_size for f in files) / 1e6:.0f} MB")
    return seconds


def start(libs: Path, brokers: int) -> tuple[float, float]:
    """Format, then start and wait for registration; the seconds of each (the cluster is stopped after)."""
    options = RealClusterOptions(
        brokers=brokers, racks=min(3, brokers), port_base=free_port_range(brokers + 1), kafka_libs=libs
    )
    cluster = RealCluster(options)
    try:
        started = time.monotonic()
        # start() formats what is not formatted yet; doing it first, apart, times the two steps.
        cluster.prepare()
        formatted = time.monotonic()
        cluster.start()
        return formatted - started, time.monotonic() - formatted
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.real_cluster_start", description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", default="3,6", help="comma-separated broker counts")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cold-maven", action="store_true", help="an empty Maven repository for every fetch")
    args = parser.parse_args()
    counts = [int(n) for n in args.brokers.split(",")]
    figures: dict[str, list[float]] = {"fetch": []}
    for n in counts:
        figures |= {f"format {n}": [], f"start {n}": [], f"total {n}": []}
    columns = "  ".join(f"{'format ' + str(n):>9}  {'start ' + str(n):>8}" for n in counts)
    print(f"{'run':>3}  {'make kafka':>10}  {columns}")
    for run in range(1, args.runs + 1):
        folder = Path(tempfile.mkdtemp(prefix="kafka-fetch-"))
        try:
            fetched = fetch(folder, cold_maven=args.cold_maven)
            figures["fetch"].append(fetched)
            cells = []
            for n in counts:
                formatted, started = start(folder / KAFKA_VERSION / "libs", n)
                figures[f"format {n}"].append(formatted)
                figures[f"start {n}"].append(started)
                figures[f"total {n}"].append(fetched + formatted + started)
                cells.append(f"{formatted:9.1f}  {started:8.1f}")
            print(f"{run:3d}  {fetched:10.1f}  " + "  ".join(cells), flush=True)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    maven = "an empty Maven repository each" if args.cold_maven else "the user's Maven repository"
    print(f"seconds, median (min-max) over {args.runs} runs, {maven}")
    for name, values in figures.items():
        print(f"  {name:10s} {statistics.median(values):6.1f} ({min(values):.1f}-{max(values):.1f})")


if __name__ == "__main__":
    main()

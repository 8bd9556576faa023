"""How long `kafka-balancer demo` takes, end to end, as a newcomer runs it (the demo tests assert what it
shows and that nothing is left behind; the time is this benchmark's).

    .venv/bin/python -m bench.demo [--runs 1] [--only quick,real]

``quick`` is the emulated demo as tests/demo/test_demo.py runs it (--emulated --size-scale 0.25
--time-scale 200); ``real`` is `make demo` (real Kafka brokers). Each run is a process of its own; the
figures are wall time and the CPU time of the demo and everything it started (user + sys of its children),
with the load average, since wall time on a shared machine is inflated by the others.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = str(Path(sys.executable).parent / "kafka-balancer")
KINDS = {
    "quick": ["--emulated", "--size-scale", "0.25", "--time-scale", "200"],
    "real": [],
}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(kind: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix=f"bench-demo-{kind}-") as scratch:
        cpu, started = _children_cpu(), time.monotonic()
        done = subprocess.run(
            [CLI, "demo", "--report-dir", scratch, *KINDS[kind]], capture_output=True, text=True, check=False
        )
        wall, cpu = time.monotonic() - started, _children_cpu() - cpu
    if done.returncode != 0:
        sys.exit(f"demo {kind} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--only", default="quick,real", help="comma-separated: " + ", ".join(KINDS))
    args = parser.parse_args()
    for kind in [k.strip() for k in args.only.split(",") if k.strip()]:
        if kind not in KINDS:
            parser.error(f"--only: unknown demo {kind!r}")
        figures = [run(kind) for _ in range(args.runs)]
        walls, cpus = [w for w, _ in figures], [c for _, c in figures]
        print(
            f"demo {kind}: {statistics.median(walls):.1f} s wall (runs {', '.join(f'{w:.1f}' for w in walls)}), "
            f"{statistics.median(cpus):.1f} s CPU of the demo and its processes, "
            f"load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

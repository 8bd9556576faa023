"""`kafka-balancer demo --emulated` end to end, as a newcomer runs it: a subprocess, its terminal output, its
report (the demo on real brokers, the default: test_demo_real.py).

The emulated demo starts the Kafka emulator, a Kubernetes API emulator and the real operator (kopf, a process
of its own); these tests read only what a person sees (stdout, stderr, the HTML file) and then check
that nothing the demo started is still running or listening. Smaller data (--size-scale) keeps the
copy phase short; the shape of the cluster and every step are the same as `make demo`.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from kafka_balancer.cli.demo_kubectl import KUBECTL

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

CLI = str(Path(sys.executable).parent / "kafka-balancer")
REPO = Path(__file__).resolve().parents[2]
QUICK = ["--emulated", "--size-scale", "0.25", "--time-scale", "200"]
ROW = re.compile(r"^\s+(\d+)\s+(rack-\w)\s+(\w+)\s+(\d+)\s+(\d+)\s+([\d,.]+)\s+([\d,.]+)\s+([\d,.]+)$")
SPREAD = re.compile(r"^max/avg\s+(\w+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$")


def _section(out: str, title: str) -> str:
    start = out.index(f"==> {title}")
    end = out.find("==> ", start + 4)
    return out[start : end if end > 0 else len(out)]


def _table(section: str) -> tuple[dict[int, list[float]], dict[str, list[float]]]:
    """Broker rows (replicas, leaders, disk, in, out) and per-group max/avg rows of one table."""
    rows, spreads = {}, {}
    for line in section.splitlines():
        if m := ROW.match(line):
            rows[int(m[1])] = [float(v.replace(",", "")) for v in m.groups()[3:]]
        elif m := SPREAD.match(line):
            spreads[m[1]] = [float(v) for v in m.groups()[1:]]
    return rows, spreads


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" in status.read_text()


def _refused(host_port: str) -> bool:
    host, port = host_port.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
    except OSError:
        return True
    return False


def _left_behind(out: str) -> list[str]:
    """Anything the demo printed it started that still runs or listens."""
    problems = []
    for pid in map(int, re.findall(r"operator pid (\d+)", out)):
        if not _gone(pid):
            problems.append(f"operator pid {pid} still running")
    endpoints = re.findall(r"brokers on (\S+)", out)[0].split(",")
    endpoints += re.findall(r"Kubernetes API emulator on http://(\S+) ", out)
    problems += [f"{e} still listening" for e in endpoints if not _refused(e)]
    return problems


def _chromium() -> str | None:
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


def test_demo_proposes_approves_executes_and_ends_balanced(tmp_path: Path) -> None:
    # How long it takes is bench.demo's figure; here the demo's own --timeout (300 s) bounds it.
    result = subprocess.run(
        [CLI, "demo", "--report-dir", str(tmp_path / "out"), *QUICK],
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 0, f"{out[-3000:]}\n{result.stderr[-3000:]}"

    # The steps, in the order they happen; the kubectl lines typed with the real kubectl (make test builds it).
    marks = [
        "==> Kafka emulator",
        "==> Kubernetes API emulator",
        f"kubectl: {KUBECTL})",
        "kubectl apply -f",
        "==> Starting the operator",
        "balancepolicy.kafkabalancer.io/main created",
        "proposal ready after",
        "==> The cluster before",
        "==> Approving it",
        '"approvedProposal":"',
        "==> Executing",
        "execution Completed",
        "==> The cluster after",
        "bytes moved",
        "HTML report:",
    ]
    positions = [out.find(m) for m in marks]
    assert all(p >= 0 for p in positions), [m for m, p in zip(marks, positions, strict=True) if p < 0]
    assert positions == sorted(positions)

    # The proposal the operator put in status is the one approved.
    proposal = _section(out, "Waiting for the proposal")
    proposal_id = re.search(r"id\s+([0-9a-f]{16})", proposal)
    assert proposal_id is not None
    assert f'"approvedProposal":"{proposal_id[1]}"' in out
    moves = re.search(r"replica moves\s+(\d+)", proposal)
    assert moves is not None
    assert int(moves[1]) > 0

    # Progress lines while it runs, ending at 100%.
    progress = re.findall(r"partitions (\d+)/(\d+)\s+moved ([\d,.]+) GB of ([\d,.]+) GB \(\s*([\d.]+)%\)", out)
    assert len(progress) >= 3, _section(out, "Executing")
    assert progress[-1][0] == progress[-1][1]
    assert float(progress[-1][4]) == 100.0
    assert [float(p[4]) for p in progress] == sorted(float(p[4]) for p in progress)

    # Before/after tables read back from Kafka: the new brokers take load, each group ends balanced.
    before, spread_before = _table(_section(out, "The cluster before"))
    after, spread_after = _table(_section(out, "The cluster after"))
    assert sorted(before) == sorted(after) == list(range(1, 9))
    assert before[7][0] == before[8][0] == 0
    assert after[7][0] > 0
    assert after[8][0] > 0
    replicas_total = sum(r[0] for r in before.values())
    assert sum(r[0] for r in after.values()) == replicas_total
    # columns: replicas, leaders, disk, network in, network out
    assert spread_before["analytics"][2] > 1.5
    assert spread_before["payments"][1] == 3.0  # broker 1 leads everything
    for group in ("analytics", "payments"):
        assert spread_after[group][0] <= 1.15, spread_after  # replicas
        assert spread_after[group][1] <= 1.25, spread_after  # leaders
        assert spread_after[group][2] <= 1.10, spread_after  # disk: the policy's balanceThreshold
    moved = re.search(r"bytes moved\s+([\d,.]+) GB", out)
    assert moved is not None
    assert float(moved[1].replace(",", "")) > 0

    # The report a person can open.
    report = Path(re.findall(r"HTML report: (\S+)", out)[0])
    assert report == tmp_path / "out" / "report.html"
    html = report.read_text()
    assert html.count("<svg") >= 5
    for title in ("Disk", "Network in", "Network out", "Leaders", "Replicas"):
        assert title in html
    # The check: it opens in headless Chromium and shows the charts.
    assert _chromium() is not None, "needs headless Chromium: `make browser` installs Debian's chromium"
    _charts_painted(report, tmp_path)

    assert not _left_behind(out)


def _charts_painted(report: Path, scratch: Path) -> None:
    """Headless Chromium screenshot of the report: bars in both series, not only the legend swatches."""
    from delivery.png import read_png  # tests/delivery: a stdlib PNG decoder
    from kafka_balancer.report.svg import AFTER_COLOUR, BEFORE_COLOUR

    shot = scratch / "shot.png"
    subprocess.run(
        [
            str(_chromium()), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={scratch / 'p'}",
            f"--screenshot={shot}", "--window-size=1400,900", report.as_uri(),
        ],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    pixels = read_png(shot).astype(int)

    def painted(colour: str) -> int:
        rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
        return int((np.abs(pixels - rgb).sum(axis=2) <= 6).sum())

    assert painted(BEFORE_COLOUR) > 3000  # a legend swatch is 100 pixels
    assert painted(AFTER_COLOUR) > 3000


def test_demo_fails_clearly_and_stops_everything_when_the_policy_is_refused(tmp_path: Path) -> None:
    examples = tmp_path / "examples"
    shutil.copytree(REPO / "examples", examples)
    policy_file = examples / "01-rebalance-manual.yaml"
    policy = yaml.safe_load(policy_file.read_text())
    policy["spec"]["resourceGroups"] = ["payments", "no-such-group"]
    policy_file.write_text(yaml.safe_dump(policy))

    result = subprocess.run(
        [CLI, "demo", "--report-dir", str(tmp_path / "out"), "--examples", str(examples), *QUICK],
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )
    assert result.returncode == 1, result.stdout[-3000:]
    assert "kafka-balancer demo FAILED" in result.stderr
    assert "Stalled" in result.stderr
    assert "no-such-group" in result.stderr
    assert "operator stopped" in result.stdout
    assert not (tmp_path / "out" / "report.html").exists()
    assert not _left_behind(result.stdout)


def test_demo_interrupted_mid_execution_stops_everything(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [CLI, "demo", "--emulated", "--report-dir", str(tmp_path), "--size-scale", "1", "--time-scale", "50"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "partitions " in line and "in flight" in line:
                break  # executing: interrupt it like Ctrl-C
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = "".join(lines) + rest
    assert proc.returncode == 130, f"{out[-2000:]}\n{err[-2000:]}"
    assert "interrupted" in err
    assert "operator stopped" in out
    assert not _left_behind(out)

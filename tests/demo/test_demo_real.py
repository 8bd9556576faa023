"""`kafka-balancer demo` (real Apache Kafka brokers, the default) end to end, as a newcomer runs it: what it
prints, the report it writes, and that every JVM, the operator and the API emulator are gone afterwards,
also when it is interrupted (issue 32)."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from kafka_balancer.sandbox.real import KAFKA_VERSION

from demo.test_demo import CLI, _left_behind, _refused, _section, _table

# The demo bounds itself (--timeout); on a loaded machine its real JVMs and Spark need far more than a
# quiet run (bench.demo has the figure), so the bound is generous and the test's own is above it.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1000)]


def _controller(out: str) -> str:
    found = re.search(r"controller on (\S+),", out)
    assert found is not None, out[:2000]
    return found[1]


def test_demo_on_real_brokers_balances_measured_traffic(tmp_path: Path) -> None:
    started = time.monotonic()
    result = subprocess.run(
        # A quarter of the records: the same cluster, traffic and balancing, less to write and to copy.
        [CLI, "demo", "--size-scale", "0.25", "--timeout", "900", "--report-dir", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=960,
        check=False,
    )
    elapsed = time.monotonic() - started
    out = result.stdout
    # The reason is the first line of stderr's failure report; the operator's log lines follow it.
    reason = next((line for line in result.stderr.splitlines() if "demo FAILED" in line), "")
    assert result.returncode == 0, f"{reason}\n{out[-3000:]}\n{result.stderr[:3000]}"

    marks = [
        "==> Apache Kafka brokers",
        f"Apache Kafka {KAFKA_VERSION} (KRaft): 6 brokers in 3 racks",
        "==> Kubernetes API emulator",
        "==> Starting the operator",
        "balancepolicy.kafkabalancer.io/measured created",
        "spec.analysis.intervalSeconds: 30 -> 2",
        "proposal ready after",
        "==> The cluster before, read back from Kafka (traffic as the analysis measured it",
        "==> Approving it",
        "==> Executing",
        "execution Completed",
        "==> The cluster after",
        "HTML report:",
    ]
    positions = [out.find(m) for m in marks]
    assert all(p >= 0 for p in positions), [m for m, p in zip(marks, positions, strict=True) if p < 0]
    assert positions == sorted(positions)

    before, spread_before = _table(_section(out, "The cluster before"))
    after, spread_after = _table(_section(out, "The cluster after"))
    assert sorted(before) == sorted(after) == [1, 2, 3, 4, 5, 6]
    # columns: replicas, leaders, disk, network in, network out
    assert before[5][0] == before[6][0] == 0  # the new brokers, empty
    assert after[5][0] > 0
    assert after[6][0] > 0
    # Measured traffic: the hot topic's brokers 1 and 2 take most bytes in.
    assert before[1][3] > 2 * before[4][3]
    assert spread_before["cluster"][2] > 1.5  # disk
    assert spread_after["cluster"][2] <= 1.2, spread_after
    assert spread_after["cluster"][0] <= 1.2, spread_after
    progress = re.findall(r"\(\s*([\d.]+)%\)", _section(out, "Executing"))
    assert progress
    assert float(progress[-1]) == 100.0
    report = Path(re.findall(r"HTML report: (\S+)", out)[0])
    assert report.read_text().count("<svg") >= 5
    assert not _left_behind(out)
    assert _refused(_controller(out))
    print(f"real demo: {elapsed:.0f} s")


def test_demo_on_real_brokers_interrupted_stops_every_jvm(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [CLI, "demo", "--report-dir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "==> Starting the operator" in line:
                break  # brokers up and filled, traffic running: interrupt it like Ctrl-C
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = "".join(lines) + rest
    assert proc.returncode == 130, f"{out[-2000:]}\n{err[-2000:]}"
    assert "interrupted" in err
    assert not _left_behind(out)
    assert _refused(_controller(out))

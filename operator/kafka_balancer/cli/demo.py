"""`kafka-balancer demo`: the whole operator, end to end, on real Kafka brokers (or, with ``--emulated``,
the Kafka emulator) and an emulated Kubernetes API.

Steps, each printed as it happens: the Kafka cluster starts (cli.demo_kafka: real brokers with live
skewed traffic, or the emulator's skewed cluster); a Kubernetes API emulator starts on 127.0.0.1 and
gets the CRDs (crds/*.yaml); the real operator runs as a separate process (``kopf run``, as the image
runs it) against both; an example Manual BalancePolicy (examples/) is applied; the proposal appears
in status; the cluster's load is shown; the demo approves the proposal by id as a person would;
execution progress is polled from status; then the cluster is read back through the Kafka adapter,
shown before/after, and drawn in the HTML report.

Everything started is stopped on the way out, also on errors, timeouts and Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from kafka_balancer.cli import demo_view as view
from kafka_balancer.cli.arguments import number
from kafka_balancer.cli.demo_approval import approve_and_follow, policy_status, stalled
from kafka_balancer.cli.demo_context import Context, say, step
from kafka_balancer.cli.demo_kafka import DemoError, EmulatedDemo, RealDemo, emulated, placement, real
from kafka_balancer.interrupts import interruption
from kafka_balancer.model.policy.groups import group_brokers
from kafka_balancer.model.policy.parsing import parse_manifests
from kafka_balancer.report import write_report
from kafka_balancer.sandbox.ports import free_port

if TYPE_CHECKING:
    from kafka_balancer.sandbox.kube import KubeApiServer, KubeClient

HELP = "Run the embedded demo: the operator balances an emulated skewed Kafka cluster end to end."

REPO = Path(__file__).resolve().parents[3]  # operator/kafka_balancer/cli/demo.py -> repository root


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--emulated",
        action="store_true",
        help="the Kafka emulator's 8-broker cluster at a scaled clock instead of real brokers",
    )
    parser.add_argument(
        "--time-scale",
        type=number,
        default=200.0,
        help="--emulated: emulated seconds per real second; copies run at the policy's throttle in emulated time "
        "(default 200)",
    )
    parser.add_argument(
        "--size-scale",
        type=number,
        default=1.0,
        help="scale partition sizes (not the cluster's shape) for a quicker run: the emulated model's, or the "
        "records written before a real demo starts (default 1.0)",
    )
    parser.add_argument(
        "--report-dir", type=Path, default=Path("build/demo"), help="where report.html goes (default build/demo)"
    )
    parser.add_argument("--timeout", type=number, default=300.0, help="fail if the demo takes longer (seconds)")
    parser.add_argument("--examples", type=Path, default=REPO / "examples", help="the examples/ directory")
    parser.add_argument("--crds", type=Path, default=REPO / "crds", help="the crds/ directory")


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM (and SIGHUP) unwind like Ctrl-C, so every ``finally`` stops what it started."""

    def interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


# ----- the operator process -----------------------------------------------------------------------
# Linux: the operator gets SIGTERM when the demo dies, even by SIGKILL (PR_SET_PDEATHSIG survives exec),
# so not even a killed demo leaves it behind. argv: demo pid, then the operator's command line.
_ORPHAN_GUARD = """\
import ctypes, os, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):
    sys.exit("kafka-balancer demo: the demo exited before the operator started")
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""


@dataclass(frozen=True)
class Operator:
    proc: subprocess.Popen[bytes]
    metrics_url: str


@contextlib.contextmanager
def operator_process(ctx: Context, kubeconfig: Path, namespace: str) -> Iterator[Operator]:
    """``kopf run`` as the image runs it, watching one namespace; SIGTERM and wait on the way out."""
    health, metrics = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_BALANCER_")}
    env.update(
        KUBECONFIG=str(kubeconfig),
        KAFKA_BALANCER_METRICS_PORT=str(metrics),
        KAFKA_BALANCER_METRICS_ADDRESS="127.0.0.1",
        # Reconcile every second: progress reaches status at each reconciliation.
        KAFKA_BALANCER_RECONCILE_SECONDS="1",
        KAFKA_BALANCER_EXECUTION_POLL_SECONDS="0.5",
        KAFKA_BALANCER_KAFKA_TIMEOUT_SECONDS="10",
    )
    command = [
        sys.executable,
        "-m",
        "kopf",
        "run",
        "--standalone",
        f"--namespace={namespace}",
        f"--liveness=http://127.0.0.1:{health}/healthz",
        "-m",
        "kafka_balancer.controller.operator",
    ]
    log_path = ctx.workdir / "operator.log"
    argv = [sys.executable, "-c", _ORPHAN_GUARD, str(os.getpid()), *command[1:]] if sys.platform == "linux" else command
    with log_path.open("wb") as log:
        # Its own session: a Ctrl-C in the terminal reaches the demo only, which then stops the
        # operator in order (SIGTERM, wait) instead of both racing.
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        say(f"    operator pid {proc.pid}: {' '.join(command[1:])}")
        say(f"    metrics http://127.0.0.1:{metrics}/metrics, log {log_path}")

        def healthy() -> bool | None:
            if proc.poll() is not None:
                raise DemoError(f"the operator exited with code {proc.returncode}:\n{_tail(log_path)}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{health}/healthz", timeout=2):
                    return True
            except OSError:
                return None

        ctx.wait("the operator's liveness endpoint", healthy)
        yield Operator(proc, f"http://127.0.0.1:{metrics}/metrics")
    except DemoError as err:
        if proc.poll() is None and "operator log" not in str(err):
            raise DemoError(f"{err}\n--- operator log (last lines) ---\n{_tail(log_path)}") from None
        raise
    finally:
        _stop(proc)
        say(f"    operator stopped (exit code {proc.returncode})")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # what the kubelet sends; kopf finishes its handlers
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no operator log)"


# Shown after the run: what a Prometheus scraping the operator would record (names in docs/metrics.md).
METRICS_SHOWN = (
    "kafka_balancer_execution_moved_bytes",
    "kafka_balancer_moved_bytes_total",
    "kafka_balancer_imbalance_ratio",
    "kafka_balancer_state",
)


def show_metrics(url: str, policy: str) -> None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - the operator on 127.0.0.1
            text = response.read().decode()
    except OSError as err:
        raise DemoError(f"scraping the operator's metrics at {url}: {err}") from None
    say(f"    scraped {url}:")
    for line in text.splitlines():
        name = line.split("{", 1)[0]
        wanted = name in METRICS_SHOWN and f'policy="{policy}"' in line and not line.endswith(" 0.0")
        if wanted and (name != "kafka_balancer_imbalance_ratio" or 'resource="disk"' in line):
            say(f"      {line}")


# ----- Kubernetes side ----------------------------------------------------------------------------
def load_examples(
    examples: Path, files: tuple[str, ...], bootstrap: str
) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
    """The example's ResourceGroups and BalancePolicy, pointed at the demo's cluster, in Manual mode,
    executing now; and what was changed."""
    docs: list[dict[str, Any]] = []
    try:
        for name in files:
            docs += [d for d in yaml.safe_load_all((examples / name).read_text()) if d]
        policy = next(d for d in docs if d.get("kind") == "BalancePolicy")
    except (OSError, StopIteration) as err:
        raise DemoError(f"cannot read the example manifests {files} in {examples} (--examples): {err}") from None
    groups = [d for d in docs if d.get("kind") == "ResourceGroup"]
    spec = policy["spec"]
    changes = [f"spec.cluster.bootstrapServers: {spec['cluster']['bootstrapServers']} -> {bootstrap}"]
    spec["cluster"]["bootstrapServers"] = bootstrap
    windows = (spec.get("execution") or {}).pop("maintenanceWindows", None)
    if windows:
        changes.append("spec.execution.maintenanceWindows: removed (the demo executes now, not in the window)")
    if spec.get("mode") != "Manual":
        changes.append(f"spec.mode: {spec.get('mode')} -> Manual")
        spec["mode"] = "Manual"
    return groups, policy, changes


# ----- the demo -----------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> int:
    if args.time_scale <= 0:
        print(f"kafka-balancer demo: --time-scale must be > 0 (got {args.time_scale})", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        with _signals_interrupt(), tempfile.TemporaryDirectory(prefix="kafka-balancer-demo-") as tmp:
            ctx = Context(args, started, started + args.timeout, Path(tmp))
            report = demo(ctx)
    except DemoError as err:
        print(f"\nkafka-balancer demo FAILED after {time.monotonic() - started:.1f} s: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return _interrupted()
    except Exception as err:  # any other failure still ends in one clear line (after the trace)
        if interruption(err) is not None:  # Ctrl-C inside a C call (kafka_balancer.interrupts)
            return _interrupted()
        traceback.print_exc()
        print(f"\nkafka-balancer demo FAILED: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    say()
    say(f"HTML report: {report}")
    say(f"demo finished in {time.monotonic() - started:.1f} s; Kafka, the API emulator and the operator are stopped.")
    return 0


def _interrupted() -> int:
    print("\nkafka-balancer demo interrupted; everything it started is stopped.", file=sys.stderr)
    return 130


def demo(ctx: Context) -> Path:
    args = ctx.args
    try:  # kmock comes with the dev extra, which `make demo` installs; a plain install lacks it
        from kafka_balancer.sandbox.kube import kube_api_server  # noqa: PLC0415
    except ImportError as err:
        raise DemoError(f"the Kubernetes API emulator needs kmock ({err}): pip install -e '.[dev]'") from None
    kind = "Kafka emulator" if args.emulated else "Apache Kafka brokers"
    step(f"{kind}: starting")
    cluster = emulated(args.size_scale, args.time_scale) if args.emulated else real(ctx.workdir, args.size_scale)
    with cluster as kafka:
        say(f"    {kafka.title}")
        say(f"    brokers on {kafka.bootstrap_servers}")
        with kube_api_server() as kube:
            return balance(ctx, kafka, kube)


def balance(ctx: Context, kafka: EmulatedDemo | RealDemo, kube: KubeApiServer) -> Path:
    # Both need kmock, see demo().
    from kafka_balancer.cli.demo_kubectl import Kubectl  # noqa: PLC0415
    from kafka_balancer.sandbox.kube import KubeClient  # noqa: PLC0415

    args = ctx.args
    client = KubeClient(kube.url)
    groups, policy, changes = load_examples(args.examples, kafka.examples, kafka.bootstrap_servers)
    changes += kafka.adapt(policy["spec"], ctx.workdir)
    namespace = policy["metadata"]["namespace"]
    kubeconfig = kube.write_kubeconfig(ctx.workdir / "kubeconfig", namespace)
    kubectl = Kubectl(client, kubeconfig)
    step(f"Kubernetes API emulator on {kube.url} (KUBECONFIG={kubeconfig}; {kubectl.describe()})")
    say(f"    kubectl apply -f {args.crds}/: " + ", ".join(kubectl.apply_directory(args.crds)))

    before_placement = placement(kafka.bootstrap_servers)
    _, parsed_groups = parse_manifests(groups)
    racks = {int(b): before_placement.broker_racks[i] for i, b in enumerate(before_placement.broker_ids.tolist())}
    members = {g.metadata.name: group_brokers(g.spec, racks) for g in parsed_groups} or {"cluster": sorted(racks)}

    step("Starting the operator")
    with operator_process(ctx, kubeconfig, namespace) as operator:
        files = ", ".join(kafka.examples)
        step(f"Applying the example ({args.examples}/{files})")
        for line in kubectl.apply([*groups, policy]):
            say(f"    {line}")
        for change in changes:
            say(f"    (demo) {change}")
        proposal, imbalance = await_proposal(ctx, client, policy)
        kafka.measure(policy)
        before = kafka.loads(before_placement)
        step(f"The cluster before, read back from Kafka ({_load_source(kafka)})")
        say(view.broker_table(before, members))
        executed = approve_and_follow(ctx, kubectl, policy, proposal, kafka)
        operator_view(ctx, client, policy, imbalance)
        show_metrics(operator.metrics_url, policy["metadata"]["name"])
    after = kafka.loads(placement(kafka.bootstrap_servers))
    step("The cluster after, read back from Kafka")
    say(view.broker_table(after, members))
    say()
    say(f"    bytes moved  {view.gigabytes(float(executed['bytesMoved']))} in {executed['partitions']} partitions")
    emulated_seconds = executed["emulated"]
    clock = "" if emulated_seconds is None else f", {emulated_seconds:.0f} s emulated (x{args.time_scale:g})"
    say(f"    execution    {executed['seconds']:.1f} s real{clock}; demo so far {ctx.elapsed():.1f} s")
    duration = executed["seconds"] if emulated_seconds is None else emulated_seconds
    summary = {**executed["summary"], "bytesMoved": executed["bytesMoved"], "durationSeconds": duration}
    summary["demo"] = {"realSeconds": round(executed["seconds"], 1)}
    if emulated_seconds is not None:
        summary["demo"]["timeScale"] = args.time_scale
    path = args.report_dir.resolve() / "report.html"
    args.report_dir.mkdir(parents=True, exist_ok=True)
    return write_report(path, before, after, summary, title="kafka-balancer demo: before and after")


def _load_source(kafka: EmulatedDemo | RealDemo) -> str:
    if isinstance(kafka, RealDemo):
        return "traffic as the analysis measured it from the operator's samples, on local Spark"
    return "traffic from the demo's model"


def await_proposal(ctx: Context, client: KubeClient, policy: dict[str, Any]) -> tuple[dict[str, Any], float | None]:
    """The proposal from status, and status.imbalance when it was made."""
    step("Waiting for the proposal in status.proposal")

    def ready() -> dict[str, Any] | None:
        status = policy_status(client, policy)
        stalled(status)
        return status if status.get("proposal") and status.get("state") == "ProposalReady" else None

    status = ctx.wait("a proposal in the policy's status", ready)
    proposal = dict(status["proposal"])
    say(f"    proposal ready after {ctx.elapsed():.1f} s (status.state ProposalReady):")
    for line in view.proposal_lines(proposal):
        say(line)
    imbalance = status.get("imbalance")
    return proposal, None if imbalance is None else float(imbalance)


def operator_view(ctx: Context, client: KubeClient, policy: dict[str, Any], before: float | None) -> None:
    """The operator's own reading after the run: its next reconciliation re-reads the cluster."""
    deadline = min(ctx.deadline, time.monotonic() + 15)
    while True:
        status = policy_status(client, policy)
        now = status.get("imbalance")
        if (now is not None and (before is None or now < before)) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    shown = "-" if now is None else f"{float(now):.2f}"
    was = "-" if before is None else f"{before:.2f}"
    say(f"    the operator re-read the cluster: status.imbalance {shown} (was {was}), state {status.get('state')}")

"""The operator under many policies and tenants, on the real API server (issue 55's two figures).

    .venv/bin/python -m bench.many_policies status [--policies 1000] [--namespaces 10] [--silent 0]
    .venv/bin/python -m bench.many_policies pause [--broken 40]

``status``: policies for clusters that do not answer (nothing listens at their port; ``--silent N``
of them accept the connection, answer ApiVersions and never Metadata), spread over namespaces, all
created at once: seconds from the first create until every policy has a status (how many have one after 60 s), and the
operator's CPU and peak memory.

``pause``: ``--broken`` such policies in namespace ``noisy`` (half silent, half refusing), then a healthy
policy in ``kafka`` for an emulated cluster: seconds to its proposal, from approval to moves in flight,
and from ``spec.paused: true`` to no reassignment left on the cluster.

The operator runs as the image runs it (tests/controller/operator_process.py: every namespace, its
Kafka request timeout 30 s, the chart's RBAC); the API server is kube-apiserver and etcd from
``make kube-binaries`` (tests/kube_apiserver.py).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from controller.operator_process import OperatorProcess, operators  # noqa: E402
from controller.tenants import approve, namespace, policy, spec_patch, spread_model, status  # noqa: E402
from hostile_kafka import unanswering_clusters  # noqa: E402
from kafka_balancer.sandbox import EmulatedCluster, EmulatorOptions  # noqa: E402
from kafka_balancer.sandbox.kube import KubeClient  # noqa: E402
from kafka_balancer.sandbox.ports import free_port  # noqa: E402
from kube_apiserver import POLICY_NAMESPACE, kube_apiserver  # noqa: E402

from bench.real_scale_operator import _cpu_seconds, _peak_rss_mb  # noqa: E402

_ENV = {"KAFKA_BALANCER_KAFKA_TIMEOUT_SECONDS": "30"}  # the image's default


def _until(what: str, probe: Callable[[], Any], timeout: float, interval: float = 0.5) -> float:
    """Seconds until ``probe`` is truthy (SystemExit after ``timeout``)."""
    started = time.monotonic()
    while not probe():
        if time.monotonic() - started > timeout:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
    return time.monotonic() - started


@contextlib.contextmanager
def _world(folder: Path) -> Iterator[tuple[KubeClient, OperatorProcess]]:
    with kube_apiserver(folder / "api") as api, operators(folder) as start:
        op = start(api.write_kubeconfig(folder / "kubeconfig"), _ENV, reconcile_seconds=30)
        _until("the operator healthy", lambda: op.get("/healthz", timeout=2) == 200, 300)
        yield api.client("admin"), op


def _in_flight(kafka: EmulatedCluster) -> int:
    with kafka.state.lock:
        return len(kafka.state.reassigning)


def _count_with_status(client: KubeClient) -> int:
    items = client.items("kafkabalancer.io/v1alpha1", "balancepolicies")
    return sum(1 for p in items if (p.get("status") or {}).get("conditions"))  # reconciled: with conditions


def status_figure(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        silent = stack.enter_context(unanswering_clusters(args.silent)) if args.silent else []
        client, op = stack.enter_context(_world(Path(tmp)))
        names = [f"tenant-{i}" for i in range(args.namespaces)]
        for ns in names:
            namespace(client, ns)
        servers = [*silent, *(f"127.0.0.1:{free_port()}" for _ in range(args.policies - len(silent)))]
        cpu = _cpu_seconds(op.pid)
        started = time.monotonic()
        for i, bootstrap in enumerate(servers):
            policy(
                client, names[i % len(names)], f"p-{i}", {"cluster": {"bootstrapServers": bootstrap}, "mode": "Manual"}
            )
        created = time.monotonic() - started
        counts = _statuses_over_time(client, started, args.limit)
        done = next((t for t, n in counts if n == len(servers)), None)
        at_minute = max((n for t, n in counts if t <= 60), default=0)
        print(
            f"{len(servers)} policies ({args.silent} silent) in {args.namespaces} namespaces, created in "
            f"{created:.1f} s: {at_minute} with a status after 60 s; "
            + (f"every one after {done:.1f} s" if done is not None else f"{counts[-1][1]} after {args.limit:.0f} s")
            + f"; operator CPU {_cpu_seconds(op.pid) - cpu:.1f} s, peak RSS {_peak_rss_mb(op.pid):.0f} MB"
        )


def _statuses_over_time(client: KubeClient, started: float, limit: float) -> list[tuple[float, int]]:
    """(seconds since ``started``, policies with a status) every second, until all have one or ``limit``."""
    total = len(client.items("kafkabalancer.io/v1alpha1", "balancepolicies"))
    counts: list[tuple[float, int]] = []
    while not counts or (counts[-1][1] < total and counts[-1][0] < limit):
        time.sleep(1.0)
        counts.append((time.monotonic() - started, _count_with_status(client)))
    return counts


def pause_figure(args: argparse.Namespace) -> None:
    kafka = EmulatedCluster(spread_model(partitions=12), EmulatorOptions(time_scale=1.0))
    kafka.open()
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            unanswering_clusters(args.broken // 2) as silent,
            _world(Path(tmp)) as (client, _),
        ):
            namespace(client, "noisy")
            refusing = [f"127.0.0.1:{free_port()}" for _ in range(args.broken - len(silent))]
            for i, bootstrap in enumerate((*silent, *refusing)):
                policy(client, "noisy", f"broken-{i}", {"cluster": {"bootstrapServers": bootstrap}, "mode": "Manual"})
            execution = {"throttleBytesPerSec": 1_000_000, "concurrentMovesPerBroker": 2}
            spec = {
                "cluster": {"bootstrapServers": kafka.bootstrap_servers},
                "mode": "Manual",
                "execution": execution,
            }
            policy(client, POLICY_NAMESPACE, "main", spec)
            proposed = _until("a proposal", lambda: status(client, POLICY_NAMESPACE, "main").get("proposal"), 900)
            approve(client, POLICY_NAMESPACE, "main", status(client, POLICY_NAMESPACE, "main")["proposal"]["id"])
            moving = _until("moves in flight", lambda: _in_flight(kafka), 900, 0.1)
            spec_patch(client, POLICY_NAMESPACE, "main", {"paused": True})
            stopped = _until("no reassignment left", lambda: not _in_flight(kafka), 900, 0.1)
        print(
            f"beside {args.broken} broken policies in another namespace: proposal after {proposed:.1f} s, "
            f"approval to moves in flight {moving:.1f} s, spec.paused to no reassignment left {stopped:.1f} s"
        )
    finally:
        kafka.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.many_policies", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="figure", required=True)
    many = sub.add_parser("status", help="time until every policy has a status")
    many.add_argument("--policies", type=int, default=1000)
    many.add_argument("--namespaces", type=int, default=10)
    many.add_argument("--silent", type=int, default=0)
    many.add_argument("--limit", type=float, default=600.0, help="seconds to wait for every status")
    pause = sub.add_parser("pause", help="pause-to-stopped beside broken policies")
    pause.add_argument("--broken", type=int, default=40)
    args = parser.parse_args()
    (status_figure if args.figure == "status" else pause_figure)(args)


if __name__ == "__main__":
    main()

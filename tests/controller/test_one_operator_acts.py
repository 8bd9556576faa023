"""Two operator processes against the same approved policy, on the real API server (issue 55): only the
holder of the Lease acts (controller/lease.py).

Before: both executed it (kopf ran --standalone: nothing stopped a second one): the per-broker limit of
moves in flight was exceeded and every event was doubled. Here the first process to start holds the
Lease and executes; it is then SIGSTOPped past its Lease (a node partitioned away while its pod still
runs), the second takes the Lease over and resumes the execution from the checkpoint in status, and the
first, continued, stops acting at once and exits. Kafka is the emulator in this process, which counts
every AlterPartitionReassignments entry it serves and the reassignments in flight on each broker after
each (tests/submissions.py): every partition is submitted once in all, the limit always holds.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.sandbox import EmulatedCluster
from kube_apiserver import RELEASE_NAMESPACE, kube_apiserver
from submissions import Submissions

from .operator_process import OperatorProcess
from .tenants import events, executing_midway, spread_model, status, wait

pytestmark = pytest.mark.timeout(300)

LIMIT = 2  # concurrentMovesPerBroker
LEASE = {"KAFKA_BALANCER_LEASE_SECONDS": "3"}  # held 2 s past its last renewal; taken over after 3 s unseen


def _holder(client: Any) -> str:
    leases = client.items("coordination.k8s.io/v1", "leases", RELEASE_NAMESPACE)
    return str(leases[0]["spec"].get("holderIdentity") or "") if leases else ""


def _of(op: OperatorProcess) -> Callable[[str], bool]:
    return lambda holder: f"-{op.pid}-" in holder


def test_two_operators_one_acts_and_one_stopped_past_its_lease_submits_nothing_more(
    emulator: Callable[..., EmulatedCluster],
    submissions: Submissions,
    start_operator: Callable[..., OperatorProcess],
    tmp_path: Path,
) -> None:
    kafka = emulator(spread_model(partitions=12), time_scale=2.0)
    with kube_apiserver(tmp_path / "api") as api:
        client = api.client("admin")
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig", user="operator")
        first = start_operator(kubeconfig, LEASE)
        wait("the first operator to hold the Lease", lambda: _of(first)(_holder(client)), [first])
        second = start_operator(kubeconfig, LEASE)  # a standby: a Deployment scaled to 2, a rollout overlapping
        proposal = executing_midway(client, kafka.bootstrap_servers, [first, second], moves_per_broker=LIMIT)
        assert _of(first)(_holder(client)), "the first operator acts"
        os.kill(first.pid, signal.SIGSTOP)  # past its Lease: the second takes it over and resumes
        try:
            wait("the second operator to take the Lease", lambda: _of(second)(_holder(client)), [second], timeout=60)
            resumed = wait(
                "the second operator to resume the execution",
                lambda: events(client, "kafka", "main", "ExecutionResumed"),
                [second],
                timeout=60,
            )
        finally:
            os.kill(first.pid, signal.SIGCONT)
        assert proposal["id"] in resumed[0]["message"]
        # Continued, the first finds its Lease gone: it submits nothing more and leaves (a standby when restarted).
        wait("the first operator to exit", lambda: first.proc.poll() is not None, timeout=60)

        def completed() -> dict[str, Any] | None:
            s = status(client, "kafka", "main")
            return s if (s.get("lastRun") or {}).get("result") == "Completed" else None

        final = wait("the execution to complete", completed, [second], timeout=180)
        assert final["lastRun"]["partitionsMoved"] == proposal["partitions"]
        assert _of(second)(_holder(client))
        started = events(client, "kafka", "main", "ExecutionStarted")
        assert len(started) == 1, started  # one operator started it: no event doubled

    moved = dict(submissions.moves)
    print(
        f"moves submitted: {sum(moved.values())} for {len(moved)} partitions; per-broker maximum in flight: "
        f"{dict(sorted(submissions.max_in_flight.items()))} (limit {LIMIT})"
    )
    assert moved, "nothing was submitted"
    assert set(Counter(moved.values())) == {1}, f"a partition submitted twice: {moved}"
    assert not submissions.cancels
    assert submissions.most_on_a_broker <= LIMIT, submissions.max_in_flight
    assert first.proc.returncode is not None

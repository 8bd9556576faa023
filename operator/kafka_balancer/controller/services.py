"""The services the reconciler calls: Kafka connections, planning, and running executions in threads.

Each is a small class behind a Protocol so the operator wires the real ones (Kafka adapter, planner,
executor) and nothing in the reconciler knows how they are built.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import json
import logging
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kafka_balancer import planner
from kafka_balancer.controller.kubeapi import Credentials, KubeApi
from kafka_balancer.executor import ExecutionResult, Executor, ExecutorOptions, Progress
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.isolated import isolated
from kafka_balancer.kafka.port import KafkaError, KafkaPort, PortClosedError, TopicPartition
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec, ClusterConnection
from kafka_balancer.model.policy.fields import IMBALANCE_RESOURCES
from kafka_balancer.model.policy.resource_group import ResourceGroupSpec
from kafka_balancer.model.proposal import Proposal
from kafka_balancer.planner import PlannerOptions
from kafka_balancer.planner.policy import options_from_policy

log = logging.getLogger(__name__)

Groups = Sequence[tuple[str, ResourceGroupSpec]]


class Connector(Protocol):
    def __call__(self, connection: ClusterConnection, credentials: Credentials | None) -> KafkaPort: ...


@dataclass(frozen=True)
class Balance:
    """How balanced the cluster is now: per group, per resource (max/avg, stddev/avg), and the score."""

    groups: dict[str, dict[str, tuple[float, float]]]
    balancedness: float

    def worst(self, resource: str) -> float:
        return max((per[resource][0] for per in self.groups.values() if resource in per), default=1.0)


class Planner(Protocol):
    """Plans and measures a policy's cluster; ``options`` are the spec and its groups as planner
    options, when the caller made them already (the reconciler makes them once per reconciliation)."""

    def propose(
        self, model: ClusterModel, spec: BalancePolicySpec, groups: Groups, *, options: PlannerOptions | None = None
    ) -> Proposal:
        """Raise an exception with a ``reason`` attribute when a hard goal cannot be met."""
        ...

    def evaluate(
        self, model: ClusterModel, spec: BalancePolicySpec, groups: Groups, *, options: PlannerOptions | None = None
    ) -> Balance: ...


class AdapterConnector:
    """The real Kafka adapter, in a worker process of its own (kafka.isolated), configured from the
    policy's cluster block and its Secret.

    The CA bundle comes from the Secret as PEM text; both client libraries want a file, so it is
    written once per distinct bundle into a private directory (never the password: that stays in memory).
    """

    def __init__(self, request_timeout_s: float = 30.0) -> None:
        self.request_timeout_s = request_timeout_s
        self._ca_dir: Path | None = None
        self._lock = threading.Lock()

    def _ca_file(self, pem: str) -> str:
        with self._lock:
            if self._ca_dir is None:
                self._ca_dir = Path(tempfile.mkdtemp(prefix="kafka-balancer-ca-"))
            path = self._ca_dir / f"{hashlib.sha256(pem.encode()).hexdigest()[:16]}.pem"
            if not path.exists():
                path.write_text(pem)
        return str(path)

    def __call__(self, connection: ClusterConnection, credentials: Credentials | None) -> KafkaPort:
        creds = credentials or Credentials(None, None, None)
        try:
            spec = ConnectionSpec.from_cluster(
                connection,
                username=creds.username,
                password=creds.password,
                ca_path=self._ca_file(creds.ca_pem) if creds.ca_pem else None,
            )
        except ValueError as err:
            raise KafkaError("INVALID_CONFIG", str(err)) from None
        # In a worker process: a cluster whose answers crash the client takes down only that worker.
        return isolated(dataclasses.replace(spec, request_timeout_s=self.request_timeout_s))


class ModulePlanner:
    """The planner package: plan() and evaluate() over options built from the CRD and its groups."""

    def propose(
        self, model: ClusterModel, spec: BalancePolicySpec, groups: Groups, *, options: PlannerOptions | None = None
    ) -> Proposal:
        return planner.plan(model, options or options_from_policy(spec, groups, model))

    def evaluate(
        self, model: ClusterModel, spec: BalancePolicySpec, groups: Groups, *, options: PlannerOptions | None = None
    ) -> Balance:
        evaluation = planner.evaluate(model, options or options_from_policy(spec, groups, model))
        per_group: dict[str, dict[str, tuple[float, float]]] = {
            str(name): {
                resource: (float(stats[resource]["maxOverAvg"]), float(stats[resource]["stddevOverAvg"]))
                for resource in IMBALANCE_RESOURCES
                if isinstance(stats.get(resource), dict)
            }
            for name, stats in evaluation.groups.items()
        }
        return Balance(per_group, float(evaluation.balancedness))


# ----- executions ---------------------------------------------------------------------------------


class StatusExecutionStore:
    """H5's ExecutionStore kept in the BalancePolicy status (``status.executionCheckpoint``, a JSON string).

    A JSON string, not an object, so each save replaces the record whole with one merge patch.
    """

    def __init__(
        self,
        kube: KubeApi,
        namespace: str,
        name: str,
        record: dict[str, Any] | None,
        *,
        on_save: Callable[[dict[str, Any]], None] | None = None,
        may_act: Callable[[], bool] = lambda: True,
    ) -> None:
        self._kube = kube
        self._may_act = may_act  # False once this operator lost its Lease (controller.lease)
        self._on_save = on_save
        self._namespace = namespace
        self._name = name
        self._record = record
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.detached = threading.Event()

    def load(self) -> dict[str, Any] | None:
        with self._lock:
            return self._record

    def attached(self) -> bool:
        """Whether the execution may still act: not let go of (a shutdown, the Lease lost), and its
        operator holds the Lease.

        While the Lease is uncertain (renewals unanswered: controller.lease) this waits, acting on nothing,
        until a renewal succeeds (True) or the operator lets go of the execution (False). Answering False
        at once ended the execution, and the operator, the holder again a moment later, recorded it Failed."""
        waited = False
        while not self.detached.is_set():
            if self._may_act():
                if waited:
                    log.info("execution %s/%s goes on: the Lease is renewed", self._namespace, self._name)
                return True
            if not waited:
                log.warning("execution %s/%s waits: the Lease is not renewed", self._namespace, self._name)
                waited = True
            self.detached.wait(0.1)
        return False

    def save(self, record: dict[str, Any]) -> None:
        if not self.attached():
            return  # the operator let go of it: the last checkpoint stays for the next one to resume
        text = json.dumps(record, sort_keys=True, separators=(",", ":"))
        self._kube.patch_policy_status(self._namespace, self._name, {"executionCheckpoint": text})
        with self._lock:
            self._record = record
        if self._on_save is not None:
            self._on_save(record)

    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def request_stop(self) -> None:
        self._stop.set()


class DetachablePort:
    """A KafkaPort that can be cut off: once ``attached()`` is False every call fails (PortClosedError) and
    nothing reaches Kafka.

    On operator shutdown, or when the operator lost its Lease, the execution is detached, not stopped:
    its in-flight reassignments keep running in Kafka, its throttles stay, its checkpoint stays in status,
    and the next operator resumes it, exactly as after a crash. Stopping (cancel + clear throttles) is for
    pause and delete. Checked before every call: a process stopped past its Lease submits nothing more.
    """

    def __init__(self, port: KafkaPort, attached: Callable[[], bool]) -> None:
        self._port = port
        self._attached = attached

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._port, name)
        if not callable(attr) or name == "close":
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if not self._attached():
                raise PortClosedError("OPERATOR_DETACHED", "the operator let go of this execution; the next resumes it")
            return attr(*args, **kwargs)

        return call


@dataclass
class Run:
    """One execution running in its own thread."""

    proposal_id: str
    generation: int
    executor: Executor
    store: StatusExecutionStore
    port: KafkaPort
    started_at: str
    future: concurrent.futures.Future[ExecutionResult] | None = None
    progress: Progress | None = None
    stop_reason: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def done(self) -> bool:
        return self.future is not None and self.future.done()

    def detach(self) -> None:
        self.store.detached.set()

    def stop(self, reason: str) -> None:
        with self.lock:
            if self.stop_reason is None:
                self.stop_reason = reason
        self.store.request_stop()
        self.executor.request_stop()


class Runs:
    """Executions by policy (namespace, name). One per policy at most, each on a thread of its own.

    Not a bounded pool: an execution spends its life waiting on Kafka (polls, throttled copies), so a
    thread each costs little, while a pool would leave an approved execution queued behind others for
    their whole length, reported as Executing, and its policy's deletion waiting on it.
    """

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str], Run] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> Run | None:
        with self._lock:
            return self._runs.get(key)

    def pop(self, key: tuple[str, str]) -> Run | None:
        with self._lock:
            return self._runs.pop(key, None)

    def start(self, key: tuple[str, str], run: Run) -> None:
        future: concurrent.futures.Future[ExecutionResult] = concurrent.futures.Future()

        def work() -> None:
            future.set_running_or_notify_cancel()
            try:
                future.set_result(run.executor.run())
            except BaseException as err:  # the reconciler reads it from the future (lastRun: Failed)
                future.set_exception(err)
            finally:
                run.port.close()

        with self._lock:
            if key in self._runs and not self._runs[key].done:
                raise RuntimeError(f"policy {key[0]}/{key[1]} already has an execution running")
            self._runs[key] = run
            run.future = future
        # A daemon: at exit the operator detaches executions (detach_all) rather than waiting on them.
        threading.Thread(target=work, name=f"execution-{key[0]}-{key[1]}", daemon=True).start()

    def let_go(self) -> None:
        """Detach every execution at once, waiting for none (the Lease is lost: see DetachablePort)."""
        with self._lock:
            runs = list(self._runs.values())
        for run in runs:
            run.detach()

    def detach_all(self, timeout: float = 30.0) -> None:
        """On operator shutdown: let go of every execution without stopping it (see DetachablePort)."""
        with self._lock:
            runs = list(self._runs.values())
        for run in runs:
            run.detach()
        deadline = time.monotonic() + timeout
        for run in runs:
            if run.future is not None:
                # Shutting down: whatever the outcome, the checkpoint in status already records it.
                with contextlib.suppress(Exception):
                    run.future.result(timeout=max(0.0, deadline - time.monotonic()))


def make_executor(
    port: KafkaPort,
    proposal: Proposal,
    store: StatusExecutionStore,
    spec: BalancePolicySpec,
    *,
    on_progress: Callable[[Progress], None],
    context: dict[str, str],
    poll_seconds: float | None = None,
) -> Executor:
    options = ExecutorOptions.from_spec(spec.execution)
    if poll_seconds is not None:
        options = dataclasses.replace(options, poll_interval_seconds=poll_seconds)
    # The plan's partitions are elected after their moves; the proposal's other leader changes
    # (replica order already right, leader not the preferred one) with them.
    elections = [TopicPartition(c.topic, c.partition) for c in proposal.leader_changes]
    return Executor(port, proposal.plan, store, options, on_progress=on_progress, context=context, elections=elections)

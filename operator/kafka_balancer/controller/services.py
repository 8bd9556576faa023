"""The services the reconciler calls: Kafka connections, planning, and running executions in threads.

Each is a small class behind a Protocol so the operator wires the real ones (Kafka adapter, planner,
executor) and nothing in the reconciler knows how they are built.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kafka_balancer.controller.kubeapi import Credentials, KubeApi
from kafka_balancer.executor import ExecutionResult, Executor, ExecutorOptions, Progress
from kafka_balancer.kafka.port import KafkaPort, KafkaUnavailableError
from kafka_balancer.model import ClusterModel, ReassignmentPlan
from kafka_balancer.model.policy import BalancePolicySpec, ClusterConnection, ResourceGroupSpec
from kafka_balancer.model.proposal import Proposal

Groups = Sequence[tuple[str, ResourceGroupSpec]]


class Connector(Protocol):
    def __call__(self, connection: ClusterConnection, credentials: Credentials | None) -> KafkaPort: ...


class Planner(Protocol):
    def propose(self, model: ClusterModel, spec: BalancePolicySpec, groups: Groups) -> Proposal:
        """Raise an exception with a ``reason`` attribute when a hard goal cannot be met."""
        ...

    def imbalance(
        self, model: ClusterModel, spec: BalancePolicySpec, groups: Groups, resource: str
    ) -> dict[str, tuple[float, float]]:
        """Group -> (max/avg, mean deviation + 1) of ``resource``."""
        ...


def adapter_connector(connection: ClusterConnection, credentials: Credentials | None) -> KafkaPort:
    """The real Kafka adapter (kafka_balancer.kafka.adapter), configured from the policy's cluster block."""
    adapter = importlib.import_module("kafka_balancer.kafka.adapter")
    settings: dict[str, Any] = {
        "bootstrap_servers": connection.bootstrap_servers,
        "security_protocol": connection.security_protocol,
        "sasl_mechanism": connection.sasl_mechanism,
    }
    if credentials is not None:
        settings.update(
            sasl_username=credentials.username, sasl_password=credentials.password, ssl_ca_pem=credentials.ca_pem
        )
    port: KafkaPort = adapter.connect(**settings)
    return port


class ModulePlanner:
    """The planner package (kafka_balancer.planner): plan() and evaluate() over options built from the CRD."""

    def __init__(self) -> None:
        # Imported on first use: the operator starts (and reports bad specs) even before a first plan.
        self._planner: Any = None
        self._policy: Any = None

    def _load(self) -> None:
        if self._planner is None:
            self._planner = importlib.import_module("kafka_balancer.planner")
            self._policy = importlib.import_module("kafka_balancer.planner.policy")

    def propose(self, model: ClusterModel, spec: BalancePolicySpec, groups: Groups) -> Proposal:
        self._load()
        options = self._policy.options_from_policy(spec, groups, model)
        proposal: Proposal = self._planner.plan(model, options)
        return proposal

    def imbalance(
        self, model: ClusterModel, spec: BalancePolicySpec, groups: Groups, resource: str
    ) -> dict[str, tuple[float, float]]:
        self._load()
        options = self._policy.options_from_policy(spec, groups, model)
        evaluation = self._planner.evaluate(model, options)
        per_group = evaluation.max_over_avg(resource)
        if isinstance(per_group, dict):
            return {str(g): (float(v), float(v)) for g, v in per_group.items()}
        return {"cluster": (float(per_group), float(per_group))}


# ----- executions ---------------------------------------------------------------------------------


class StatusExecutionStore:
    """H5's ExecutionStore kept in the BalancePolicy status (``status.executionCheckpoint``, a JSON string).

    A JSON string, not an object, so each save replaces the record whole with one merge patch.
    """

    def __init__(self, kube: KubeApi, namespace: str, name: str, record: dict[str, Any] | None) -> None:
        self._kube = kube
        self._namespace = namespace
        self._name = name
        self._record = record
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.detached = threading.Event()

    def load(self) -> dict[str, Any] | None:
        with self._lock:
            return self._record

    def save(self, record: dict[str, Any]) -> None:
        if self.detached.is_set():
            return  # the operator is going away: keep the last checkpoint for the next one to resume
        text = json.dumps(record, sort_keys=True, separators=(",", ":"))
        self._kube.patch_policy_status(self._namespace, self._name, {"executionCheckpoint": text})
        with self._lock:
            self._record = record

    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def request_stop(self) -> None:
        self._stop.set()


class DetachablePort:
    """A KafkaPort that can be cut off: after ``detach()`` every call fails and nothing reaches Kafka.

    On operator shutdown the execution is detached, not stopped: its in-flight reassignments keep
    running in Kafka, its throttles stay, its checkpoint stays in status, and the next operator
    resumes it, exactly as after a crash. Stopping (cancel + clear throttles) is for pause and delete.
    """

    def __init__(self, port: KafkaPort, detached: threading.Event) -> None:
        self._port = port
        self._detached = detached

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._port, name)
        if not callable(attr) or name == "close":
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._detached.is_set():
                raise KafkaUnavailableError("OPERATOR_DETACHED", "the operator is shutting down; the next one resumes")
            return attr(*args, **kwargs)

        return call


@dataclass
class Run:
    """One execution running in a worker thread."""

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
    """Executions by policy (namespace, name). One per policy at most."""

    def __init__(self, workers: int = 4) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="execution")
        self._runs: dict[tuple[str, str], Run] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> Run | None:
        with self._lock:
            return self._runs.get(key)

    def pop(self, key: tuple[str, str]) -> Run | None:
        with self._lock:
            return self._runs.pop(key, None)

    def start(self, key: tuple[str, str], run: Run) -> None:
        def work() -> ExecutionResult:
            try:
                return run.executor.run()
            finally:
                run.port.close()

        with self._lock:
            if key in self._runs and not self._runs[key].done:
                raise RuntimeError(f"policy {key[0]}/{key[1]} already has an execution running")
            self._runs[key] = run
        run.future = self._pool.submit(work)

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
        self._pool.shutdown(wait=False, cancel_futures=True)


def make_executor(
    port: KafkaPort,
    plan: ReassignmentPlan,
    store: StatusExecutionStore,
    spec: BalancePolicySpec,
    *,
    on_progress: Callable[[Progress], None],
    context: dict[str, str],
    poll_seconds: float | None = None,
) -> Executor:
    options = ExecutorOptions.from_spec(spec.execution)
    if poll_seconds is not None:
        import dataclasses  # noqa: PLC0415 - only needed when tests speed the poll up

        options = dataclasses.replace(options, poll_interval_seconds=poll_seconds)
    return Executor(port, plan, store, options, on_progress=on_progress, context=context)

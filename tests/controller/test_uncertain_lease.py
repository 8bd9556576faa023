"""An operator unsure of its Lease (renewals waiting on a slow API server: controller/lease.py) acts on
nothing meanwhile and goes on once a renewal succeeds; an execution that asks to act meanwhile waits.

Before: a renewal left unanswered past two thirds of the Lease's duration ended the execution
("Failed: the operator let go of this execution"), or the operator took the Lease for lost and exited,
although nobody else held it. Seen under heavy disk load, where the API server's storage stalls.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.controller.services import DetachablePort, StatusExecutionStore
from kafka_balancer.kafka.port import PortClosedError
from kafka_balancer.sandbox import EmulatedCluster
from kube_apiserver import kube_apiserver
from submissions import Submissions

from .operator_process import OperatorProcess
from .tenants import executing_midway, spread_model, status, wait

LIST_REASSIGNMENTS = 46  # the API key the executor polls with
LEASE = {"KAFKA_BALANCER_LEASE_SECONDS": "3"}  # held 2 s past its last renewal; each call gives up after 3 s
STALL_S = 8.0  # four times that: the execution polls Kafka meanwhile


class _Port:
    """Records, for each call that reaches it, whether the Lease was held at that moment."""

    def __init__(self, held: threading.Event) -> None:
        self.held = held
        self.calls: list[bool] = []

    def list_reassignments(self) -> dict[Any, Any]:
        self.calls.append(self.held.is_set())
        return {}


def _store(may_act: Any) -> StatusExecutionStore:
    return StatusExecutionStore(kube=None, namespace="kafka", name="p", record=None, may_act=may_act)  # type: ignore[arg-type]


def test_a_call_while_the_lease_is_uncertain_waits_for_the_renewal_and_goes_on() -> None:
    held = threading.Event()
    store = _store(held.is_set)
    port = _Port(held)
    cut_off = DetachablePort(port, store.attached)  # type: ignore[arg-type]
    threading.Timer(1.0, held.set).start()  # the renewal answers a second later
    assert cut_off.list_reassignments() == {}
    assert port.calls == [True], "nothing reached Kafka while the Lease was uncertain"


def test_a_call_while_the_lease_is_uncertain_fails_once_the_operator_lets_go() -> None:
    store = _store(lambda: False)
    port = _Port(threading.Event())
    cut_off = DetachablePort(port, store.attached)  # type: ignore[arg-type]
    threading.Timer(1.0, store.detached.set).start()  # the Lease is lost: Runs.let_go
    with pytest.raises(PortClosedError, match="let go of this execution"):
        cut_off.list_reassignments()
    assert not port.calls


class _Clock:
    """Runs the emulator's manual clock, 1 emulated second every 50 ms, until paused: then no copy
    progresses, so the execution has nothing to record and only polls Kafka."""

    def __init__(self, kafka: EmulatedCluster) -> None:
        self._kafka = kafka
        self._lock = threading.Lock()
        self._running = True
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._drive, name="emulated-time", daemon=True)

    def _drive(self) -> None:
        while not self._done.wait(0.05):
            with self._lock:
                if self._running:
                    self._kafka.advance(1.0)

    def pause(self) -> None:
        """Returns once no tick runs, and none will until :meth:`resume`."""
        with self._lock:
            self._running = False

    def resume(self) -> None:
        with self._lock:
            self._running = True

    def __enter__(self) -> _Clock:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join(timeout=30)


def _logged(op: OperatorProcess, text: str) -> Callable[[], bool]:
    return lambda: text in op.log.read_text(errors="replace")


def test_an_api_server_stalled_past_the_lease_holds_the_execution_which_then_completes(
    emulator: Callable[..., EmulatedCluster],
    submissions: Submissions,
    start_operator: Callable[..., OperatorProcess],
    tmp_path: Path,
) -> None:
    kafka = emulator(spread_model(partitions=12), time_scale=0)
    with kube_apiserver(tmp_path / "api") as api, _Clock(kafka) as clock:
        client = api.client("admin")
        op = start_operator(api.write_kubeconfig(tmp_path / "kubeconfig", user="operator"), LEASE)
        proposal = executing_midway(client, kafka.bootstrap_servers, [op], moves_per_broker=2)
        clock.pause()
        # Polls of the executor after the last tick: the first records every change, the next only poll.
        polls = kafka.request_count(LIST_REASSIGNMENTS)
        wait("three more polls", lambda: kafka.request_count(LIST_REASSIGNMENTS) >= polls + 3, [op])
        with api.stalled():
            # The fault itself: its last write sent before, the operator is unsure of its Lease 2 s in.
            time.sleep(STALL_S)
        assert _logged(op, "waits: the Lease is not renewed")(), op.tail()
        wait("the execution to go on", _logged(op, "goes on: the Lease is renewed"), [op], timeout=60)
        clock.resume()

        def completed() -> dict[str, Any] | None:
            s = status(client, "kafka", "main")
            return s if (s.get("lastRun") or {}).get("result") is not None else None

        final = wait("the execution to end", completed, [op], timeout=180)
        assert final["lastRun"]["result"] == "Completed", final["lastRun"]
        assert final["lastRun"]["partitionsMoved"] == proposal["partitions"]
        assert op.proc.poll() is None, "the operator, still the Lease's holder, went on"
    moved = dict(submissions.moves)
    assert moved, "nothing was submitted"
    assert set(Counter(moved.values())) == {1}, f"a partition submitted twice: {moved}"
    assert not submissions.cancels

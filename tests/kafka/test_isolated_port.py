"""The operator's Kafka port in a worker process (kafka.isolated): a client that crashes or hangs takes down
its worker only (issue 55).

The crash is real: librdkafka's ``list_offsets`` writes far outside its arrays for a partition numbered
2147483647 and dies with SIGSEGV. The adapter's metadata checks refuse that answer first, so the test
uses the adapter without them (hostile_kafka.UncheckedAdapter): a stand-in for the next hazard nobody
knows yet.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_kafka import INT32_MAX, UncheckedAdapter, hostile_server, unanswering_clusters
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.isolated import IsolatedPort, KafkaClientCrashedError
from kafka_balancer.kafka.port import InvalidMetadataError, KafkaUnavailableError, TopicPartition


def test_a_client_that_crashes_takes_down_its_worker_only() -> None:
    with hostile_server("partition-index-int32-max") as cluster:
        port = IsolatedPort(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=5), UncheckedAdapter)
        try:
            partitions = [TopicPartition("t", 0), TopicPartition("t", INT32_MAX)]
            with pytest.raises(KafkaClientCrashedError, match=r"died \(SIGSEGV\) during log_end_offsets"):
                port.log_end_offsets(partitions)
            # The caller (this process) lives on, and the next call is served by a new worker.
            assert port.read_cluster(with_sizes=False).num_partitions == 2
            assert port.workers_started == 2
        finally:
            port.close()
    assert os.getpid()  # still here


def test_metadata_refusals_cross_the_worker_boundary_as_raised() -> None:
    with hostile_server("partition-index-int32-max") as cluster:
        port = IsolatedPort(ConnectionSpec(cluster.bootstrap_servers, request_timeout_s=5))
        try:
            with pytest.raises(InvalidMetadataError, match=r"partitions must be numbered 0..1, got \[0, 2147483647\]"):
                port.read_cluster(with_sizes=False)
            assert port.workers_started == 1, "a refusal is an answer: the worker stays"
        finally:
            port.close()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server that accepts connections and never answers a byte."""
    sock = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stop.set()
        sock.close()
        for conn in held:
            conn.close()
        thread.join(timeout=5)


def test_a_call_that_gets_no_answer_is_bounded_and_its_worker_stopped(silent_server: str) -> None:
    port = IsolatedPort(ConnectionSpec(silent_server, request_timeout_s=30), call_timeout_s=2)
    try:
        with pytest.raises(KafkaUnavailableError, match=r"no answer within 2 s .*its worker was stopped"):
            port.describe_cluster()
        assert port._process is None, "the worker that did not answer is gone"
    finally:
        port.close()


_CALLER = """
import sys, threading, time
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.isolated import IsolatedPort
port = IsolatedPort(ConnectionSpec(sys.argv[1], request_timeout_s=120))
threading.Thread(target=port.read_cluster, daemon=True).start()  # waits on Metadata that never comes
while port._process is None or port._process.pid is None:
    time.sleep(0.01)
print(port._process.pid, flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"  # exited, not reaped
    except OSError:
        return True


def test_a_worker_inside_a_call_ends_when_its_caller_is_killed() -> None:
    """Before, a worker waiting on a silent cluster outlived its killed caller until the call gave up
    (here 120 s, ten request timeouts by default), and the fork server with it."""
    with unanswering_clusters(1) as (servers,):
        caller = subprocess.Popen([sys.executable, "-c", _CALLER, servers], stdout=subprocess.PIPE, text=True)
        try:
            assert caller.stdout is not None
            worker = int(caller.stdout.readline())
            assert not _gone(worker)
        finally:
            caller.kill()
            caller.wait()
        deadline = time.monotonic() + 60  # a deadline poll: milliseconds now, 120 s and more before
        while not _gone(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        alive = not _gone(worker)
        if alive:
            os.kill(worker, signal.SIGKILL)
        assert not alive, f"worker {worker} outlived its killed caller by 60 s"

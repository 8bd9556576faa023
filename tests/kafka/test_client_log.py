"""librdkafka's own log lines are rate-limited and summarised (kafka.client_log; issue 55: an operator with a
thousand policies naming clusters that do not answer logged 18 MB in 14 minutes, mostly these lines)."""

from __future__ import annotations

import logging
from collections import Counter
from typing import cast

import pytest
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.client_log import LOGGER_NAME, RateLimit, kind_of
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.isolated import IsolatedPort
from kafka_balancer.kafka.port import KafkaError, KafkaPort

# Privileged ports nothing listens on: every connection is refused at once.
REFUSING = "127.0.0.1:1,127.0.0.1:2"


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER_NAME]


@pytest.fixture
def fresh_limit() -> None:
    """The process's limiter as if it had seen nothing yet (it keeps what it saw for the process's life)."""
    for f in logging.getLogger(LOGGER_NAME).filters:
        forget = getattr(f, "forget", None)
        if forget is not None:
            forget()


def _describe(port: KafkaPort) -> None:
    try:
        with pytest.raises(KafkaError):
            port.describe_cluster()  # librdkafka reconnecting to the closed ports until the request times out
    finally:
        port.close()


@pytest.mark.usefixtures("fresh_limit")
def test_clients_of_clusters_that_refuse_connections_log_each_kind_of_line_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Four clients one after another, as reconciliations make them: librdkafka suppresses repeats within
    one client only; each client logged its own lines before."""
    caplog.set_level(logging.INFO)
    servers = REFUSING
    for _ in range(4):
        _describe(KafkaAdapter(ConnectionSpec(servers, request_timeout_s=1.5)))
    lines = _lines(caplog)
    assert lines, "librdkafka said nothing about the refused connections"
    repeated = {kind: n for kind, n in Counter(kind_of(line) for line in lines).items() if n > 1}
    assert not repeated, f"lines of one kind logged more than once in a minute: {repeated}"


@pytest.mark.usefixtures("fresh_limit")
def test_a_worker_process_hands_its_lines_to_the_caller_s_limiter(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    servers = REFUSING
    for _ in range(2):
        _describe(cast(KafkaPort, IsolatedPort(ConnectionSpec(servers, request_timeout_s=1.5))))
    lines = _lines(caplog)
    assert lines, "the worker's librdkafka lines did not reach the caller"
    assert max(Counter(kind_of(line) for line in lines).values()) == 1, lines


def test_the_next_line_of_a_kind_says_how_many_were_left_out() -> None:
    now = [0.0]
    limit = RateLimit(window_seconds=60, clock=lambda: now[0])

    def passes(message: str) -> str | None:
        record = logging.LogRecord(LOGGER_NAME, logging.ERROR, __file__, 1, message, (), None)
        return record.getMessage() if limit.filter(record) else None

    assert passes("Connect to 127.0.0.1:9092 failed (after 0ms)") == "Connect to 127.0.0.1:9092 failed (after 0ms)"
    assert passes("Connect to 127.0.0.1:9093 failed (after 2ms)") is None
    assert passes("Authentication failed") == "Authentication failed"  # another kind
    now[0] = 30.0
    assert passes("Connect to 127.0.0.1:9092 failed (after 1ms)") is None
    now[0] = 61.0
    assert passes("Connect to 127.0.0.1:9094 failed (after 0ms)") == (
        "Connect to 127.0.0.1:9094 failed (after 0ms) (2 more like it in the last 60 s)"
    )


def test_a_cluster_that_refuses_every_connection_fails_a_request_in_seconds_not_at_its_timeout() -> None:
    """What lets a thousand policies naming such clusters each get their status soon (issue 55): the
    request fails once librdkafka has said every broker is down, not after its 30 s timeout."""
    port = KafkaAdapter(ConnectionSpec(REFUSING, request_timeout_s=30))
    try:
        with pytest.raises(KafkaError) as raised:
            port.describe_cluster()
    finally:
        port.close()
    assert raised.value.name == "_ALL_BROKERS_DOWN", raised.value
    assert "accepts a connection" in str(raised.value)

"""`kafka-balancer sample` against a server that speaks Kafka and describes itself as no Kafka cluster does
(tests/hostile_kafka.py): one line, exit 1, never a traceback or a crash (issue 55).

The shapes are legal on the wire (INT32 ids, any string). Before the metadata was checked
(kafka.metadata_check), a partition numbered 2147483647 killed the process with SIGSEGV inside
librdkafka's list_offsets, and seven other shapes ended in a Python traceback from the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hostile_kafka import EXTRA_SHAPES, SHAPES, hostile_server

from cli.bounded import Run
from cli.forked import ForkServer

TIMEOUT = 60.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    fork_server = ForkServer(tmp_path_factory.mktemp("hostile-out"), TIMEOUT)
    try:
        yield fork_server
    finally:
        fork_server.close()


def _sample(server: ForkServer, shape: str, store: Path) -> Run:
    with hostile_server(shape) as cluster:
        argv = ["sample", "--bootstrap-servers", cluster.bootstrap_servers, "--samples", str(store)]
        return server.run([*argv, "--count", "1", "--no-consumer-offsets", "--request-timeout", "5"])


def test_thirteen_hostile_shapes() -> None:
    assert len(SHAPES) == 13


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_sample_refuses_hostile_metadata_with_one_line(server: ForkServer, shape: str, tmp_path: Path) -> None:
    result = _sample(server, shape, tmp_path / "samples")
    assert result.code == 1, str(result)  # 1: the round failed (2 is bad input on the command line)
    assert "Traceback" not in result.stderr, str(result)
    assert len(result.lines) == 1, str(result)
    assert "sampling round 1 failed: INVALID_METADATA" in result.lines[0], str(result)
    assert "took 0 samples" in result.stdout
    assert not list((tmp_path / "samples").rglob("*.parquet")), "nothing of that answer is stored"


@pytest.mark.parametrize("shape", sorted(EXTRA_SHAPES))
def test_sample_takes_entries_listed_twice_and_unlisted_brokers_in_its_stride(
    server: ForkServer, shape: str, tmp_path: Path
) -> None:
    """Not refused (librdkafka keeps one entry of each; a replica on an unlisted broker is one on a broker
    that is down): a sample, or one line saying why the round failed, never a traceback."""
    result = _sample(server, shape, tmp_path / "samples")
    assert "Traceback" not in result.stderr, str(result)
    assert result.code in (0, 1), str(result)
    assert [line for line in result.lines if " ERROR " in line or "WARNING" in line][1:] == [], str(result)

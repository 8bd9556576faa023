"""A Ctrl-C that lands inside a C call (librdkafka's) is an interruption, not a failure (issue 52).

CPython reports a KeyboardInterrupt raised while a C function runs as a SystemError caused by it
(kafka_balancer.interrupts). Seen under load: `kafka-balancer demo`, interrupted during a DescribeCluster,
ended "FAILED: SystemError" with exit 1 instead of "interrupted" and 130. Here the call raises what
CPython raises then.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from emulator_fixtures import six_broker_model
from kafka_balancer.cli import demo, main
from kafka_balancer.kafka.adapter import KafkaAdapter


def _interrupted_in_c(*_args: Any, **_kwargs: Any) -> Any:
    raise SystemError("<built-in method describe_cluster> returned a result with an exception set") from (
        KeyboardInterrupt()
    )


def test_a_command_interrupted_inside_a_c_call_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(KafkaAdapter, "read_cluster", _interrupted_in_c)
    assert main(["audit", "--bootstrap-servers", "127.0.0.1:1"]) == 130
    assert capsys.readouterr().err == "audit: interrupted\n"


def test_the_demo_interrupted_inside_a_c_call_says_so_and_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(demo, "demo", _interrupted_in_c)
    args = argparse.Namespace(time_scale=1.0, timeout=60.0, report_dir=tmp_path)
    assert demo.run(args) == 130
    err = capsys.readouterr().err
    assert "kafka-balancer demo interrupted; everything it started is stopped." in err
    assert "FAILED" not in err


def test_the_sampler_interrupted_inside_a_c_call_stops_instead_of_sampling_on(
    emulator: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`sample` stops on Ctrl-C (exit 0); one inside a C call was logged as a failed round and the sampler
    went on to its next round, and the next, ending "took 0 samples" with exit 1."""
    cluster = emulator(six_broker_model(topics={"orders": 1}))
    monkeypatch.setattr(KafkaAdapter, "read_cluster", _interrupted_in_c)
    args = ["sample", "--bootstrap-servers", cluster.bootstrap_servers, "--samples", str(tmp_path / "samples")]
    assert main([*args, "--interval", "1s", "--count", "3"]) == 0
    assert "took" not in capsys.readouterr().out

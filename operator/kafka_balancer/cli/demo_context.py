"""What every part of the demo shares: its options and deadline (:class:`Context`) and how it prints."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kafka_balancer.cli.demo_kafka import DemoError

T = TypeVar("T")


@dataclass
class Context:
    args: argparse.Namespace
    started: float
    deadline: float
    workdir: Path

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def wait(self, what: str, probe: Callable[[], T | None], interval: float = 0.5) -> T:
        """Poll ``probe`` until it returns something; DemoError at the demo's deadline."""
        while True:
            found = probe()
            if found is not None:
                return found
            if time.monotonic() > self.deadline:
                raise DemoError(f"timed out after {self.args.timeout:.0f} s waiting for {what}")
            time.sleep(interval)


def say(text: str = "") -> None:
    print(text, flush=True)


def step(text: str) -> None:
    say()
    say(f"==> {text}")

"""What a test may wait for, and why each bound holds on a busy machine (issue 52).

Tests assert no wall-clock time: a bound holds by construction (emulated time, CPU time of the test's
own process, a deadline poll whose limit is far from anything a correct run needs). Speed figures are
benchmarks under bench/ that print them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest
from kafka_balancer.kafka.connection import MAX_REQUEST_TIMEOUT_S

# "Fails at once, not after the request timeout": the client gets a request timeout no test waits out,
# and the test a pytest timeout far below it. A call that waited for its timeout fails the test by the
# pytest timeout; one that fails at once passes however busy the machine (no stopwatch in between).
NEVER_S = MAX_REQUEST_TIMEOUT_S
fails_at_once = pytest.mark.timeout(120)

T = TypeVar("T")


def until(what: str, probe: Callable[[], T | None], timeout_s: float, *, context: Callable[[], str] = str) -> T:
    """A deadline poll: ``probe()``'s first truthy value, asked every 0.5 s; after ``timeout_s`` (a limit far
    from what a correct run needs, its reason at the caller) an AssertionError naming ``what``, then
    ``context()`` (the logs and state that tell why)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}\n{context()}")

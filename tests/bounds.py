"""What a test may wait for, and why each bound holds on a busy machine (issue 52).

Tests assert no wall-clock time: a bound holds by construction (emulated time, CPU time of the test's
own process, a deadline poll whose limit is far from anything a correct run needs). Speed figures are
benchmarks under bench/ that print them.
"""

from __future__ import annotations

import pytest
from kafka_balancer.kafka.connection import MAX_REQUEST_TIMEOUT_S

# "Fails at once, not after the request timeout": the client gets a request timeout no test waits out,
# and the test a pytest timeout far below it. A call that waited for its timeout fails the test by the
# pytest timeout; one that fails at once passes however busy the machine (no stopwatch in between).
NEVER_S = MAX_REQUEST_TIMEOUT_S
fails_at_once = pytest.mark.timeout(120)

"""A Ctrl-C (or a SIGTERM a command turns into KeyboardInterrupt) that arrives while a C extension runs.

CPython runs a signal handler at the next bytecode it executes. When that is inside a C call that calls
back into Python (librdkafka's log and error callbacks do), the call returns with the KeyboardInterrupt
set and CPython raises a SystemError caused by it instead ("returned a result with an exception set").
Whoever handles Ctrl-C must handle that one too: seen as `kafka-balancer demo FAILED: SystemError` when
it was interrupted during a DescribeCluster on a busy machine.
"""

from __future__ import annotations


def interruption(err: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt ``err`` is, or the one a SystemError from a C call was caused by; else None."""
    seen: BaseException | None = err
    while isinstance(seen, SystemError):
        seen = seen.__cause__
    return seen if isinstance(seen, KeyboardInterrupt) else None

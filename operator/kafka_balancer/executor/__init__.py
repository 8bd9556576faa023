"""Execution of a proposal over the Kafka port: batches, throttles, progress, stop, resume.

See docs/executor.md. Entry point: :class:`Executor` (``run()`` blocks; ``request_stop()`` from
another thread, or ``stop_requested()`` of the store, stops it).
"""

from kafka_balancer.executor.engine import Executor
from kafka_balancer.executor.options import Clock, ExecutorOptions, SystemClock, parse_rate, parse_size
from kafka_balancer.executor.progress import BrokerProgress, Progress
from kafka_balancer.executor.recovery import abandon
from kafka_balancer.executor.result import ExecutionResult
from kafka_balancer.executor.scheduler import Limits
from kafka_balancer.executor.start import ExecutionConflictError
from kafka_balancer.executor.state import ExecutionRecord, ExecutionState, TaskState, plan_id
from kafka_balancer.executor.store import ClusterTurns, ExecutionStore, FileExecutionStore, MemoryExecutionStore

__all__ = [
    "BrokerProgress",
    "Clock",
    "ClusterTurns",
    "ExecutionConflictError",
    "ExecutionRecord",
    "ExecutionResult",
    "ExecutionState",
    "ExecutionStore",
    "Executor",
    "ExecutorOptions",
    "FileExecutionStore",
    "Limits",
    "MemoryExecutionStore",
    "Progress",
    "SystemClock",
    "TaskState",
    "abandon",
    "parse_rate",
    "parse_size",
    "plan_id",
]

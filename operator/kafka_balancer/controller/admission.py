"""Which reconciliations run now: bounded, fair between namespaces, and never behind a broken cluster.

A reconciliation that reads a cluster holds a thread (and a Kafka worker process) for as long as the
cluster takes to answer: up to the Kafka request timeout when it never does. With every reconciliation
in one small pool, one tenant's policies for clusters that do not answer queued everyone else's, pauses
included. So (docs/operations.md, "Many policies and tenants"):

- **Express.** A policy whose execution runs in this operator is reconciled in a pool of its own, with
  no slot: its reconciliation reads Kubernetes, not Kafka (the execution has its own connection), and
  it is the one that pauses, stops or withdraws the execution. Pausing acts within a reconciliation
  whatever else the operator waits on. A policy's deletion, which waits for its execution's wind-down,
  has a thread of its own.
- **First contact.** Before a reconciliation may talk to Kafka, its bootstrap servers must accept a TCP
  connection (:mod:`kafka_balancer.kafka.reachability`, on the event loop, no thread): a cluster that
  refuses or never answers is Stalled/ClusterUnreachable without a Kafka client. Only a policy the
  claims rule lets contact its cluster is probed (:func:`contact`).
- **Fair slots.** At most ``total`` reconciliations talk to Kafka at once (``KAFKA_BALANCER_RECONCILE_CONCURRENCY``).
  A free slot goes to the waiting namespace that holds the fewest, oldest request first; the last
  ``reserve`` free slots go only to namespaces that hold none, so a tenant whose clusters accept
  connections and never answer can fill at most ``total - reserve`` of them. Each wait is bounded
  by the Kafka request timeout of the reconciliations ahead of it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kafka_balancer.controller.claims import Claim, ClusterAccess, check_claim
from kafka_balancer.controller.validation import Stall, parse_spec

T = TypeVar("T")
# Threads of each lane that does not talk to Kafka: each of its reconciliations reads and writes a few
# Kubernetes objects (milliseconds). Express and unreachable ones have a pool each, so a thousand
# policies for dead addresses never queue a pause.
_THREADS_PER_LANE = 4


@dataclass
class _Request:
    namespace: str
    granted: asyncio.Future[None]


@dataclass
class FairSlots:
    """Slots for reconciliations that talk to Kafka, shared between namespaces (see the module doc)."""

    total: int
    held: Counter[str] = field(default_factory=Counter)
    _waiting: list[_Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.total < 1:
            raise ValueError(f"KAFKA_BALANCER_RECONCILE_CONCURRENCY must be >= 1, got {self.total}")

    @property
    def reserve(self) -> int:
        """Free slots kept for namespaces that hold none (none when there is one slot only)."""
        return min(self.total - 1, max(1, self.total // 4))

    @property
    def free(self) -> int:
        return self.total - sum(self.held.values())

    def _may_take(self, namespace: str) -> bool:
        return self.free > (0 if self.held[namespace] == 0 else self.reserve)

    def _grant(self) -> None:
        """Hand free slots to waiting requests: fewest slots held by their namespace first, then oldest."""
        while True:
            eligible = [(self.held[r.namespace], i) for i, r in enumerate(self._waiting) if self._may_take(r.namespace)]
            if not eligible:
                return
            request = self._waiting.pop(min(eligible)[1])
            if not request.granted.cancelled():
                self.held[request.namespace] += 1
                request.granted.set_result(None)

    def _release(self, namespace: str) -> None:
        self.held[namespace] -= 1
        if not self.held[namespace]:
            del self.held[namespace]
        self._grant()

    @contextlib.asynccontextmanager
    async def slot(self, namespace: str) -> AsyncIterator[None]:
        request = _Request(namespace, asyncio.get_running_loop().create_future())
        self._waiting.append(request)
        self._grant()
        try:
            await request.granted
        except asyncio.CancelledError:
            if request in self._waiting:
                self._waiting.remove(request)
            elif request.granted.done() and not request.granted.cancelled():
                self._release(namespace)  # granted just as the wait was cancelled
            raise
        try:
            yield
        finally:
            self._release(namespace)


def contact(body: Mapping[str, Any], claims: Sequence[Claim], access: ClusterAccess) -> str | None:
    """The bootstrap servers a reconciliation of ``body`` may connect to, or None when it connects to
    none (a spec that does not parse, a cluster the claims rule keeps it from): it reports why itself."""
    try:
        spec = parse_spec(dict(body))
        check_claim(Claim.of(body), claims, access)
    except Stall:
        return None
    return spec.cluster.bootstrap_servers


class Lanes:
    """The threads reconciliations run in: one per Kafka slot, and a few for each lane without Kafka."""

    def __init__(self, slots: FairSlots) -> None:
        self.slots = slots
        self._kafka = concurrent.futures.ThreadPoolExecutor(slots.total, thread_name_prefix="reconcile-kafka")
        self._express = concurrent.futures.ThreadPoolExecutor(_THREADS_PER_LANE, thread_name_prefix="reconcile-express")
        self._unreachable = concurrent.futures.ThreadPoolExecutor(_THREADS_PER_LANE, thread_name_prefix="reconcile")

    @staticmethod
    async def _in(pool: concurrent.futures.Executor, call: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(pool, call)

    async def express(self, call: Callable[[], T]) -> T:
        """A policy whose execution runs here: no slot, never behind anything else."""
        return await self._in(self._express, call)

    async def unreachable(self, call: Callable[[], T]) -> T:
        """A policy whose cluster accepted no connection: no Kafka client, no slot."""
        return await self._in(self._unreachable, call)

    @staticmethod
    async def alone(call: Callable[[], T]) -> T:
        """Work that waits long without Kafka (a deletion waits for its execution's wind-down, up to
        minutes): a thread of its own, so it holds up no lane."""
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="reconcile-alone") as thread:
            return await Lanes._in(thread, call)

    async def with_kafka(self, namespace: str, call: Callable[[], T]) -> T:
        """A reconciliation that may talk to Kafka: in one of ``namespace``'s fair share of slots."""
        async with self.slots.slot(namespace):
            return await self._in(self._kafka, call)

    def close(self) -> None:
        for pool in (self._kafka, self._express, self._unreachable):
            pool.shutdown(wait=False, cancel_futures=True)

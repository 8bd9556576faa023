"""What bench.real_scale sees of a run from outside: ISRs against min ISR, leaders, throttles.

A thread reads the metadata of every partition and the throttle rates of every broker every
``every_s`` seconds while a run lasts. It records the lowest margin of any partition's ISR over its
topic's min.insync.replicas (below zero: a partition under its min ISR, what must never happen), the
moments a throttle rate was first and last seen on a broker, and the leader of every partition at the
start and at the end (the leader changes of the run: partitions whose leader is another at the end).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource
from kafka_balancer.kafka.port import FOLLOWER_THROTTLE_RATE, LEADER_THROTTLE_RATE
from kafka_balancer.sandbox.traffic import QUIET

from bench.real_scale_cluster import user_partitions


@dataclass
class Seen:
    below_min_isr: set[tuple[str, int]] = field(default_factory=set)
    lowest_margin: int | None = None  # min over polls and partitions of len(ISR) - min ISR
    throttle_first: float | None = None
    throttle_last: float | None = None
    leaders_before: dict[tuple[str, int], int] = field(default_factory=dict)
    leaders_after: dict[tuple[str, int], int] = field(default_factory=dict)
    polls: int = 0

    @property
    def leader_changes(self) -> int:
        return sum(1 for key, leader in self.leaders_after.items() if self.leaders_before.get(key) != leader)

    @property
    def throttled_seconds(self) -> float:
        if self.throttle_first is None or self.throttle_last is None:
            return 0.0
        return self.throttle_last - self.throttle_first


class Watch:
    """Use as a context manager around a run."""

    def __init__(self, bootstrap: str, min_isr: Mapping[str, int], brokers: list[int], every_s: float = 2.0):
        self.admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
        self.min_isr = dict(min_isr)
        self.brokers = brokers
        self.every_s = every_s
        self.seen = Seen()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="real-scale-watch", daemon=True)

    def __enter__(self) -> Watch:
        self.seen.leaders_before = self._poll()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=120)
        self.seen.leaders_after = self._poll()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self._poll()
            except Exception as err:
                print(f"  (watch: a reading failed: {err})", flush=True)

    def _poll(self) -> dict[tuple[str, int], int]:
        views = user_partitions(self.admin)
        leaders = {}
        for key, (_replicas, leader, isr) in views.items():
            leaders[key] = leader
            margin = len(isr) - self.min_isr.get(key[0], 1)
            if margin < 0:
                self.seen.below_min_isr.add(key)
            if self.seen.lowest_margin is None or margin < self.seen.lowest_margin:
                self.seen.lowest_margin = margin
        if self._throttled():
            now = time.monotonic()
            self.seen.throttle_first = self.seen.throttle_first or now
            self.seen.throttle_last = now
        self.seen.polls += 1
        return leaders

    def _throttled(self) -> bool:
        for b in self.brokers:
            resource = ConfigResource(ConfigResource.Type.BROKER, str(b))
            for future in self.admin.describe_configs([resource]).values():
                configs = future.result(timeout=30)
                if any(
                    not configs[k].is_default for k in (LEADER_THROTTLE_RATE, FOLLOWER_THROTTLE_RATE) if k in configs
                ):
                    return True
        return False

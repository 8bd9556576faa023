"""The fair slots and the first-contact probe of controller/admission.py, on their own.

The operator-level behaviour (one tenant's unanswering clusters beside another's execution) is
test_fair_reconciliation.py, on the real API server; these pin the rules it rests on.
"""

from __future__ import annotations

import asyncio
import socket

from kafka_balancer.controller.admission import FairSlots, contact
from kafka_balancer.controller.claims import Claim, ClusterAccess
from kafka_balancer.kafka.reachability import unreachable
from kafka_balancer.sandbox.ports import free_port


async def _hold(slots: FairSlots, namespace: str, log: list[str], release: asyncio.Event) -> None:
    async with slots.slot(namespace):
        log.append(namespace)
        await release.wait()


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_namespace_fills_no_more_than_the_unreserved_slots_and_a_newcomer_is_served_first() -> None:
    async def scenario() -> tuple[list[str], list[str], int]:
        slots = FairSlots(total=4)  # reserve 1
        log: list[str] = []
        release = asyncio.Event()
        noisy = [asyncio.create_task(_hold(slots, "noisy", log, release)) for _ in range(10)]
        await _settle()
        first = list(log)  # noisy took 3 of 4; 7 of its requests wait
        quiet = asyncio.create_task(_hold(slots, "quiet", log, asyncio.Event()))
        await _settle()
        held = slots.held["quiet"]
        quiet.cancel()  # its slot goes back to the waiting noisy requests
        await _settle()
        release.set()
        await asyncio.gather(*noisy)
        return first, log, held

    first, log, quiet_held = asyncio.run(scenario())
    assert first == ["noisy"] * 3
    assert log[3] == "quiet", log
    assert quiet_held == 1
    assert log.count("noisy") == 10, "every waiting request was served in the end"


def test_a_free_slot_goes_to_the_namespace_holding_fewest() -> None:
    async def scenario() -> list[str]:
        slots = FairSlots(total=2)  # reserve 1: a namespace holding one waits while others hold none
        log: list[str] = []
        gates = {ns: asyncio.Event() for ns in ("a", "b", "c")}
        a1 = asyncio.create_task(_hold(slots, "a", log, gates["a"]))
        a2 = asyncio.create_task(_hold(slots, "a", log, gates["a"]))  # waits: a holds one, one slot left
        b = asyncio.create_task(_hold(slots, "b", log, gates["b"]))  # takes the last slot: b holds none
        c = asyncio.create_task(_hold(slots, "c", log, gates["c"]))  # waits
        await _settle()
        gates["b"].set()  # b's slot frees: c (holding none) goes before a's second request
        await _settle()
        gates["c"].set()
        gates["a"].set()
        await asyncio.gather(a1, a2, b, c)
        return log

    assert asyncio.run(scenario()) == ["a", "b", "c", "a"]


def test_a_cancelled_wait_leaves_no_slot_taken() -> None:
    async def scenario() -> int:
        slots = FairSlots(total=1)
        release = asyncio.Event()
        holder = asyncio.create_task(_hold(slots, "a", [], release))
        waiter = asyncio.create_task(_hold(slots, "b", [], asyncio.Event()))
        await _settle()
        waiter.cancel()
        await _settle()
        release.set()
        await holder
        return slots.free

    assert asyncio.run(scenario()) == 1


def test_the_probe_says_which_server_refused_and_accepts_any_that_listens() -> None:
    closed = free_port()
    with socket.create_server(("127.0.0.1", 0)) as listening:
        open_ = listening.getsockname()[1]
        assert asyncio.run(unreachable(f"127.0.0.1:{closed},127.0.0.1:{open_}", 5.0)) is None
    why = asyncio.run(unreachable(f"127.0.0.1:{closed},localhost.invalid:9092", 5.0))
    assert why is not None
    assert why.startswith(f"127.0.0.1:{closed}: Connection refused; localhost.invalid:9092: "), why


def test_only_a_policy_allowed_to_reach_its_cluster_is_probed() -> None:
    def body(namespace: str, servers: str) -> dict[str, object]:
        meta = {"namespace": namespace, "name": "p", "creationTimestamp": "2026-12-07T00:00:00Z"}
        return {"metadata": meta, "spec": {"cluster": {"bootstrapServers": servers}}}

    access = ClusterAccess.from_env(
        {"KAFKA_BALANCER_CLUSTERS": '[{"bootstrapServers": "k:9092", "namespaces": ["kafka"]}]'}
    )
    assert contact(body("kafka", "k:9092"), [], access) == "k:9092"
    mine = body("squat", "k:9092")
    assert contact(mine, [Claim.of(mine)], access) is None, "a cluster the namespace may not claim is never contacted"
    assert contact(body("kafka", "no port"), [], access) is None, "a spec that does not parse contacts nothing"

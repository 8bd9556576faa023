"""Capacity repair by a mixed-integer program, where the search (:mod:`search`) finds no placement.

The search is a branch and bound within a budget of placements tried, on at most 600 movable
replicas: on a tight packing it can run out of budget where a placement exists (6 brokers with 255
replicas against a limit of 45, the network and disk at 98.5% of their limits: 60,000 placements
found none), and a larger group it does not try at all (15 brokers, 616 replicas against a limit of
44: the plan was refused). Here the same packing (:class:`search.Packing`: the group's movable
replicas, each keeping its role, under every limit, the rack spread, the group, the exclusions and
the named brokers), of up to ``TUNING.solver_max_replicas`` replicas, is handed to HiGHS as a 0-1 program over
(replica, broker) pairs. It asks for any placement, not the one moving the fewest bytes: proving
that took HiGHS its whole 10 s on groups of 370-640 partitions, and its answer moved 0-3% fewer bytes
by the plan's end, once the finishing passes had sent back what the goals did not need. The
placement found then has the replicas it moved put back where that still fits, biggest first
(:meth:`search.Packing.settle`). A solve stops at its first placement, so the same input gives the
same plan; ``TUNING.solver_max_seconds`` (or what is left of the time budget) only bounds a solve that finds none.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from kafka_balancer.model.cluster import FloatArray
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.capacity.search import Packing, packing_of
from kafka_balancer.planner.tuning import TUNING

TINY: Final = 1e-300


def solve(st: State, q: int, *, hosts: Ints, nracks: Ints) -> float:
    """Bring every one of ``hosts`` under its limit of ``q`` by placing the replicas that may move
    again as the solver finds; returns the excess removed (all of it), or 0 with nothing changed."""
    packing = packing_of(st, q, hosts=hosts, nracks=nracks, most=TUNING.solver_max_replicas)
    if packing is None:
        return 0.0
    seconds = min(TUNING.solver_max_seconds, st.budget.seconds_left())
    placement = _solved(packing, seconds)
    if placement is None:
        return 0.0
    return packing.apply(st, placement)


def _solved(packing: Packing, seconds: float) -> Ints | None:
    """The broker of each item that the solver finds (None: infeasible, or no placement in time)."""
    if seconds <= 0:
        return None
    from scipy.optimize import Bounds, milp  # noqa: PLC0415 (only a stalled repair pays for the import)

    # The program's columns: the pairs (item, host) the item may take, beside its partition's others.
    item, host = np.nonzero(packing.domain & ~packing.held[packing.pid])
    pairs = np.arange(item.size)
    pid, n_hosts, n_parts = packing.pid[item], packing.hosts.size, packing.held.shape[0]
    program = _Program(item.size)
    n_items, apart = packing.parts.size, n_parts * n_hosts
    program.add(item, pairs, np.ones(item.size), bounds=(np.ones(n_items), np.ones(n_items)))  # each on one broker
    # A partition's replicas on distinct brokers.
    program.add(pid * n_hosts + host, pairs, np.ones(item.size), bounds=(np.zeros(apart), np.ones(apart)))
    # The rack spread: each rack takes what its allowance leaves beside the replicas that stay.
    n_racks = packing.racks.shape[1]
    spare = (packing.allowed - packing.racks).ravel().astype(float)
    program.add(pid * n_racks + packing.host_rack[host], pairs, np.ones(item.size), bounds=_up_to(spare))
    # Every broker's room, per quantity (rooms without a limit are infinite: those rows bind nothing),
    # in units of the largest item's load of it: bytes and CPU shares differ by 12 orders of magnitude.
    n_quantities = packing.v.shape[1]
    unit = np.maximum(np.abs(packing.v).max(axis=0), TINY)
    rows = (host[:, None] * n_quantities + np.arange(n_quantities)[None, :]).ravel()
    load = (packing.v[item] / unit).ravel()
    program.add(rows, np.repeat(pairs, n_quantities), load, bounds=_up_to((packing.room / unit).ravel()))
    # Of an operation onto named brokers: as many placed there as each partition still misses.
    missing = packing.named_missing.astype(float)
    program.add(pid, pairs, packing.placing[item, host].astype(float), bounds=(missing, np.full(n_parts, np.inf)))
    result = milp(
        np.zeros(item.size),  # any placement: the first found ends the solve (see the module's text)
        constraints=program.constraint(),
        integrality=np.ones(item.size),
        bounds=Bounds(0.0, 1.0),
        options={"time_limit": seconds},
    )
    if result.x is None:
        return None
    on = np.asarray(result.x) > 0.5
    at = np.full(n_items, -1, dtype=np.int64)
    at[item[on]] = host[on]
    if (at < 0).any() or not _within_room(packing, at):
        return None
    out: Ints = packing.hosts[at]
    return out


def _within_room(packing: Packing, at: Ints) -> bool:
    """Whether the placement ``at`` (a host position per item) keeps every broker within its room:
    the solver holds the rows only to its feasibility tolerance."""
    placed = np.zeros_like(packing.room)
    np.add.at(placed, at, packing.v)
    return bool(np.all(placed <= packing.room))


def _up_to(high: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Row bounds of at most ``high``."""
    return np.full(high.size, -np.inf), high


class _Program:
    """The 0-1 program's constraint rows over ``n`` columns, added block by block."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.blocks: list[tuple[Ints, Ints, FloatArray]] = []
        self.low: list[FloatArray] = []
        self.high: list[FloatArray] = []
        self.count = 0

    def add(self, rows: Ints, cols: Ints, vals: FloatArray, *, bounds: tuple[FloatArray, FloatArray]) -> None:
        """A block of as many rows as ``bounds`` gives (low, high), with ``vals`` at (``rows``,
        ``cols``) in it; zero entries are left out."""
        keep = vals != 0
        self.blocks.append((rows[keep] + self.count, cols[keep], vals[keep]))
        self.low.append(bounds[0].astype(float))
        self.high.append(bounds[1].astype(float))
        self.count += bounds[0].size

    def constraint(self) -> object:
        """The rows as scipy's ``LinearConstraint`` (a sparse matrix)."""
        from scipy.optimize import LinearConstraint  # noqa: PLC0415
        from scipy.sparse import csr_array  # noqa: PLC0415

        rows, cols, vals = (np.concatenate(part) for part in zip(*self.blocks, strict=True))
        matrix = csr_array((vals, (rows, cols)), shape=(self.count, self.n))
        return LinearConstraint(matrix, np.concatenate(self.low), np.concatenate(self.high))

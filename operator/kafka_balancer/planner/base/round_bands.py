"""The bands of one round: for every quantity and broker the band a guarded distribution goal keeps
it in (infinite for a goal not guarded), and each topic's replica and leader count bands."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kafka_balancer.model.cluster import BoolArray, FloatArray
from kafka_balancer.planner.base.measures import bands, topic_bands, topic_leader_applies
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.catalogue import TOPIC_LEADER_GOAL, TOPIC_REPLICA_GOAL


@dataclass
class Bands:
    """Bands of every quantity for one round; goals not guarded (``Scope.guarded``) get an infinite band."""

    lower: FloatArray  # (B, quantities)
    upper: FloatArray
    avg: FloatArray
    topic_lo: FloatArray  # (T,) replica-count band per topic
    topic_hi: FloatArray
    lead_lo: FloatArray  # (T,) leader-count band per topic
    lead_hi: FloatArray
    topic_replica_on: bool
    topic_leader_on: BoolArray  # (T,) topics the leader-spread goal applies to (when guarded)
    leader_spread: BoolArray  # (T,) topics the leader-spread goal would apply to (guarded or not)


def compute_bands(st: State) -> Bands:
    nb = st.model.num_brokers
    th = st.options.balance_threshold
    size = st.catalogue.size
    lower = np.full((nb, size), -math.inf)
    upper = np.full((nb, size), math.inf)
    avg = np.zeros((nb, size))
    scope = st.scope
    enabled = {st.catalogue.balances(g) for g in scope.guarded} - {None}
    for q in range(size):
        lo, hi, mean = bands(st, q, 1.0 if q in scope.exact else th)
        avg[:, q] = mean
        if q in enabled:
            lower[:, q], upper[:, q] = lo, hi
    goals = scope.guarded
    t_lo, t_hi = topic_bands(st, th, leaders=False)
    l_lo, l_hi = topic_bands(st, th, leaders=True)
    spread = topic_leader_applies(st)
    leader_on = spread if TOPIC_LEADER_GOAL in goals else np.zeros(len(t_lo), bool)
    return Bands(lower, upper, avg, t_lo, t_hi, l_lo, l_hi, TOPIC_REPLICA_GOAL in goals, leader_on, spread)


def band_distance(load: FloatArray, lower: FloatArray, upper: FloatArray) -> FloatArray:
    # Infinite bands (disabled goals, unbalanced groups) give 0 without inf - inf.
    over = np.where(np.isfinite(upper), load - upper, 0.0)
    under = np.where(np.isfinite(lower), lower - load, 0.0)
    out: FloatArray = np.maximum(over, 0.0) + np.maximum(under, 0.0)
    return out

"""The planner's shared array helpers (planner/base/arrays.py), the State's incremental totals and the
chains' graph and path search give the same answers as the plain computations they stand in for."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_balancer.model.cluster import NO_BROKER
from kafka_balancer.planner import OperationOptions, PlannerOptions
from kafka_balancer.planner.base.arrays import RADIX_FROM, cells, first_of_each, ranks, stable_order
from kafka_balancer.planner.base.resource_groups import resolve_groups
from kafka_balancer.planner.base.round_bands import Bands, compute_bands
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.base.together import Moves, accept_together, fits_together, fits_with_each
from kafka_balancer.planner.distribution import partners, topic_chains
from kafka_balancer.planner.tuning import TUNING

from bench.synthetic import skewed_cluster

_KEYS = st.tuples(
    st.integers(min_value=-(2**40), max_value=2**40),  # offset
    # span of the keys: one 16-bit digit, two (up to 2**32), or numpy's own sort beyond
    st.sampled_from([1, 2, 300, 2**16 - 1, 2**16, 2**20, 2**32 - 1, 2**32, 2**33]),
    st.sampled_from([0, 1, 100, RADIX_FROM - 1, RADIX_FROM, 20000]),  # how many (a radix sort from RADIX_FROM)
    st.integers(min_value=0, max_value=2**32 - 1),  # seed
)


@settings(max_examples=200, deadline=None)
@given(_KEYS)
def test_stable_order_is_numpys_stable_argsort(case: tuple[int, int, int, int]) -> None:
    offset, span, size, seed = case
    keys = offset + np.random.default_rng(seed).integers(0, span, size=size, dtype=np.int64)
    assert np.array_equal(stable_order(keys), np.argsort(keys, kind="stable"))
    for narrow in (np.int32, np.int16):
        if keys.size and np.iinfo(narrow).min <= keys.min() and keys.max() <= np.iinfo(narrow).max:
            assert np.array_equal(stable_order(keys.astype(narrow)), np.argsort(keys, kind="stable"))


@settings(max_examples=100, deadline=None)
@given(_KEYS)
def test_first_of_each_marks_what_numpys_unique_returns(case: tuple[int, int, int, int]) -> None:
    offset, span, size, seed = case
    keys = offset + np.random.default_rng(seed).integers(0, span, size=size, dtype=np.int64)
    first = np.zeros(size, dtype=np.bool_)
    first[np.unique(keys, return_index=True)[1]] = True
    assert np.array_equal(first_of_each(keys), first)


def test_cells_gathers_as_two_index_arrays_do() -> None:
    rng = np.random.default_rng(3)
    table = rng.integers(0, 100, size=(70, 9)).astype(np.int32)
    rows = rng.integers(0, 70, size=(40, 1))
    cols = rng.integers(0, 9, size=(40, 6))
    assert np.array_equal(cells(table, rows, cols), table[rows, cols])
    flags = table > 50
    assert np.array_equal(cells(flags, rows, cols), flags[rows, cols])
    assert np.array_equal(cells(table.T, cols, rows), table.T[cols, rows])  # a transposed view too


def _skewed_state() -> tuple[State, Bands]:
    """A small skewed cluster's state and bands, where random leadership chains sometimes fit."""
    model = skewed_cluster(brokers=9, new_brokers=2, partitions=400, rf=3, skew=1.0, seed=2)
    options = PlannerOptions()
    state = State(model, options, resolve_groups(model, options))
    return state, compute_bands(state)


def test_a_chain_fits_together_exactly_when_the_batch_check_keeps_all_of_it() -> None:
    # Random leadership chains of one to six moves on a skewed cluster, as the topic-leader and
    # leader-count chains try them one by one: some fit, most do not.
    state, bands = _skewed_state()
    model = state.model
    rng = np.random.default_rng(0)
    seen = set()
    for length in np.tile(np.arange(1, 7), 100).tolist():
        parts = rng.choice(model.num_partitions, size=length, replace=False)
        slots = rng.integers(1, 3, size=length)
        src, dst = state.rep[parts, 0], state.rep[parts, slots]
        v = state.lead[parts] - state.follow[parts]
        whole = bool(accept_together(state, bands, src=src, dst=dst, v=v).all())
        assert fits_together(state, bands, src=src, dst=dst, v=v) == whole
        seen.add(whole)
    assert seen == {True, False}


def test_a_closing_fits_with_its_chain_exactly_when_the_two_fit_together() -> None:
    # Random leadership chains and, for each, 200 random single leadership moves that might close it:
    # the vectorised check of all of them at once agrees with the chain and each move checked whole.
    state, bands = _skewed_state()
    model = state.model
    rng = np.random.default_rng(1)

    def moves(size: int) -> Moves:
        parts = rng.choice(model.num_partitions, size=size, replace=False)
        slots = rng.integers(1, 3, size=size)
        return Moves(state.rep[parts, 0], state.rep[parts, slots], state.lead[parts] - state.follow[parts])

    seen = set()
    for length in range(1, 7):
        base = moves(length)
        each = moves(200)
        fit = fits_with_each(state, bands, base=base, each=each)
        for i in range(200):
            src, dst = np.r_[base.src, each.src[i]], np.r_[base.dst, each.dst[i]]
            whole = fits_together(state, bands, src=src, dst=dst, v=np.vstack([base.v, each.v[i]]))
            assert fit[i] == whole
        seen.update(fit.tolist())
    assert seen == {True, False}


def test_ranks_count_the_earlier_items_with_the_same_key() -> None:
    keys = np.array([5, 3, 5, 5, 3, 70000, 5])
    assert ranks(keys).tolist() == [0, 0, 1, 2, 1, 0, 3]


def _all_paths(
    walk: topic_chains._Walk, start: int, ends: set[int], preferred: set[int]
) -> list[list[tuple[int, int]]]:
    """The search without its early stop: every broker within MAX_DEPTH, then the nearest ends."""
    parent: dict[int, tuple[int, int]] = {}
    depth = {start: 0}
    queue = deque([start])
    reached: list[int] = []
    while queue:
        node = queue.popleft()
        if depth[node] >= TUNING.topic_chain_depth:
            continue
        for nxt, e in zip(*walk.edges_of(node), strict=True):
            if nxt not in depth:
                depth[nxt], parent[nxt] = depth[node] + 1, (node, e)
                queue.append(nxt)
                reached += [nxt] if nxt in ends else []
    reached.sort(key=lambda n: (depth[n], n not in preferred))
    out = []
    for end in reached[: TUNING.topic_chain_paths_per_broker]:
        path, node = [], end
        while node != start:
            node, e = parent[node]
            path.append(walk.edge(e))
        out.append(path[::-1])
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=2, max_value=40),  # brokers
    st.floats(min_value=0.02, max_value=0.6),  # edge density
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_the_chains_search_stops_early_with_the_same_paths(brokers: int, density: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    links = rng.random((brokers, brokers)) < density
    np.fill_diagonal(links, False)
    ids = rng.permutation(brokers * brokers)  # edge ids in a random order, as first edges are

    def edges_of(node: int) -> tuple[list[int], list[int]]:
        to = np.flatnonzero(links[node])
        return to.tolist(), ids[node * brokers + to].tolist()

    walk = topic_chains._Walk(edges_of, lambda e: (e, 1))
    ends = set(np.flatnonzero(rng.random(brokers) < 0.5).tolist())
    preferred = set(np.flatnonzero(rng.random(brokers) < 0.3).tolist())
    for start in range(brokers):
        assert topic_chains._paths(walk, start, ends, preferred) == _all_paths(walk, start, ends, preferred)


@pytest.mark.parametrize("table", [True, False], ids=["pair table", "sorted edges"])
def test_the_chains_graph_holds_the_first_edge_of_each_pair_of_brokers(
    table: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not table:  # as on a cluster of thousands of brokers
        monkeypatch.setattr(topic_chains, "PAIR_TABLE_MAX", 0)
    model = skewed_cluster(brokers=9, new_brokers=2, partitions=400, rf=3, skew=1.0, seed=2)
    options = PlannerOptions()
    state = State(model, options, resolve_groups(model, options))
    state.can_lead[4] = False  # a broker that may not lead takes no leadership: no edge onto it
    parts = np.flatnonzero(state.ptopic == np.bincount(state.ptopic).argmax())
    graph = topic_chains._Graph(state, parts)
    first: dict[tuple[int, int], tuple[int, int]] = {}  # (leader, follower) -> (partition, slot)
    for p in parts.tolist():
        for slot in range(1, state.rep.shape[1]):
            leader, follower = int(state.rep[p, 0]), int(state.rep[p, slot])
            if follower >= 0 and state.can_lead[follower]:
                first.setdefault((leader, follower), (p, slot))
    order = list(first)  # in first-edge order
    for b in range(model.num_brokers):
        to, edges = graph.forward(b)
        assert to == [follower for (leader, follower) in order if leader == b]
        assert [graph.edge(e) for e in edges] == [first[(b, follower)] for follower in to]
        to, edges = graph.backward(b)
        assert to == sorted(leader for (leader, follower) in order if follower == b)
        assert [graph.edge(e) for e in edges] == [first[(leader, b)] for leader in to]
    assert all(follower != 4 for (_, follower) in order)
    assert any(leader == 4 for (leader, _) in order)


def test_the_per_topic_totals_on_active_brokers_follow_every_move() -> None:
    model = skewed_cluster(brokers=9, new_brokers=2, partitions=400, rf=3, skew=1.0, seed=4)
    options = PlannerOptions(operation=OperationOptions("remove-brokers", brokers=(int(model.broker_ids[0]),)))
    state = State(model, options, resolve_groups(model, options))
    rng = np.random.default_rng(7)

    def recomputed() -> np.ndarray:
        on = (state.rep != NO_BROKER) & state.active[np.maximum(state.rep, 0)]
        topics = len(model.topics)
        return np.stack(
            [
                np.bincount(state.ptopic, weights=on.sum(axis=1), minlength=topics),
                np.bincount(state.ptopic, weights=on[:, 0], minlength=topics),
            ],
            axis=1,
        )

    assert np.array_equal(state.tactive, recomputed())
    assert not state.active[0]  # moves onto and off the removed broker change the totals
    saved = state.checkpoint()
    for _ in range(50):
        parts = rng.choice(model.num_partitions, size=20, replace=False)
        slots = rng.integers(0, 3, size=20)
        if rng.random() < 0.5:
            state.move(parts, slots, rng.integers(0, model.num_brokers, size=20).astype(np.int32))
        else:
            state.swap_leader(parts, np.maximum(slots, 1))
        assert np.array_equal(state.tactive, recomputed())
    state.restore(saved)
    assert np.array_equal(state.tactive, recomputed())


@settings(max_examples=100, deadline=None)
@given(st.floats(min_value=0.0, max_value=1.0), st.integers(min_value=0, max_value=2**32 - 1))
def test_the_nearest_swap_partners_are_a_stable_sort_of_the_window(share: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    width = 2 * TUNING.partner_window
    ok = rng.random((50, width)) < share
    idx = rng.integers(0, 10**6, size=(50, width))
    distance = np.where(ok, np.abs(np.arange(-TUNING.partner_window, TUNING.partner_window)), width)
    near = np.argsort(distance, axis=1, kind="stable")[:, : TUNING.partners]
    got_idx, got_ok = partners.nearest(ok, idx)
    assert np.array_equal(got_idx, np.take_along_axis(idx, near, axis=1))
    assert np.array_equal(got_ok, np.take_along_axis(ok, near, axis=1))


@settings(max_examples=100, deadline=None)
@given(
    st.integers(min_value=1, max_value=4),  # segments
    st.integers(min_value=0, max_value=400),  # entries
    st.floats(min_value=0.0, max_value=0.95),  # share of one dominant topic
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_a_swap_window_holds_the_partners_nearest_in_size_of_other_topics(
    segments: int, entries: int, dominant: float, seed: int
) -> None:
    # Entries sorted by (segment, size), a dominant topic 0 among topics 1-5, in runs and alone: each
    # offer's window is, on each side of its size, the WINDOW nearest entries of its segment that
    # are not of its own topic, as a plain scan finds them.
    rng = np.random.default_rng(seed)
    keys = np.sort(rng.integers(0, segments, size=entries) + rng.random(entries))
    topics = np.where(rng.random(entries) < dominant, 0, rng.integers(1, 6, size=entries)).astype(np.int64)
    none = np.zeros(0, dtype=np.int64)
    index = partners.PartnerIndex(none, none, keys, none, np.zeros(0), topics, partners._topic_runs(topics))
    offers = 30
    own = rng.integers(0, 6, size=offers).astype(np.int64)
    where = rng.integers(0, segments, size=offers)
    query = where + rng.random(offers)
    bounds = np.searchsorted(keys, where), np.searchsorted(keys, where + 1)
    idx, ok = partners._window(index, own, query, bounds)
    w = TUNING.partner_window
    for i in range(offers):
        others = np.flatnonzero((topics != own[i]) & (np.floor(keys) == where[i]))
        pos = np.searchsorted(keys, query[i])
        left, right = others[others < pos][::-1][:w], others[others >= pos][:w]
        expect_ok = np.r_[np.arange(w)[::-1] < left.size, np.arange(w) < right.size]
        assert np.array_equal(ok[i], expect_ok)
        assert np.array_equal(idx[i, w - left.size : w], left[::-1])
        assert np.array_equal(idx[i, w : w + right.size], right)

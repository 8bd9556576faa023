"""The planner's tuning constants: every limit, share and weight the search was tuned with, in one record.

Each field says what it bounds and the benchmark row that justifies its value, with the commit that
set it (its body has the figures); "no benchmark row" where the value was set with its stage and never
measured against another. Facts stay where they are used: float tolerances (``EPS``, ``TOL``, ``TINY``),
seeds, sentinels, the CPU cost model of the catalogue, the size limit a plan is refused above
(``base.state.MAX_TOPIC_BROKER_CELLS``, docs/goals.md "Limits"), the goal definition
``base.measures.TOPIC_LEADER_MAX_CV``, and switches between two implementations that give the same
result (``base.arrays.RADIX_FROM``, ``distribution.topic_chains.PAIR_TABLE_MAX``, each tested both sides).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Tuning:
    """The planner's knobs (see the module docstring); :data:`TUNING` is the one instance."""

    # --- log_dirs.placement ---
    # Rounds of moves inside the brokers (one directory pair's gap per broker and round: n directories need
    # about n - 1). No benchmark row (c68072a).
    log_dir_rounds: int = 64

    # --- distribution.balance, distribution.leaders ---
    # A receiving broker is filled this share of the way from its band's lower edge towards the average:
    # headroom for later goals against bytes. No benchmark row (d10c2f1).
    fill_margin: float = 0.15
    # topic_penalty at or below this: the move does not take its topic further from its band. f98d645:
    # bench.planner quality clusters, topic spread 0-12 slots from band.
    keeps_topic: float = 2.25
    # Swaps (bytes both ways) run only when the one-way moves left this share of the gap. No benchmark row.
    swap_min_share: float = 0.05

    # --- distribution.swaps ---
    # Swaps per (source, destination) pair and round, and candidates kept on each side. No benchmark row.
    swaps_per_pair: int = 8
    swap_side: int = 4096
    # Leader-count exchanges per pair and round, and leaderships considered on each side. No benchmark row.
    leader_exchanges_per_pair: int = 16
    leader_exchange_side: int = 24
    # One-for-one leadership trades per pair and round, and leaderships considered on each side. cb711bf:
    # the leader goals hold at 1.3M replicas (bench.planner scale); the values themselves were not swept.
    trades_per_pair: int = 16
    trade_side: int = 32

    # --- distribution.count_exchange ---
    # Exchanges per (giver, taker) pair and round, the taker's heaviest replicas considered, light replicas
    # per exchange at most. 9539ec0: bench.random_operations seeds 0-5999, goals out of band 73 -> 51
    # (the stage; its limits were not swept).
    count_exchanges_per_pair: int = 8
    count_exchange_heavy_side: int = 24
    count_exchange_max_light: int = 64

    # --- distribution.partners ---
    # Partners looked at on each side of an offer's size rank, and checked against every band. No
    # benchmark row (7568508).
    partner_window: int = 48
    partners: int = 8

    # --- distribution.topic_swaps, topic_targets, topics ---
    # Preference for partners going back home (cost units: net change over average). No benchmark row.
    topic_swap_home_bonus: float = 1.0
    # Swap offers paired per round (the one-way offers are topic_one_way_offers). 71dba79: offers capped
    # and taken one topic at a time at 2.8M replicas (bench.planner scale), topic-replica slots 311,483 ->
    # 61,694.
    topic_swap_offers: int = 16_384
    # Only the smaller share of partition sizes is swapped. 7568508: a cap of 1.0 adds ~0.3x the lower
    # bound to the bytes moved (bench.planner quality clusters).
    topic_swap_size_cap: float = 0.5
    # Destinations per rack for a topic's offers, and for a topic far above its band. 7539666:
    # bench.strong_skew 96 brokers, topic slots 3,355 -> 1,167 and 441 -> 105 with 16 (4 ran out of rounds).
    topic_dests_per_rack: int = 4
    topic_wide_dests_per_rack: int = 16
    # Candidates whose destination is chosen at once (bounds the candidates x brokers matrices). No
    # benchmark row.
    topic_chunk: int = 16_384
    # Smallest partitions offered per (topic, source) and round, one way and for swaps. No benchmark row.
    topic_offers_per_source: int = 3
    topic_swap_offers_per_source: int = 4
    # Rounds between rebuilds of the swap pass's partner index (a sort over every replica). No benchmark row.
    topic_reindex: int = 8
    # Rounds of the early per-topic pass after disk-distribution (and of the repeat at the end). cb711bf:
    # at 1.3M replicas (bench.planner scale) half the distance in the first 10 rounds, under 1% a round after.
    topic_spread_early_rounds: int = 12

    # --- distribution.topic_chains ---
    # Edges per path (a breadth-first search visits each broker once). No benchmark row.
    topic_chain_depth: int = 8
    # Chains tried per topic beyond its excess, and per call; band checks per call. ae2c1b5: 3x the caps,
    # bench.strong_skew 1.3M topic slots 1,847 / 349 -> 353 / 29.
    topic_chain_spare_tries: int = 2
    topic_chain_tries: int = 15_000
    topic_chain_checks: int = 60_000
    # Alternative paths per broker, failed closings per topic and call, partners per closing. No
    # benchmark row (1ae463a, 72e8056).
    topic_chain_paths_per_broker: int = 8
    topic_chain_closings: int = 8
    topic_chain_closing_tries: int = 16
    # Shares of those caps for the last leader-chain call (9b84f15: 2.8M replicas took 65 s with the
    # full caps) and for the chains of the per-topic repeat (2.8M replicas: 21 s for 471 slots with
    # the full caps); bench.planner scale.
    final_chains_share: float = 0.05
    repeat_chains_share: float = 0.3

    # --- base.pair_checks, base.together ---
    # Passes of "take the longest fitting prefix, drop the blocker" per batch. No benchmark row.
    take_passes: int = 4
    # Passes a batch of chained moves may take to settle. 71dba79: at 2.8M replicas 12 passes left a
    # round of 13,454 one-way topic moves with none, 50 kept 6,669 (bench.planner scale).
    drop_passes: int = 64

    # --- base.budget ---
    # Share of the time budget kept for the step after a search cut short. dcf58e2: 3 s of the default
    # 60 s against 0.8 s that step took at 1.08M replicas (bench.strong_skew, 270 brokers).
    reserve_share: float = 0.05

    # --- base.topic_spread ---
    # Weight of the topic-spread preference against the load-fit distance. No benchmark row (d10c2f1).
    topic_weight: float = 2.0
    # topic_penalty below this evens out the move's topic. eca7bc8 (the capacity repair's shedding order):
    # bench.strong_skew 96 brokers 34.4 -> 16.4 s, 1.158x -> 1.107x the bound.
    evens_topic: float = 2.0
    # The topic preference's weight for leader-count moves. 72e8056: leader-count holds at 1.3M replicas
    # (bench.planner scale).
    leader_topic_weight: float = 0.5

    # --- hard: the capacity repair ---
    # Replicas placed per destination broker and chunk when evacuating. No benchmark row.
    evacuate_chunk_per_broker: int = 4
    # An over-limit broker's load is offered to this many brokers with most room, and of its own rack.
    # 254c8e1: bench.planner scale --disk-capacity, 320k replicas near-full disks: with 8 in the rack
    # replica-distribution ended out of band, with 1 or 3 every goal held.
    repair_destinations: int = 8
    repair_same_rack_destinations: int = 3
    # How much more a replica below its share of a giver's excess counts than one as far above it. No
    # benchmark row (68b21dd).
    shortfall_weight: float = 10.0
    # Replicas compared on each side of a descent exchange (SIDE squared pairs). No benchmark row (94830e4).
    descent_side: int = 512
    # Make-room takers, same-rack takers, giver replicas per taker, third brokers. 6aceda6: bench.feasibility
    # over bench.random_operations, false failures 67 -> 30 of 2,888; e6faade: bench.strong_skew seed 1,
    # 3,000 partitions, maxReplicasPerBroker 336, failed with 16 takers all in other racks.
    room_takers: int = 16
    room_same_rack_takers: int = 8
    room_giver_replicas: int = 8
    room_third_brokers: int = 16
    # Groups holding more replicas get neither the search nor the leaderships handed out (a Python step
    # per item). No benchmark row (a73607d).
    ladder_max_hosted: int = 5_000
    # The search's movable replicas at most, and placements tried (~10 us each: ~1 s where it fails).
    # a73607d: bench.feasibility; no row for the values.
    search_max_replicas: int = 600
    search_budget: int = 60_000
    # How much the jittered restarts jitter sizes and rooms. 3984486: bench.random_operations seed 362
    # plans.
    search_jitter: float = 0.2
    # Movable replicas the solver places at most. e106869: bench.strong_skew_draws, 7 of 60 mid-sized draws
    # refused where a placement exists with the search's 600.
    solver_max_replicas: int = 5_000
    # Seconds HiGHS may take. cd11da9: a first placement took 0.2-0.9 s on groups of 300-650 partitions.
    solver_max_seconds: float = 10.0

    # --- finishing.revert, finishing.substitute ---
    # Rounds of sending moved replicas home. No benchmark row (1ec94e3).
    revert_rounds: int = 6
    # Rounds of same-topic stand-ins, and stand-ins tried per moved replica. No benchmark row (f7e2168).
    stand_in_rounds: int = 4
    stand_in_tries: int = 4
    # Stand-ins from afar tried per moved replica. decfee0: bench.planner scale row 3 (320k replicas)
    # 8 tries 1.300x in 4.9 s, 12 1.297x in 5.3 s, 16 1.296x in 5.5 s; bench.strong_skew 1.3M 1.149x each.
    far_tries: int = 12
    # Turns of the finishing fixed point (stand-ins from afar, shortcuts, topic leader chains; one in a pass
    # that revisits a finished plan). decfee0:
    # bench.strong_skew 1.3M, the first turn takes 1.05% off the plan's bytes, the second 0.3%; a second
    # turn in every revisit cost bench.planner rows 2 and 1 7.8 -> 8.5 s and 6.7 -> 8.1 s.
    far_turns: int = 2
    # Passes of dropping what a multi-leg batch cannot take before halving it. No benchmark row (30fda2e).
    stand_in_settle_passes: int = 4
    # Largest moved replicas offered to stand-ins of another topic per round. decfee0: at 1.3M replicas
    # (bench.strong_skew) 1.4-1.7 s a pass for all 290,000, 0.25 s for these.
    stand_in_wide_offers: int = 16_384

    # --- finishing.count_chains ---
    # Edges per leader-count chain, partitions per broker pair, paths per broker and round, chains per
    # call, rounds. No benchmark row (f7e2168).
    count_chain_depth: int = 6
    count_chain_per_edge: int = 4
    count_chain_paths_per_broker: int = 8
    count_chain_tries: int = 2000
    count_chain_rounds: int = 4

    # --- finishing.tighten ---
    # Rounds of making room for leaderships, partners per blocked broker, the band-edge share that blocks.
    # 13dd0de: leader counts at the rounded average on all 27 skewed clusters (the stage; values not swept).
    leader_room_rounds: int = 8
    leader_room_partners: int = 6
    leader_room_edge: float = 0.9

    # --- finishing.detours ---
    # Cells out of band above which detours leave them to the vectorised passes; mending rounds; tries,
    # sources and destinations per cell. No benchmark row (00b57e0).
    detour_max_cells: int = 24
    detour_mend_rounds: int = 3
    detour_tries_per_cell: int = 6
    detour_sources: int = 8
    detour_dests_per_replica: int = 2
    # Attempts at most, and one per this many replicas of a group. 1727cfc: an attempt costs 2.5 s at 325k
    # replicas (bench.strong_skew), where 12 failed attempts took 27 s.
    detour_max_attempts: int = 16
    detour_replicas_per_attempt: int = 500_000

    # --- finishing.rebuild ---
    # Share of moved partitions a rebuilding round undoes; rounds at most; replicas x rounds a group may
    # spend; none from this many replicas or under this many moved partitions. 5af023b: bench.planner
    # mixed-rf seed 8 1.180 -> 1.142x the bound, all 24 seeds within 1.15x; a round costs 0.75 s at 50k.
    rebuild_ruin_share: float = 0.1
    rebuild_max_rounds: int = 16
    rebuild_work: int = 800_000
    rebuild_large: int = 200_000
    rebuild_min_moved: int = 50

    @property
    def search_restart_budget(self) -> int:
        """Placements the jittered restarts may try after both depth-first runs found nothing (~0.2 s)."""
        return self.search_budget // 4

    @property
    def topic_one_way_offers(self) -> int:
        """One-way offers placed per round (placing them all cost 0.5 s a round at 2.8M replicas, 71dba79)."""
        return 4 * self.topic_swap_offers


TUNING: Final = Tuning()

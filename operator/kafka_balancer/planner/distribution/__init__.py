"""Distribution goals: each broker-level goal's rounds of moves, leaderships, trades and exchanges
between pairs of brokers, and the per-topic goals' vectorised rounds, swaps and chains."""

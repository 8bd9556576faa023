"""Snapshots Kafka allows that are almost certainly not what the user meant to plan from.

Refusing them would be wrong (a cluster can be in that state), saying nothing would let a plan be
made from a moment when the cluster served nothing; commands print these as warnings.
"""

from __future__ import annotations

from kafka_balancer.model.cluster import NO_BROKER, ClusterModel


def suspicious(model: ClusterModel) -> list[str]:
    """One sentence per suspicious trait of ``model``."""
    found = []
    partitions = model.num_partitions
    if partitions and bool((model.leader == NO_BROKER).all()):
        found.append(
            f"every partition ({partitions}) has no leader: the snapshot shows a cluster that served nothing "
            "when it was taken"
        )
    return found

"""The brokers a ResourceGroup holds in a cluster, and the check that no broker or topic is in two
groups of one policy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafka_balancer.model.policy.parsing import PolicyError
from kafka_balancer.model.policy.resource_group import ResourceGroupSpec


def check_groups(
    groups: Sequence[tuple[str, ResourceGroupSpec]],
    topics: Sequence[str] = (),
    racks: Mapping[int, str | None] | None = None,
) -> None:
    """Refuse a broker or topic claimed by two groups of one policy. Raises PolicyError.

    ``topics`` (the cluster's topic names) catch two patterns matching one topic, and ``racks`` (broker
    id -> rack) catch a broker chosen by id in one group and by rack in another; without them only
    literal overlaps (same id, same rack, same topic name) are found.
    """
    owner: dict[tuple[str, str], str] = {}
    for name, spec in groups:
        claims: list[tuple[str, str]] = []
        if racks is not None:
            claims += [("broker", str(b)) for b in group_brokers(spec, racks)]
        claims += [("broker", str(b)) for b in spec.brokers.ids or ()]
        claims += [("rack", r) for r in spec.brokers.racks or ()]
        claims += [("topic", t) for t in spec.topics.names]
        claims += [("topic", t) for t in topics if t not in spec.topics.names and spec.topics.matches(t)]
        for claim in dict.fromkeys(claims):
            other = owner.setdefault(claim, name)
            if other != name:
                kind, value = claim
                raise PolicyError("spec.resourceGroups", f"{kind} {value} is in two groups: '{other}' and '{name}'")


def group_brokers(spec: ResourceGroupSpec, racks: Mapping[int, str | None]) -> list[int]:
    """The broker ids of a group given the cluster's broker -> rack map (ids not in the cluster are kept)."""
    if spec.brokers.ids is not None:
        return sorted(spec.brokers.ids)
    wanted = set(spec.brokers.racks or ())
    return sorted(b for b, rack in racks.items() if rack in wanted)

"""Who may balance which Kafka cluster: one policy per cluster, and which namespaces may claim it.

A cluster is shared across namespaces, and a plaintext listener needs no credentials: without a rule,
whoever creates a policy first for a cluster's bootstrap servers, in any namespace, blocks everyone
else's policy for it (Stalled/DuplicateCluster). So:

- The operator's ``clusters`` setting (the chart's ``clusters`` value, ``KAFKA_BALANCER_CLUSTERS``) lists
  clusters by their bootstrap servers with the namespaces that may claim each. A policy naming a listed
  cluster from any other namespace is ``Stalled/ClusterNotAllowed``: it claims nothing, blocks no one,
  and the operator never connects to that cluster for it.
- A cluster not listed may be claimed from any namespace, unless ``unlistedClusters`` is ``refuse``
  (``KAFKA_BALANCER_UNLISTED_CLUSTERS``): then only listed clusters are balanced at all.
- Among the policies that may claim a cluster, the oldest wins (creation time, then namespace and name);
  the others are ``Stalled/DuplicateCluster`` naming it, until it goes away. Policies are the same
  cluster when their bootstrap servers overlap, or when the cluster id read from one is another's.

The claims come from kopf's index of every policy, kept from the watch (controller.operator): a
reconciliation reads memory, never a list of every policy of every namespace.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from kafka_balancer.controller import summaries
from kafka_balancer.controller.validation import Stall

UNLISTED: Final = ("allow", "refuse")


@dataclass(frozen=True)
class Claim:
    """A policy as the one-policy-per-cluster rule sees it."""

    namespace: str
    name: str
    created: str  # metadata.creationTimestamp (RFC 3339: sorts as text)
    servers: frozenset[str]
    cluster_id: str | None  # status.observedCluster.clusterId, once the cluster was read
    deleting: bool

    @property
    def age_key(self) -> tuple[str, str, str]:
        return (self.created, self.namespace, self.name)

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> Claim:
        meta = body.get("metadata") or {}
        spec = body.get("spec") or {}
        status = body.get("status") or {}
        cluster = spec.get("cluster") if isinstance(spec, dict) else None
        servers = str((cluster or {}).get("bootstrapServers", "")) if isinstance(cluster, dict) else ""
        observed = status.get("observedCluster") if isinstance(status, dict) else None
        cluster_id = (observed or {}).get("clusterId") if isinstance(observed, dict) else None
        return cls(
            namespace=str(meta.get("namespace")),
            name=str(meta.get("name")),
            created=str(meta.get("creationTimestamp") or ""),
            servers=frozenset(summaries.servers(servers)),
            cluster_id=str(cluster_id) if cluster_id else None,
            deleting=bool(meta.get("deletionTimestamp")),
        )


@dataclass(frozen=True)
class ClusterAccess:
    """The ``clusters`` setting: listed clusters (their servers) and the namespaces that may claim each."""

    listed: tuple[tuple[frozenset[str], frozenset[str]], ...] = ()
    unlisted: Literal["allow", "refuse"] = "allow"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ClusterAccess:
        """From ``KAFKA_BALANCER_CLUSTERS`` (JSON: ``[{"bootstrapServers": "a:9092,b:9092", "namespaces":
        ["team-a"]}]``) and ``KAFKA_BALANCER_UNLISTED_CLUSTERS`` (allow, refuse). ValueError names the field."""
        unlisted = env.get("KAFKA_BALANCER_UNLISTED_CLUSTERS", "allow") or "allow"
        if unlisted not in UNLISTED:
            raise ValueError(f"KAFKA_BALANCER_UNLISTED_CLUSTERS must be allow or refuse, got {unlisted!r}")
        try:
            raw = json.loads(env.get("KAFKA_BALANCER_CLUSTERS") or "[]")
        except json.JSONDecodeError as err:
            raise ValueError(f"KAFKA_BALANCER_CLUSTERS is not JSON: {err}") from None
        if not isinstance(raw, list):
            raise ValueError("KAFKA_BALANCER_CLUSTERS must be a list of {bootstrapServers, namespaces}")
        listed = []
        for i, entry in enumerate(raw):
            servers = entry.get("bootstrapServers") if isinstance(entry, dict) else None
            namespaces = entry.get("namespaces") if isinstance(entry, dict) else None
            if not isinstance(servers, str) or not summaries.servers(servers):
                raise ValueError(f"KAFKA_BALANCER_CLUSTERS[{i}].bootstrapServers must name servers, got {servers!r}")
            if not isinstance(namespaces, list) or not all(isinstance(n, str) and n for n in namespaces):
                raise ValueError(f"KAFKA_BALANCER_CLUSTERS[{i}].namespaces must list namespaces, got {namespaces!r}")
            listed.append((frozenset(summaries.servers(servers)), frozenset(namespaces)))
        return cls(tuple(listed), "refuse" if unlisted == "refuse" else "allow")

    def refusal(self, namespace: str, servers: frozenset[str]) -> str | None:
        """Why a policy in ``namespace`` may not claim the cluster of ``servers``, or None when it may."""
        matching = [namespaces for listed, namespaces in self.listed if listed & servers]
        if not matching:
            return (
                "it is not in the operator's clusters setting (unlistedClusters: refuse)"
                if (self.unlisted == "refuse")
                else None
            )
        allowed = frozenset().union(*matching)
        if namespace in allowed:
            return None
        return f"the operator's clusters setting lets only namespace(s) {', '.join(sorted(allowed))} claim it"


def check_claim(mine: Claim, others: Iterable[Claim], access: ClusterAccess, cluster_id: str | None = None) -> None:
    """Raise Stall when this policy may not claim its cluster, or an older policy that may claims it.

    Two policies name the same cluster when their servers overlap or, once read, its id is the same: the
    cluster's addresses are then both policies' servers, so a listed cluster named by another address
    is still the listed cluster (for the policy that may not claim it, and for the claim that would block)."""
    _check_access(mine, mine.servers, access)
    for other in others:
        if (other.namespace, other.name) == (mine.namespace, mine.name) or other.deleting:
            continue
        same_id = cluster_id is not None and other.cluster_id == cluster_id
        if not (mine.servers & other.servers or same_id):
            continue
        addresses = mine.servers | other.servers
        _check_access(mine, addresses, access)
        if other.age_key < mine.age_key and access.refusal(other.namespace, addresses) is None:
            raise Stall(
                "DuplicateCluster",
                f"cluster {','.join(sorted(mine.servers))} is already balanced by BalancePolicy "
                f"{other.namespace}/{other.name}: one policy per cluster; delete one of them",
            )


def _check_access(mine: Claim, addresses: frozenset[str], access: ClusterAccess) -> None:
    why = access.refusal(mine.namespace, addresses)
    if why is not None:
        shown = ",".join(sorted(mine.servers))
        raise Stall("ClusterNotAllowed", f"spec.cluster.bootstrapServers {shown}: {why}; nothing is sent there")

"""What one reconciliation gathers about its policy for the decision: the spec, its groups and Secret,
the cluster as read, and the measured load.

A :class:`Gathered` is filled as the decision asks (controller.reconcile): read first, then the cluster,
then the analysis. What cannot be read is a :class:`~kafka_balancer.controller.validation.Stall`, the
decision's Problem. Blocking (Kubernetes client, Kafka port).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kafka_balancer.controller.analysis import Analyses, EngineUnavailable, NotReady, with_measured_load
from kafka_balancer.controller.claims import Claim, ClusterAccess, check_claim
from kafka_balancer.controller.decision.seen import ClusterSeen, NotAnalysed
from kafka_balancer.controller.kubeapi import Credentials, KubeApi, owner_reference
from kafka_balancer.controller.observations import cordons, export, observe
from kafka_balancer.controller.services import Connector, Groups
from kafka_balancer.controller.status import BalancePolicyStatus, ObservedCluster
from kafka_balancer.controller.triggers import planning_fingerprint
from kafka_balancer.controller.validation import Stall, parse_spec, read_credentials, read_groups
from kafka_balancer.kafka.isolated import KafkaClientCrashedError
from kafka_balancer.kafka.port import InvalidMetadataError, KafkaError, KafkaPort
from kafka_balancer.metrics import Metrics, PolicyKey
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec
from kafka_balancer.model.policy.groups import check_groups, group_brokers
from kafka_balancer.model.policy.parsing import PolicyError
from kafka_balancer.planner import PlannerOptions

log = logging.getLogger(__name__)


@dataclass
class Gathered:
    """What one reconciliation has gathered about its policy (the decision's inputs come from here)."""

    key: tuple[str, str]  # namespace, name
    generation: int
    body: dict[str, Any]
    spec: BalancePolicySpec
    groups: Groups
    credentials: Credentials | None
    metric_key: PolicyKey
    fingerprint: str  # of the planning inputs (triggers.planning_fingerprint)
    claims: Sequence[Claim]  # every policy the operator knows (claims.check_claim)
    live: ClusterModel | None = None  # the cluster as read
    measured: ClusterModel | None = None  # with the analysed load, where the policy has a sample store
    racks: dict[int, str | None] = field(default_factory=dict)
    options: PlannerOptions | Exception | None = None  # the spec as planner options, made once (controller.proposing)
    unreachable: str | None = None  # why no bootstrap server accepted a connection (controller.admission)


def read_policy(
    kube: KubeApi, body: dict[str, Any], generation: int, claims: Sequence[Claim], access: ClusterAccess
) -> Gathered:
    """The spec of ``body`` (at ``generation``), its claim on the cluster, its groups and its Secret."""
    meta = body["metadata"]
    namespace, name = str(meta["namespace"]), str(meta["name"])
    spec = parse_spec(body)
    check_claim(Claim.of(body), claims, access)
    groups = read_groups(kube, namespace, spec)
    credentials = read_credentials(kube, namespace, spec)
    fingerprint = planning_fingerprint(spec, {g: s.model_dump(mode="json") for g, s in groups})
    metric_key = PolicyKey(name, namespace, "")
    return Gathered((namespace, name), generation, body, spec, groups, credentials, metric_key, fingerprint, claims)


def read_cluster(gathered: Gathered, connector: Connector, metrics: Metrics, access: ClusterAccess) -> ClusterSeen:
    """The cluster as it is now (kept in ``gathered``), its side observations exported as metrics."""
    spec = gathered.spec
    if gathered.unreachable is not None:
        raise Stall(
            "ClusterUnreachable",
            f"spec.cluster.bootstrapServers {spec.cluster.bootstrap_servers}: {gathered.unreachable}",
        )
    port = connect(connector, spec, gathered.credentials)
    try:
        model = port.read_cluster(with_sizes=True)
        description = port.describe_cluster()
        seen = observe(port, model, spec)
    except KafkaError as err:
        raise kafka_stall(spec, err) from None
    finally:
        port.close()
    cluster_id = description.cluster_id or spec.cluster.bootstrap_servers
    check_claim(Claim.of(gathered.body), gathered.claims, access, cluster_id)
    gathered.racks = {int(b): model.broker_racks[i] for i, b in enumerate(model.broker_ids.tolist())}
    try:
        check_groups(gathered.groups, topics=model.topics, racks=gathered.racks)
    except PolicyError as err:
        raise Stall("OverlappingResourceGroups", str(err)) from None
    alive = [int(b) for b, up in zip(model.broker_ids.tolist(), model.broker_alive.tolist(), strict=True) if up]
    gathered.live = model
    gathered.metric_key = PolicyKey(gathered.key[1], gathered.key[0], cluster_id)
    export(metrics, gathered.metric_key, seen)
    observed = ObservedCluster(cluster_id=cluster_id, brokers=alive, **cordons(model))
    return ClusterSeen(observed, seen.durability, seen.consumer_groups)


def connect(connector: Connector, spec: BalancePolicySpec, credentials: Credentials | None) -> KafkaPort:
    """A Kafka connection to the policy's cluster; failing to make one is a Stall."""
    try:
        return connector(spec.cluster, credentials)
    except KafkaError as err:
        raise kafka_stall(spec, err) from None
    except OSError as err:
        raise Stall(
            "ClusterUnreachable", f"spec.cluster.bootstrapServers {spec.cluster.bootstrap_servers}: {err}"
        ) from None


def kafka_stall(spec: BalancePolicySpec, err: KafkaError) -> Stall:
    """A Kafka error while reading the cluster as the Stalled reason that says what kind it is."""
    reason = "ClusterUnreachable"
    if isinstance(err, InvalidMetadataError):
        reason = "InvalidClusterMetadata"  # the cluster says what Kafka never does: nothing of it is used
    elif isinstance(err, KafkaClientCrashedError):
        reason = "KafkaClientCrashed"  # its worker process died; the operator did not
    return Stall(reason, f"spec.cluster.bootstrapServers {spec.cluster.bootstrap_servers}: {err}")


def read_analysis(
    gathered: Gathered, analyses: Analyses | None, status: BalancePolicyStatus
) -> Literal["measured", "live"] | NotAnalysed:
    """The live placement with the measured load, when the policy has a sample store ("live":
    it has none; NotAnalysed while the first usable analysis is pending)."""
    url = analyses.store_url(gathered.spec) if analyses is not None else None
    if analyses is None or url is None:
        return "live"
    key, metric_key, spec = gathered.key, gathered.metric_key, gathered.spec
    try:
        analyses.ensure_sampler(key, metric_key, spec, gathered.credentials, url)
    except (ValueError, OSError) as err:  # the store URL (StoreError is a ValueError) or the local directory
        raise Stall("InvalidSpec", f"spec.analysis.samples {url}: {err}") from None
    brokers = {name: group_brokers(group, gathered.racks) for name, group in gathered.groups}
    try:
        analysed = analyses.analyse(key, metric_key, spec, brokers, url, owner=owner_reference(gathered.body))
    except EngineUnavailable as err:
        # A failed SparkApplication is reported, not hidden behind the live model: its reason is the user's clue.
        raise Stall(err.reason, str(err)) from None
    except NotReady as err:
        if status.proposal is not None:
            log.info("%s/%s: planning on the live model: %s", key[0], key[1], err)
        return NotAnalysed(err.reason, str(err))
    assert gathered.live is not None  # the cluster was read first
    gathered.measured = with_measured_load(gathered.live, analysed.model)
    return "measured"

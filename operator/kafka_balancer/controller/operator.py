"""The kopf operator: thin handlers that hand each BalancePolicy/ResourceGroup to the reconciler.

Run it with ``kopf run -m kafka_balancer.controller.operator --standalone -A`` (the image's entry
point). Importing this module registers the handlers. Settings come from the environment:

- ``KAFKA_BALANCER_METRICS_PORT`` (9090; 0 picks a free port), ``KAFKA_BALANCER_METRICS_ADDRESS`` (0.0.0.0)
- ``KAFKA_BALANCER_RECONCILE_SECONDS`` (30): the level-based timer that re-reads the cluster
- ``KAFKA_BALANCER_EXECUTION_POLL_SECONDS`` (executor default): how often executions poll Kafka
- ``KAFKA_BALANCER_SAMPLE_STORE`` (unset): sample store for policies without ``spec.analysis.samples``;
  with neither, a policy plans from the sizes the cluster reports, without measured rates
- ``KAFKA_BALANCER_KAFKA_TIMEOUT_SECONDS`` (30): Kafka request timeout (a cluster that accepts connections
  and does not answer is reported as Stalled/ClusterUnreachable after it)
- ``KAFKA_BALANCER_CONNECT_TIMEOUT_SECONDS`` (10): how long a reconciliation waits for a cluster's bootstrap
  servers to accept a TCP connection before it is Stalled/ClusterUnreachable, without a Kafka client
- ``KAFKA_BALANCER_RECONCILE_CONCURRENCY`` (8): reconciliations talking to Kafka at once, shared fairly
  between namespaces (:mod:`kafka_balancer.controller.admission`)
- ``KAFKA_BALANCER_SPARK_APPLICATION`` (unset): JSON settings of the SparkApplications the operator
  submits for policies with ``spec.analysis.engine.type: sparkApplication`` (the chart's
  ``spark.sparkApplication`` values): ``image`` (required), ``serviceAccountName``, ``volumeClaim`` and
  ``mountPath`` (the shared volume holding the sample store, mounted at the same path as here),
  ``sparkVersion``, ``mainApplicationFile``, ``driver`` {cores, memory}, ``executor`` {instances, cores,
  memory}, and ``pendingTimeoutSeconds`` (600), ``runTimeoutSeconds`` (3600), ``pollSeconds`` (10),
  ``retrySeconds`` (300: how long a failed run is reported before the next attempt). Unset: such
  policies are Stalled/InvalidSpec. See :mod:`kafka_balancer.controller.spark_engine`.
- ``KAFKA_BALANCER_SPARK_ENGINE`` (local), ``KAFKA_BALANCER_SPARK_URL``, ``KAFKA_BALANCER_SPARK_DRIVER_MEMORY``:
  operator-wide Spark defaults (the chart's ``spark.local`` master and driver memory, or its
  ``spark.connect.url``) for what a policy's ``spec.analysis.engine`` leaves out; see
  :mod:`kafka_balancer.controller.spark_defaults`.
- ``KAFKA_BALANCER_SPARK_PLANNING_MIN_GROUPS`` (8): policies with at least this many resource groups are
  planned one group per Spark task on their analysis engine (local or Spark Connect); fewer groups, and
  operations planned over the whole cluster, are planned in the operator process. See
  :mod:`kafka_balancer.controller.group_planner`.
- ``KAFKA_BALANCER_SPARK_NAMESPACE``: namespace of those SparkApplications (else the JSON's ``namespace``)
- ``KAFKA_BALANCER_PROPOSAL_MAX_BYTES`` (134217728, 128 MiB): the largest proposal (as JSON) the operator
  stores; it takes ConfigMaps of 768 KiB compressed each (tens of thousands of changed partitions). A larger one
  makes the policy Stalled/ProposalTooLarge. See :mod:`kafka_balancer.controller.proposal_store`.
- ``KAFKA_BALANCER_LEASE_NAMESPACE`` (the pod's namespace), ``KAFKA_BALANCER_LEASE_NAME`` (kafka-balancer),
  ``KAFKA_BALANCER_LEASE_SECONDS`` (15): the Lease only its holder acts under (:mod:`kafka_balancer.controller.lease`).
- ``KAFKA_BALANCER_CLUSTERS`` (JSON), ``KAFKA_BALANCER_UNLISTED_CLUSTERS`` (allow): which namespaces may
  claim which Kafka clusters (:mod:`kafka_balancer.controller.claims`, docs/security.md).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import kopf
import kubernetes
import urllib3

from kafka_balancer.controller.admission import FairSlots, Lanes, contact
from kafka_balancer.controller.analysis import Analyses
from kafka_balancer.controller.claims import Claim, ClusterAccess
from kafka_balancer.controller.group_planner import SparkGroupPlanner
from kafka_balancer.controller.kubeapi import KubeApi
from kafka_balancer.controller.lease import Lease, LeaseSettings
from kafka_balancer.controller.proposal_store import DEFAULT_MAX_BYTES
from kafka_balancer.controller.reconcile import Outcome, Reconciler, ReconcilerOptions
from kafka_balancer.controller.services import AdapterConnector, Runs
from kafka_balancer.controller.spark_defaults import SparkDefaults
from kafka_balancer.controller.spark_engine import SparkApplications, SparkSettings
from kafka_balancer.controller.standby import stop_this_process, wait_for_lease
from kafka_balancer.controller.status import READY, STALLED, ResourceGroupStatus, set_condition
from kafka_balancer.kafka.reachability import unreachable
from kafka_balancer.metrics import Metrics
from kafka_balancer.model.policy.fields import GROUP, VERSION
from kafka_balancer.model.policy.parsing import PolicyError, parse_resource_group_spec

FINALIZER = "kafkabalancer.io/finalizer"
POLICIES = (GROUP, VERSION, "balancepolicies")
GROUPS = (GROUP, VERSION, "resourcegroups")


@dataclass(frozen=True)
class OperatorConfig:
    metrics_port: int = 9090
    metrics_address: str = "0.0.0.0"  # noqa: S104 - Prometheus scrapes the pod from outside
    reconcile_seconds: float = 30.0
    execution_poll_seconds: float | None = None
    kafka_timeout_seconds: float = 30.0
    connect_timeout_seconds: float = 10.0
    reconcile_concurrency: int = 8
    sample_store: str | None = None
    spark_application: SparkSettings | None = None
    spark_planning_min_groups: int = 8
    spark_defaults: SparkDefaults = field(default_factory=SparkDefaults)
    proposal_max_bytes: int = DEFAULT_MAX_BYTES
    lease: LeaseSettings = field(default_factory=lambda: LeaseSettings("default"))
    access: ClusterAccess = field(default_factory=ClusterAccess)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> OperatorConfig:
        env = dict(os.environ if env is None else env)
        try:
            return cls(
                metrics_port=_count("KAFKA_BALANCER_METRICS_PORT", env, 9090, minimum=0),
                metrics_address=env.get("KAFKA_BALANCER_METRICS_ADDRESS", cls.metrics_address),
                reconcile_seconds=_seconds("KAFKA_BALANCER_RECONCILE_SECONDS", env, 30.0),
                execution_poll_seconds=(
                    _seconds("KAFKA_BALANCER_EXECUTION_POLL_SECONDS", env, 1.0)
                    if env.get("KAFKA_BALANCER_EXECUTION_POLL_SECONDS")
                    else None
                ),
                kafka_timeout_seconds=_seconds("KAFKA_BALANCER_KAFKA_TIMEOUT_SECONDS", env, 30.0),
                connect_timeout_seconds=_seconds("KAFKA_BALANCER_CONNECT_TIMEOUT_SECONDS", env, 10.0),
                reconcile_concurrency=_count("KAFKA_BALANCER_RECONCILE_CONCURRENCY", env, 8),
                sample_store=env.get("KAFKA_BALANCER_SAMPLE_STORE") or None,
                spark_application=SparkSettings.from_env(env),
                spark_defaults=SparkDefaults.from_env(env),
                spark_planning_min_groups=_count("KAFKA_BALANCER_SPARK_PLANNING_MIN_GROUPS", env, 8, minimum=2),
                proposal_max_bytes=_count("KAFKA_BALANCER_PROPOSAL_MAX_BYTES", env, DEFAULT_MAX_BYTES),
                lease=LeaseSettings.from_env(env),
                access=ClusterAccess.from_env(env),
            )
        except ValueError as err:
            raise SystemExit(f"kafka-balancer: bad KAFKA_BALANCER_* environment setting: {err}") from None


def _seconds(name: str, env: dict[str, str], default: float) -> float:
    """A positive, finite number of seconds (``default`` when unset or empty)."""
    text = env.get(name) or str(default)
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise ValueError(f"{name} must be > 0 seconds, got {text!r}")
    return value


def _count(name: str, env: dict[str, str], default: int, *, minimum: int = 1) -> int:
    """A whole number at least ``minimum`` (``default`` when unset or empty)."""
    text = env.get(name) or str(default)
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {text!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


CONFIG = OperatorConfig.from_env()


@kopf.on.login()
def login(**_: Any) -> kopf.ConnectionInfo:
    """Service account in a pod, else the kubeconfig named by KUBECONFIG *now* (the client library only
    reads that variable when first imported, which is too early for tests and wrappers)."""
    try:
        kubernetes.config.load_incluster_config()  # type: ignore[no-untyped-call]
    except kubernetes.config.ConfigException:
        path = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None
        kubernetes.config.load_kube_config(config_file=path)  # type: ignore[no-untyped-call]
    config = kubernetes.client.Configuration.get_default_copy()
    header = config.get_api_key_with_prefix("BearerToken") or config.get_api_key_with_prefix("authorization")
    parts = header.split(" ", 1) if header else []
    scheme, token = (None, None) if not parts else (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
    return kopf.ConnectionInfo(
        server=config.host,
        ca_path=config.ssl_ca_cert,
        insecure=not config.verify_ssl,
        username=config.username or None,
        password=config.password or None,
        scheme=scheme,
        token=token,
        certificate_path=config.cert_file,
        private_key_path=config.key_file,
    )


@kopf.on.startup()
async def startup(
    settings: kopf.OperatorSettings, memo: kopf.Memo, logger: logging.Logger | logging.LoggerAdapter[Any], **_: Any
) -> None:
    settings.persistence.finalizer = FINALIZER
    # Keep kopf's bookkeeping in annotations so status holds only what users read.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="kafkabalancer.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="kafkabalancer.io", key="last-handled-configuration"
    )
    settings.posting.level = logging.WARNING  # our own Events describe transitions; no log echo
    settings.scanning.disabled = True  # the resources are known: no cluster-wide CRD listing needed
    config = OperatorConfig.from_env()
    metrics = Metrics()
    memo.metrics_server = metrics.serve(config.metrics_port, config.metrics_address)
    memo.kube = await asyncio.to_thread(KubeApi.from_environment)
    # A standby until it holds the Lease: nothing is watched, reconciled or executed before.
    memo.lease = Lease(memo.kube.coordination(), config.lease)
    await wait_for_lease(memo.lease, sys.argv)
    memo.runs = Runs()
    memo.locks = {}
    memo.lanes = Lanes(FairSlots(config.reconcile_concurrency))
    memo.config = config
    own_process = threading.current_thread() is threading.main_thread()  # `kopf run`, not embedded
    memo.lease.keep(on_lost=lambda: _lost_lease(memo, own_process=own_process))
    connector = AdapterConnector(config.kafka_timeout_seconds)
    spark = config.spark_application
    memo.analyses = Analyses(
        connector,
        metrics,
        config.sample_store,
        spark_applications=SparkApplications(memo.kube, spark) if spark is not None else None,
        spark_defaults=config.spark_defaults,
    )
    memo.reconciler = Reconciler(
        kube=memo.kube,
        connector=connector,
        planner=SparkGroupPlanner(config.spark_planning_min_groups, spark_defaults=config.spark_defaults),
        runs=memo.runs,
        metrics=metrics,
        options=ReconcilerOptions(
            execution_poll_seconds=config.execution_poll_seconds,
            proposal_max_bytes=config.proposal_max_bytes,
            access=config.access,
        ),
        analyses=memo.analyses,
        may_act=memo.lease.holds,
    )
    logger.info("kafka-balancer operator started; metrics on %s", memo.metrics_server.url)


def _lost_lease(memo: kopf.Memo, *, own_process: bool) -> None:
    """The Lease is someone else's now: every execution stops submitting at once; then leave."""
    memo.runs.let_go()
    stop_this_process(own_process=own_process)


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    if "runs" in memo:
        await asyncio.to_thread(memo.runs.detach_all)
    if "analyses" in memo:
        await asyncio.to_thread(memo.analyses.stop_all)
    if "lease" in memo:
        await asyncio.to_thread(memo.lease.release)  # after the executions let go: a standby takes over now
    if "lanes" in memo:
        memo.lanes.close()
    if "metrics_server" in memo:
        memo.metrics_server.close()
    if "kube" in memo:
        memo.kube.close()


@kopf.index(*POLICIES)
def policy_claims(body: kopf.Body, **_: Any) -> dict[None, Claim]:
    """Every policy's claim on its cluster, kept from the watch (controller.claims): no reconciliation
    lists every policy of every namespace."""
    return {None: Claim.of(body)}


async def _reconcile(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, claims: kopf.Index[None, Claim]) -> None:
    if not memo.lease.holds():
        return  # acting on nothing: the Lease is someone else's (this process is on its way out)
    known = list(claims.get(None, ()))  # a snapshot, taken on the event loop
    key = (body.metadata.namespace, body.metadata.name)
    lock = memo.locks.setdefault(key, asyncio.Lock())
    async with lock:  # the timer and the change handlers never reconcile one policy at the same time
        try:
            outcome = await _in_its_lane(body, memo, known)
        except kubernetes.client.ApiException as err:
            # Our own reads/writes failed (API server restarting, throttled): transient, retried with backoff.
            # Problems users must fix never get here: the reconciler reports them as Stalled.
            raise kopf.TemporaryError(f"Kubernetes API: {err.status} {err.reason}", delay=10) from err
        except urllib3.exceptions.HTTPError as err:
            raise kopf.TemporaryError(f"Kubernetes API unreachable: {err}", delay=10) from err
    if not memo.lease.holds():
        return  # no longer this operator's to write
    data = outcome.status.model_dump(mode="json", by_alias=True, exclude={"execution_checkpoint"})
    patch.status.update(data)
    for kind, reason, message in outcome.events:
        kopf.event(body, type=kind, reason=reason, message=message[:1000])


async def _in_its_lane(body: kopf.Body, memo: kopf.Memo, known: list[Claim]) -> Outcome:
    """Reconcile in the lane controller.admission gives it: express while its execution runs here, no
    Kafka client for a cluster that accepts no connection, else in its namespace's fair share of slots."""
    reconciler: Reconciler = memo.reconciler
    lanes: Lanes = memo.lanes
    namespace, name = str(body.metadata.namespace), str(body.metadata.name)
    run = memo.runs.get((namespace, name))
    if run is not None and not run.done:
        return await lanes.express(lambda: reconciler.reconcile(dict(body), known))
    servers = contact(body, known, memo.config.access)
    why = None if servers is None else await unreachable(servers, memo.config.connect_timeout_seconds)
    if why is not None:
        return await lanes.unreachable(lambda: reconciler.reconcile(dict(body), known, unreachable=why))
    return await lanes.with_kafka(namespace, lambda: reconciler.reconcile(dict(body), known))


@kopf.on.resume(*POLICIES)
@kopf.on.create(*POLICIES)
@kopf.on.update(*POLICIES, field="spec")
async def policy_changed(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **kwargs: Any) -> None:
    await _reconcile(body, patch, memo, kwargs["policy_claims"])


@kopf.timer(*POLICIES, interval=CONFIG.reconcile_seconds, initial_delay=CONFIG.reconcile_seconds, sharp=True)
async def policy_timer(body: kopf.Body, patch: kopf.Patch, memo: kopf.Memo, **kwargs: Any) -> None:
    await _reconcile(body, patch, memo, kwargs["policy_claims"])


@kopf.on.delete(*POLICIES)
async def policy_deleted(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    reconciler: Reconciler = memo.reconciler
    await Lanes.alone(lambda: reconciler.deleted(dict(body)))
    memo.locks.pop((body.metadata.namespace, body.metadata.name), None)


@kopf.on.resume(*GROUPS)
@kopf.on.create(*GROUPS)
@kopf.on.update(*GROUPS, field="spec")
async def group_changed(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    """Validate a ResourceGroup on its own; policies using it re-read it on their next reconciliation."""
    status = ResourceGroupStatus.model_validate(body.get("status") or {})
    generation = body.metadata.get("generation")
    try:
        parse_resource_group_spec(dict(body.spec))
    except PolicyError as err:
        status.conditions = set_condition(status.conditions, READY, False, reason="InvalidSpec", message=str(err))
        status.conditions = set_condition(status.conditions, STALLED, True, reason="InvalidSpec", message=str(err))
        kopf.warn(body, reason="InvalidSpec", message=str(err))
    else:
        status.conditions = set_condition(status.conditions, READY, True, reason="Valid", generation=generation)
        status.conditions = set_condition(status.conditions, STALLED, False, reason="Valid", generation=generation)
    status.observed_generation = generation
    patch.status.update(status.model_dump(mode="json", by_alias=True))

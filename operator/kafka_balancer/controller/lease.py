"""One operator acts at a time: leader election on a ``coordination.k8s.io/v1`` Lease.

Two operator processes against the same policies (a Deployment scaled to 2 by mistake, a rollout whose
pods overlap, a node partitioned away while its pod still runs) both executed them: the per-broker
limit of moves was exceeded and every event doubled. So an operator acts only while it holds the Lease
``kafka-balancer`` in its own namespace:

- At startup it waits, as a standby, until the Lease is free or expired: unchanged (same holder,
  same renewTime) for a whole ``duration_seconds`` as this process observes it (its own monotonic
  clock: no comparison of clocks across machines), then takes it with an update that fails if anyone
  changed it meanwhile (resourceVersion). Nothing is watched, reconciled or executed before.
- The holder renews it every ``duration_seconds / 5``. It counts as holding it only while its last
  successful write of the Lease was *sent* less than two thirds of ``duration_seconds`` ago: a standby
  takes the Lease only once it has seen that write unchanged for the whole duration, and the write
  cannot land before it was sent. A process stopped (SIGSTOP, a frozen VM) past that stops acting the
  moment it runs again, before anyone else may take the Lease.
- A renewal the API server does not answer (slow, restarting, unreachable; each call gives up after
  ``duration_seconds``) makes the Lease uncertain, not lost: the process acts on nothing while it is
  uncertain, and goes on once a renewal succeeds, which proves nobody took the Lease meanwhile (the
  write names the resourceVersion read, and every holder's identity is its own). Executions wait
  meanwhile (controller.services.StatusExecutionStore.attached); their moves in flight run on in Kafka.
- The Lease is lost once a read finds it someone else's (or gone): executions stop submitting at once
  and leave their checkpoint to the new holder, which resumes it (controller.services.DetachablePort);
  the process then exits (and its Deployment starts it again, as a standby).
- On a clean shutdown the holder releases the Lease (an empty holder), so a standby takes over at once.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import kubernetes
import urllib3

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_NAMESPACE: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAME: Final = "kafka-balancer"


@dataclass(frozen=True)
class LeaseSettings:
    namespace: str
    name: str = DEFAULT_NAME
    duration_seconds: float = 15.0
    identity: str = ""

    @property
    def renew_every(self) -> float:
        return self.duration_seconds / 5

    @property
    def valid_for(self) -> float:
        """How long after sending a renewal that succeeded this process still counts as the holder."""
        return self.duration_seconds * 2 / 3

    @classmethod
    def from_env(cls, env: dict[str, str]) -> LeaseSettings:
        """``KAFKA_BALANCER_LEASE_NAMESPACE`` (else the pod's own namespace, else ``default``),
        ``KAFKA_BALANCER_LEASE_NAME`` (kafka-balancer), ``KAFKA_BALANCER_LEASE_SECONDS`` (15)."""
        namespace = env.get("KAFKA_BALANCER_LEASE_NAMESPACE") or _pod_namespace() or "default"
        seconds = float(env.get("KAFKA_BALANCER_LEASE_SECONDS") or 15)
        if not 1 <= seconds <= 3600:
            raise ValueError(f"KAFKA_BALANCER_LEASE_SECONDS must be between 1 and 3600, got {seconds}")
        identity = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        return cls(namespace, env.get("KAFKA_BALANCER_LEASE_NAME") or DEFAULT_NAME, seconds, identity)


def _pod_namespace() -> str | None:
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or None
    except OSError:
        return None


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _said(err: Exception) -> str:
    if isinstance(err, kubernetes.client.ApiException):
        return f"{err.status} {err.reason}"
    return f"{type(err).__name__}: {err}"


def _micro_time(at: dt.datetime) -> str:
    """metav1.MicroTime as the API server writes it."""
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Lease:
    """The Lease as this process sees it. ``try_acquire`` and ``renew`` block (the Kubernetes client)."""

    def __init__(
        self,
        api: kubernetes.client.CoordinationV1Api,
        settings: LeaseSettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.settings = settings
        self.clock = clock
        self._renewed_at: float | None = None  # when the last successful write (renewal, take-over) was sent
        self.lost = False  # a read found the Lease someone else's (or gone) after this process held it
        self._observed: tuple[Any, ...] | None = None  # the other holder's record as last read
        self._observed_at = 0.0
        self._resource_version: str | None = None
        self.holder: str | None = None  # who held it at the last read
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ----- holding ------------------------------------------------------------------------
    def holds(self) -> bool:
        """Whether this process may act now (see the module)."""
        renewed = self._renewed_at
        return renewed is not None and self.clock() - renewed < self.settings.valid_for

    def try_acquire(self) -> bool:
        """One attempt: True once this process holds the Lease."""
        found = self._read()
        if found is None:
            return self._create()
        spec = found.spec
        holder = spec.holder_identity or ""
        self.holder = holder or None
        if holder == self.settings.identity:
            return self._update(found, transition=False)
        record = (holder, spec.renew_time, spec.lease_transitions, found.metadata.resource_version)
        if record != self._observed:
            self._observed, self._observed_at = record, self.clock()
        if holder and self.clock() - self._observed_at < self.settings.duration_seconds:
            return False
        return self._update(found, transition=True)

    def renew(self) -> bool:
        """Renew it: True once renewed. False when it is someone else's now (``lost``), or when someone
        wrote it meanwhile (the next read tells). An API server that does not answer raises (the
        Kubernetes client's errors): the Lease is uncertain then, and ``holds`` says until when it counts."""
        found = self._read()
        if found is None or (found.spec.holder_identity or "") != self.settings.identity:
            self.holder = None if found is None else found.spec.holder_identity
            self._renewed_at = None
            self.lost = True
            return False
        return self._update(found, transition=False)

    def release(self) -> None:
        """Give the Lease up (a clean shutdown): a standby takes it at once."""
        self._stop.set()
        if not self.holds():
            return
        self._renewed_at = None
        try:
            found = self._read()
            if found is not None and found.spec.holder_identity == self.settings.identity:
                self._patch(found.metadata.resource_version, {"holderIdentity": None})
        except (kubernetes.client.ApiException, urllib3.exceptions.HTTPError) as err:
            log.warning("cannot release Lease %s: %s", self._where, _said(err))

    # ----- renewing in the background ----------------------------------------------------------
    def keep(self, on_lost: Callable[[], None]) -> None:
        """Renew every ``renew_every`` seconds on a thread; ``on_lost()`` once the Lease is someone else's.
        While renewals go unanswered it is uncertain: ``holds`` is False once it is past ``valid_for``."""

        def loop() -> None:
            while not self._stop.wait(self.settings.renew_every):
                try:
                    self.renew()
                except (kubernetes.client.ApiException, urllib3.exceptions.HTTPError) as err:
                    log.warning("renewing Lease %s got no answer: %s", self._where, _said(err))
                except Exception:  # an unexpected client error: no answer either
                    log.exception("renewing Lease %s failed", self._where)
                if self.lost:
                    log.error("lost Lease %s (held by %s now): this operator stops acting", self._where, self.holder)
                    on_lost()
                    return
                if not self.holds():
                    log.warning(
                        "Lease %s not renewed for %.0f s: acting on nothing until it is",
                        self._where,
                        self.unrenewed_for,
                    )

        self._thread = threading.Thread(target=loop, name="lease", daemon=True)
        self._thread.start()

    @property
    def unrenewed_for(self) -> float:
        """Seconds since the last successful write was sent (infinite before the first)."""
        renewed = self._renewed_at
        return float("inf") if renewed is None else self.clock() - renewed

    # ----- the API ------------------------------------------------------------------------------
    @property
    def _where(self) -> str:
        return f"{self.settings.namespace}/{self.settings.name}"

    def _read(self) -> Any:
        try:
            return self.api.read_namespaced_lease(
                self.settings.name, self.settings.namespace, _request_timeout=self._request_timeout
            )
        except kubernetes.client.ApiException as err:
            if err.status == 404:
                return None
            raise

    def _create(self) -> bool:
        now = _now()
        body = kubernetes.client.V1Lease(
            metadata=kubernetes.client.V1ObjectMeta(name=self.settings.name, namespace=self.settings.namespace),
            spec=kubernetes.client.V1LeaseSpec(
                holder_identity=self.settings.identity,
                lease_duration_seconds=round(self.settings.duration_seconds),
                acquire_time=now,
                renew_time=now,
                lease_transitions=0,
            ),
        )
        sent = self.clock()
        try:
            self.api.create_namespaced_lease(self.settings.namespace, body, _request_timeout=self._request_timeout)
        except kubernetes.client.ApiException as err:
            if err.status == 409:  # another process created it first
                return False
            raise
        self._took(sent)
        return True

    def _update(self, found: Any, *, transition: bool) -> bool:
        """Write ourselves as the holder, only if nobody changed the Lease since ``found`` was read."""
        now = _micro_time(_now())
        spec: dict[str, Any] = {"renewTime": now, "leaseDurationSeconds": round(self.settings.duration_seconds)}
        if transition:
            spec |= {
                "holderIdentity": self.settings.identity,
                "acquireTime": now,
                "leaseTransitions": (found.spec.lease_transitions or 0) + 1,
            }
        sent = self.clock()
        try:
            self._patch(found.metadata.resource_version, spec)
        except kubernetes.client.ApiException as err:
            if err.status == 409:  # changed meanwhile: someone else renewed or took it
                return False
            raise
        if transition:
            self._took(sent)
        else:
            self._renewed_at = sent
        return True

    def _patch(self, resource_version: str, spec: dict[str, Any]) -> None:
        """A merge patch that names the resourceVersion it was made from: the API server refuses it (409)
        when the Lease changed since."""
        body = {"metadata": {"resourceVersion": resource_version}, "spec": spec}
        self.api.patch_namespaced_lease(
            self.settings.name,
            self.settings.namespace,
            body,
            _content_type="application/merge-patch+json",
            _request_timeout=self._request_timeout,
        )

    @property
    def _request_timeout(self) -> float:
        # A call left waiting on a connection that died silently would leave the Lease uncertain for good.
        return self.settings.duration_seconds

    def _took(self, sent: float) -> None:
        self._renewed_at = sent
        self.holder = self.settings.identity
        log.info("holding Lease %s as %s", self._where, self.settings.identity)

"""The controller's own Kubernetes API calls (besides kopf's watches and patches), in one place.

Blocking (the official client); called from worker threads, never on kopf's event loop. Every call
made here is listed in :mod:`kafka_balancer.controller.rbac` for the chart's RBAC rules.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from typing import Any, Final

import kubernetes

from kafka_balancer.model.policy.fields import GROUP, VERSION

POLICIES: Final = "balancepolicies"
GROUPS: Final = "resourcegroups"
SPARK_GROUP: Final = "sparkoperator.k8s.io"
SPARK_VERSION: Final = "v1beta2"
SPARK_APPLICATIONS: Final = "sparkapplications"


class NotFoundError(LookupError):
    """The named object does not exist."""


class ForbiddenError(PermissionError):
    """The API server refused the operator's request (403): its RBAC does not grant it."""


# The keys of a credentials Secret (spec.cluster.credentialsSecret, docs/security.md): no other key is read.
USERNAME_KEY: Final = "username"
PASSWORD_KEY: Final = "password"  # noqa: S105 - the name of a key, not a password
CA_KEY: Final = "ca.crt"
SERVERS_KEY: Final = "bootstrapServers"


@dataclass(frozen=True)
class Credentials:
    username: str | None
    password: str | None = field(repr=False)
    ca_pem: str | None
    servers: str | None = None  # the bootstrap servers the Secret may be used for (its SERVERS_KEY)


@dataclass(frozen=True)
class ConfigMap:
    """A ConfigMap as the controller reads and writes it: ``binary`` holds binaryData decoded."""

    name: str
    owners: tuple[str, ...]  # uids of its controller ownerReferences
    data: dict[str, str]
    binary: dict[str, bytes]


def _data(secret: Any, key: str) -> str | None:
    raw = (secret.data or {}).get(key)
    if raw is None:
        return None
    return base64.b64decode(raw).decode()


class KubeApi:
    """Thin typed wrapper over the kubernetes client for what the reconciler reads and writes."""

    def __init__(self, api_client: kubernetes.client.ApiClient) -> None:
        self._client = api_client
        self._custom = kubernetes.client.CustomObjectsApi(api_client)
        self._core = kubernetes.client.CoreV1Api(api_client)
        # The Spark operator's API group, on its own attribute: rbac.SPARK_APPLICATION_CALLS lists these
        # calls (granted only with spark.engine=sparkApplication), the kafkabalancer.io ones are in API_CALLS.
        self._spark = kubernetes.client.CustomObjectsApi(api_client)

    @classmethod
    def from_environment(cls) -> KubeApi:
        """In-cluster service account, else the kubeconfig (KUBECONFIG or ~/.kube/config)."""
        try:
            kubernetes.config.load_incluster_config()  # type: ignore[no-untyped-call]
            return cls(kubernetes.client.ApiClient())
        except kubernetes.config.ConfigException:
            # The client reads KUBECONFIG once at import; read it now so a later setting counts.
            path = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or None
            return cls(kubernetes.config.new_client_from_config(config_file=path))  # type: ignore[no-untyped-call]

    def close(self) -> None:
        self._client.close()  # type: ignore[no-untyped-call]

    def coordination(self) -> kubernetes.client.CoordinationV1Api:
        """The Lease API on this client (controller.lease; its calls are rbac.LEASE_CALLS)."""
        return kubernetes.client.CoordinationV1Api(self._client)

    # ----- custom resources ---------------------------------------------------------------
    def get_group(self, namespace: str, name: str) -> dict[str, Any]:
        try:
            obj = self._custom.get_namespaced_custom_object(GROUP, VERSION, namespace, GROUPS, name)
        except kubernetes.client.ApiException as err:
            if err.status == 404:
                raise NotFoundError(f"ResourceGroup {namespace}/{name} not found") from None
            raise
        if not isinstance(obj, dict):
            raise NotFoundError(f"ResourceGroup {namespace}/{name}: unexpected answer {obj!r}")
        return obj

    def patch_policy_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        """Merge-patch the status subresource (used by the executor's checkpoint store from its thread)."""
        self._custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, POLICIES, name, {"status": status}
        )

    # ----- SparkApplications (spec.analysis.engine.type: sparkApplication) -------------------
    def create_spark_application(self, manifest: dict[str, Any]) -> bool:
        """Create it; False when an object of that name already exists (submitted before a restart)."""
        namespace = str(manifest["metadata"]["namespace"])
        try:
            self._spark.create_namespaced_custom_object(
                SPARK_GROUP, SPARK_VERSION, namespace, SPARK_APPLICATIONS, manifest
            )
        except kubernetes.client.ApiException as err:
            if err.status == 409:
                return False
            raise
        return True

    def get_spark_application(self, namespace: str, name: str) -> dict[str, Any]:
        try:
            obj = self._spark.get_namespaced_custom_object(
                SPARK_GROUP, SPARK_VERSION, namespace, SPARK_APPLICATIONS, name
            )
        except kubernetes.client.ApiException as err:
            if err.status == 404:
                raise NotFoundError(f"SparkApplication {namespace}/{name} not found") from None
            raise
        if not isinstance(obj, dict):
            raise NotFoundError(f"SparkApplication {namespace}/{name}: unexpected answer {obj!r}")
        return obj

    def delete_spark_application(self, namespace: str, name: str) -> None:
        """Delete it (its driver and executor pods go with it); already gone is fine."""
        try:
            self._spark.delete_namespaced_custom_object(SPARK_GROUP, SPARK_VERSION, namespace, SPARK_APPLICATIONS, name)
        except kubernetes.client.ApiException as err:
            if err.status != 404:
                raise

    # ----- core ---------------------------------------------------------------------------
    def credentials(self, namespace: str, name: str) -> Credentials:
        """Read a credentials Secret's documented keys (only those). Raises NotFoundError or ForbiddenError
        naming the Secret: the chart grants each Secret by name (rbac.secrets), so 403 is a setting to
        fix, not a passing failure."""
        try:
            secret = self._core.read_namespaced_secret(name, namespace)
        except kubernetes.client.ApiException as err:
            if err.status == 404:
                raise NotFoundError(f"Secret {namespace}/{name} not found") from None
            if err.status == 403:
                raise ForbiddenError(f"the operator may not read Secret {namespace}/{name}") from None
            raise
        if secret is None:
            raise NotFoundError(f"Secret {namespace}/{name} not found")
        return Credentials(
            _data(secret, USERNAME_KEY), _data(secret, PASSWORD_KEY), _data(secret, CA_KEY), _data(secret, SERVERS_KEY)
        )

    def read_config_map(self, namespace: str, name: str) -> ConfigMap | None:
        """The ConfigMap, or None when there is none of that name."""
        try:
            cm = self._core.read_namespaced_config_map(name, namespace)
        except kubernetes.client.ApiException as err:
            if err.status == 404:
                return None
            raise
        references = (cm.metadata.owner_references if cm.metadata is not None else None) or []
        owners = tuple(str(ref.uid) for ref in references if ref.controller and ref.uid is not None)
        binary = {key: base64.b64decode(value) for key, value in (cm.binary_data or {}).items()}
        return ConfigMap(name, owners, dict(cm.data or {}), binary)

    def create_config_map(self, namespace: str, config_map: ConfigMap, owner: dict[str, Any]) -> None:
        """Create a ConfigMap owned by the policy (deleted with it by the garbage collector)."""
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": config_map.name,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/managed-by": "kafka-balancer"},
                "ownerReferences": [owner],
            },
            **_contents(config_map),
        }
        self._core.create_namespaced_config_map(namespace, body)  # type: ignore[arg-type] # a dict is accepted

    def replace_config_map_data(self, namespace: str, config_map: ConfigMap, before: ConfigMap) -> None:
        """Give an existing ConfigMap ``config_map``'s data: the keys ``before`` has and it has not are removed."""
        body: dict[str, Any] = _contents(config_map)
        for part, old in (("data", before.data), ("binaryData", before.binary)):
            body[part].update({key: None for key in old if key not in body[part]})  # JSON merge patch: remove
        self._core.patch_namespaced_config_map(
            config_map.name, namespace, body, _content_type="application/merge-patch+json"
        )


def _contents(config_map: ConfigMap) -> dict[str, Any]:
    binary = {key: base64.b64encode(value).decode() for key, value in config_map.binary.items()}
    return {"data": dict(config_map.data), "binaryData": binary}


def owner_reference(body: dict[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata", {})
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": body.get("kind", "BalancePolicy"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def dumps(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True)

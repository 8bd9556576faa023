"""A Kubernetes API for tests: kmock's KubernetesEmulator over HTTP on 127.0.0.1, in its own thread.

kmock 0.8 does not stamp metadata.resourceVersion/uid/generation (kopf's finalizer patch needs them)
and answers create with 200 (so the kubernetes client returns None: read objects back). This module
stamps them, serves the CRDs and core resources the operator uses, records every request (the RBAC
test compares them with kafka_balancer.controller.rbac), and writes a kubeconfig for kopf and the
kubernetes client.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import itertools
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import attrs
import kmock
import yaml
from kafka_balancer.controller.crdgen import all_crds
from kmock._internal import enums, rendering  # the request model, for the stamping hook


@dataclass(frozen=True)
class Call:
    """One API request as RBAC sees it."""

    group: str
    resource: str  # with the subresource, e.g. balancepolicies/status
    verb: str
    namespace: str | None


_VERBS = {
    enums.action.LIST: "list",
    enums.action.WATCH: "watch",
    enums.action.FETCH: "get",
    enums.action.CREATE: "create",
    enums.action.UPDATE: "patch",
    enums.action.DELETE: "delete",
}


@attrs.define(kw_only=True)
class StampingEmulator(kmock.KubernetesEmulator):
    """KubernetesEmulator that stamps uid/resourceVersion/generation/creationTimestamp like the API server."""

    calls: list[Call] = attrs.field(factory=list, init=False)
    _rv: Any = attrs.field(factory=lambda: itertools.count(1), init=False)

    async def _handle(self, request: rendering.Request) -> Any:
        # Discovery (/api, /apis/<group>/<version>) names no resource: every authenticated user may read it.
        if request.resource is not None and request.resource.plural and request.action in _VERBS:
            plural = request.resource.plural or ""
            sub = f"/{request.subresource}" if request.subresource else ""
            verb = _VERBS[request.action]
            if request.action == enums.action.UPDATE and request.method == "PUT":
                verb = "update"
            self.calls.append(Call(request.resource.group or "", plural + sub, verb, request.namespace))
        data = request.data
        if request.resource is not None and isinstance(data, dict):
            meta = data.setdefault("metadata", {})
            if request.action == enums.action.CREATE:
                if not meta.get("name") and meta.get("generateName"):  # kopf's Events
                    meta["name"] = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
                meta.setdefault("uid", str(uuid.uuid4()))
                meta["generation"] = 1
                meta.setdefault("creationTimestamp", dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
                meta.setdefault("namespace", request.namespace)
                meta["resourceVersion"] = str(next(self._rv))
            elif request.action == enums.action.UPDATE and request.name is not None:
                key = (request.resource, request.namespace, request.name)
                current = self.objects[key].raw if key in self.objects and not self.objects[key].deleted else {}
                # Only spec changes bump generation, as with the /status subresource on a real API server.
                if request.subresource != "status" and "spec" in data and data["spec"] != current.get("spec"):
                    meta["generation"] = int(current.get("metadata", {}).get("generation", 1)) + 1
                if request.subresource == "status":
                    data.pop("spec", None)  # the status subresource ignores spec changes
                meta["resourceVersion"] = str(next(self._rv))
        return await super()._handle(request)


def _register(emulator: StampingEmulator) -> None:
    for crd in all_crds().values():
        names = crd["spec"]["names"]
        emulator.resources[f"{crd['spec']['group']}/{crd['spec']['versions'][0]['name']}/{names['plural']}"] = (
            kmock.ResourceInfo(
                kind=names["kind"],
                singular=names["singular"],
                shortnames=set(names["shortNames"]),
                namespaced=True,
                verbs={"get", "list", "watch", "create", "update", "patch", "delete"},
                subresources={"status"},
            )
        )
    for plural, kind in (("events", "Event"), ("configmaps", "ConfigMap"), ("secrets", "Secret")):
        emulator.resources[f"v1/{plural}"] = kmock.ResourceInfo(
            kind=kind, singular=kind.lower(), namespaced=True, verbs={"get", "list", "watch", "create", "patch"}
        )
    emulator.resources["v1/namespaces"] = kmock.ResourceInfo(kind="Namespace", namespaced=False, verbs={"list"})
    emulator.resources["events.k8s.io/v1/events"] = kmock.ResourceInfo(kind="Event", namespaced=True, verbs={"create"})


class KubeServer:
    """kmock in a background thread with its own event loop; ``url`` is http://127.0.0.1:<free port>."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kmock", daemon=True)
        self._stack = contextlib.AsyncExitStack()
        self.emulator: StampingEmulator
        self.url = ""

    def start(self) -> KubeServer:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        return self

    async def _start(self) -> None:
        self.emulator = await self._stack.enter_async_context(StampingEmulator())
        _register(self.emulator)
        server = await self._stack.enter_async_context(kmock.Server(self.emulator, host="127.0.0.1"))
        self.url = str(server.url).rstrip("/")

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._stack.aclose(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def write_kubeconfig(self, path: Path) -> Path:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kmock", "cluster": {"server": self.url}}],
            "users": [{"name": "test", "user": {"token": "test"}}],
            "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "test", "namespace": "default"}}],
            "current-context": "kmock",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def objects(self, plural: str, group: str = "kafkabalancer.io", version: str = "v1alpha1") -> list[dict[str, Any]]:
        """Current (not deleted) objects of one resource, read from the emulator's memory."""

        async def read() -> list[dict[str, Any]]:
            out = []
            for (res, _ns, _name), obj in list(self.emulator.objects.items()):
                if res.plural == plural and res.group == group and res.version == version and not obj.deleted:
                    out.append(dict(obj.raw))
            return out

        return asyncio.run_coroutine_threadsafe(read(), self._loop).result(timeout=10)


@contextlib.contextmanager
def kube_server() -> Iterator[KubeServer]:
    server = KubeServer().start()
    try:
        yield server
    finally:
        server.stop()

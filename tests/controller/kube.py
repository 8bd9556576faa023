"""The sandbox's Kubernetes API emulator (kafka_balancer.sandbox.kube), recording every request.

The CRDs are served from the start (generated from the models, so a test never depends on the
committed YAML being current), and every request is recorded as RBAC sees it: the RBAC test
compares them with kafka_balancer.controller.rbac.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import attrs
from kafka_balancer.controller.crdgen import all_crds
from kafka_balancer.sandbox.kube import KubeApiServer, KubeEmulator
from kmock._internal import enums, rendering  # the request model


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
class StampingEmulator(KubeEmulator):
    """The sandbox emulator with the project's CRDs installed and a record of every request."""

    calls: list[Call] = attrs.field(factory=list, init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        for crd in all_crds().values():
            self.install_crd(crd)

    async def _handle(self, request: rendering.Request) -> Any:
        # Discovery (/api, /apis/<group>/<version>) names no resource: every authenticated user may read it.
        if request.resource is not None and request.resource.plural and request.action in _VERBS:
            plural = request.resource.plural or ""
            sub = f"/{request.subresource}" if request.subresource else ""
            verb = _VERBS[request.action]
            if request.action == enums.action.UPDATE and request.method == "PUT":
                verb = "update"
            self.calls.append(Call(request.resource.group or "", plural + sub, verb, request.namespace))
        return await super()._handle(request)


class KubeServer(KubeApiServer):
    """The recording emulator in a background thread; ``url`` is http://127.0.0.1:<free port>."""

    emulator: StampingEmulator

    def make_emulator(self) -> StampingEmulator:
        return StampingEmulator()

    def start(self) -> KubeServer:
        super().start()
        return self

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

"""The Kubernetes API servers of the operator tests: the sandbox's emulator, recording every request, and
the real kube-apiserver (tests/kube_apiserver.py), behind one interface (:class:`ApiServer`).

The emulator serves the CRDs from the start (generated from the models, so a test never depends on the
committed YAML being current), and records every request as RBAC sees it, with the user the bearer
token names (the emulator accepts any token; kubeconfigs written here carry "admin" or "operator"):
the tests compare the operator's requests with kafka_balancer.controller.rbac.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import attrs
import yaml
from kafka_balancer.controller.crdgen import all_crds
from kafka_balancer.sandbox.kube import KubeApiServer, KubeClient, KubeEmulator
from kmock._internal import enums, rendering  # the request model
from kube_apiserver import Call, User

EMULATED, KUBE_APISERVER = "emulated", "kube-apiserver"  # the two kinds of server, as test ids


class ApiServer(Protocol):
    """What the tests use of a Kubernetes API server, emulated or real."""

    url: str

    def write_kubeconfig(self, path: Path, namespace: str = "default", *, user: User = "operator") -> Path: ...

    def client(self, user: User = "admin") -> KubeClient: ...

    def objects(
        self, plural: str, group: str = "kafkabalancer.io", version: str = "v1alpha1"
    ) -> list[dict[str, Any]]: ...

    def calls(self, user: User) -> list[Call]: ...


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
            user = request.headers.get("Authorization", "").removeprefix("Bearer ")
            group = request.resource.group or ""
            self.calls.append(Call(user, group, plural + sub, verb, request.namespace, request.name))
        return await super()._handle(request)


class KubeServer(KubeApiServer):
    """The recording emulator in a background thread; ``url`` is http://127.0.0.1:<free port>."""

    emulator: StampingEmulator

    def make_emulator(self) -> StampingEmulator:
        return StampingEmulator()

    def start(self) -> KubeServer:
        super().start()
        return self

    def write_kubeconfig(self, path: Path, namespace: str = "default", *, user: User = "operator") -> Path:
        """A kubeconfig whose token names ``user`` (the emulator accepts any token and records it)."""
        super().write_kubeconfig(path, namespace)
        config = yaml.safe_load(path.read_text())
        config["users"][0]["user"]["token"] = user
        path.write_text(yaml.safe_dump(config))
        return path

    def client(self, user: User = "admin") -> KubeClient:
        return KubeClient(self.url, token=user)

    def calls(self, user: User) -> list[Call]:
        return [c for c in self.emulator.calls if c.user == user]

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

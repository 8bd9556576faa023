"""A Kubernetes API emulator for the demo: kmock's KubernetesEmulator over HTTP on 127.0.0.1.

It behaves enough like an API server for the real operator (kopf + the kubernetes client) and for a
person with kubectl:

- CustomResourceDefinitions are installed by creating them (``kubectl apply -f crds/``): the
  resources they define are served from then on, with their ``/status`` subresource.
- metadata.uid/resourceVersion/generation/creationTimestamp are stamped (kmock does not; kopf's
  finalizer patch needs them); only spec changes bump ``generation``, and a patch to ``/status``
  cannot change ``spec``, as with a real status subresource.
- ConfigMaps, Secrets and Events (the core resources the operator writes) are served.

:class:`KubeClient` is the demo's kubectl: create, get, list (items) and merge-patch over HTTP (stdlib only); with a
bearer token and a CA it talks to a real API server too (the tests' kube-apiserver, tests/kube_apiserver.py).
The controller tests serve a subclass that records every request (tests/controller/kube.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import itertools
import json
import ssl
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import kmock
import yaml
from kmock._internal import enums, rendering  # the request model, for the stamping hook

CRD_RESOURCE = "apiextensions.k8s.io/v1/customresourcedefinitions"
_CORE = (("events", "Event"), ("configmaps", "ConfigMap"), ("secrets", "Secret"))
_VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}


class KubeError(RuntimeError):
    """An API request answered with an error status (``code``), or not answered (``code`` None)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@attrs.define(kw_only=True)
class KubeEmulator(kmock.KubernetesEmulator):
    """KubernetesEmulator that installs CRDs when they are created and stamps object metadata."""

    _rv: Any = attrs.field(factory=lambda: itertools.count(1), init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        self.resources[CRD_RESOURCE] = kmock.ResourceInfo(
            kind="CustomResourceDefinition", singular="customresourcedefinition", namespaced=False, verbs=_VERBS
        )
        for plural, kind in _CORE:
            self.resources[f"v1/{plural}"] = kmock.ResourceInfo(
                kind=kind, singular=kind.lower(), namespaced=True, verbs=_VERBS
            )
        self.resources["events.k8s.io/v1/events"] = kmock.ResourceInfo(kind="Event", namespaced=True, verbs=_VERBS)
        self.resources["v1/namespaces"] = kmock.ResourceInfo(kind="Namespace", namespaced=False, verbs=_VERBS)

    def install_crd(self, crd: Mapping[str, Any]) -> None:
        """Serve the resource a CustomResourceDefinition defines (every version it lists)."""
        spec = crd["spec"]
        names = spec["names"]
        for version in spec["versions"]:
            self.resources[f"{spec['group']}/{version['name']}/{names['plural']}"] = kmock.ResourceInfo(
                kind=names["kind"],
                singular=names.get("singular", names["kind"].lower()),
                shortnames=set(names.get("shortNames", [])),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                verbs=_VERBS,
                subresources={"status"} if "status" in (version.get("subresources") or {}) else set(),
            )

    async def _handle(self, request: rendering.Request) -> Any:
        data = request.data
        if request.resource is not None and isinstance(data, dict):
            meta = data.setdefault("metadata", {})
            if request.action == enums.action.CREATE:
                # kmock would accept any resource; an API server knows only what is installed.
                if request.resource not in set(kmock.KubernetesScaffold._get_resources(self)):  # only the declared ones
                    raise kmock.KubernetesResourceNotFoundError
                if not meta.get("name") and meta.get("generateName"):  # kopf's Events
                    meta["name"] = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
                meta.setdefault("uid", str(uuid.uuid4()))
                meta["generation"] = 1
                meta.setdefault("creationTimestamp", _now())
                if request.namespace:
                    meta.setdefault("namespace", request.namespace)
                meta["resourceVersion"] = str(next(self._rv))
                if request.resource.plural == "customresourcedefinitions":
                    self.install_crd(data)
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


class KubeApiServer:
    """The emulator in a background thread with its own event loop; ``url`` is http://127.0.0.1:<free port>."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="kube-api", daemon=True)
        self._stack = contextlib.AsyncExitStack()
        self.emulator: KubeEmulator
        self.url = ""

    def start(self) -> KubeApiServer:
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=30)
        except BaseException:
            self._halt()
            raise
        return self

    def make_emulator(self) -> KubeEmulator:
        """The emulator to serve (tests serve a subclass that also records every request)."""
        return KubeEmulator()

    async def _start(self) -> None:
        self.emulator = await self._stack.enter_async_context(self.make_emulator())
        server = await self._stack.enter_async_context(kmock.Server(self.emulator, host="127.0.0.1"))
        self.url = str(server.url).rstrip("/")

    def stop(self) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self._stack.aclose(), self._loop).result(timeout=30)
        finally:
            self._halt()

    def _halt(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()

    def write_kubeconfig(self, path: Path, namespace: str = "default") -> Path:
        """A kubeconfig for kopf, the kubernetes client and kubectl (token auth; the emulator accepts any)."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "demo", "cluster": {"server": self.url}}],
            "users": [{"name": "demo", "user": {"token": "demo"}}],
            "contexts": [{"name": "demo", "context": {"cluster": "demo", "user": "demo", "namespace": namespace}}],
            "current-context": "demo",
        }
        path.write_text(yaml.safe_dump(config))
        return path


@contextlib.contextmanager
def kube_api_server() -> Iterator[KubeApiServer]:
    server = KubeApiServer().start()
    try:
        yield server
    finally:
        server.stop()


class KubeClient:
    """A few kubectl verbs over HTTP(S): create, get, items (list), merge-patch. ``plural`` names the resource.

    ``token``: sent as ``Authorization: Bearer`` (the emulator accepts any); ``ssl_context``: trusts the
    server's certificate on https URLs."""

    def __init__(
        self, url: str, timeout: float = 10.0, *, token: str | None = None, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.token = token
        self.ssl_context = ssl_context

    @staticmethod
    def path(api_version: str, plural: str, namespace: str | None = None, name: str | None = None) -> str:
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        ns = f"/namespaces/{namespace}" if namespace else ""
        return f"{base}{ns}/{plural}" + (f"/{name}" if name else "")

    def _request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json", accept: str = ""
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": content_type} | ({"Accept": accept} if accept else {})
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(  # noqa: S310 - the URL is an API server's address on 127.0.0.1
            self.url + path, data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.ssl_context) as response:  # noqa: S310 - see above
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as err:
            detail = err.read().decode(errors="replace")[:300]
            raise KubeError(f"{method} {path}: HTTP {err.code}: {detail}", err.code) from None
        except OSError as err:
            raise KubeError(f"{method} {path}: {err}") from None

    def create(self, obj: Mapping[str, Any], plural: str, *, dry_run: bool = False) -> Any:
        """``kubectl create [--dry-run=server]``: unknown fields are refused (kubectl's strict validation)."""
        namespace = obj.get("metadata", {}).get("namespace")
        query = "?fieldValidation=Strict" + ("&dryRun=All" if dry_run else "")
        return self._request("POST", self.path(obj["apiVersion"], plural, namespace) + query, dict(obj))

    def get(self, api_version: str, plural: str, namespace: str | None, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self._request("GET", self.path(api_version, plural, namespace, name))
        return found

    def items(self, api_version: str, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """The objects of one resource, in ``namespace`` or (None) in every namespace."""
        items: list[dict[str, Any]] = self._request("GET", self.path(api_version, plural, namespace)).get("items") or []
        return items

    def table(self, api_version: str, plural: str, namespace: str | None = None) -> dict[str, Any]:
        """``kubectl get``: the server's table of the resource's printer columns (a real API server only)."""
        accept = "application/json;as=Table;g=meta.k8s.io;v=v1"
        table: dict[str, Any] = self._request("GET", self.path(api_version, plural, namespace), accept=accept)
        return table

    def merge_patch(
        self,
        api_version: str,
        plural: str,
        namespace: str | None,
        name: str,
        patch: Mapping[str, Any],
        *,
        subresource: str | None = None,
    ) -> Any:
        """``kubectl patch --type merge [--subresource status]``."""
        path = self.path(api_version, plural, namespace, name) + (f"/{subresource}" if subresource else "")
        return self._request("PATCH", path, dict(patch), "application/merge-patch+json")

    def resources(self, api_version: str) -> list[str]:
        """``kubectl api-resources --api-group``: resource names served for one group version."""
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        return [str(r["name"]) for r in self._request("GET", base).get("resources", [])]

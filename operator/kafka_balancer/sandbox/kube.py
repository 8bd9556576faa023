"""A Kubernetes API emulator for the demo: kmock's KubernetesEmulator over HTTP on 127.0.0.1.

It behaves enough like an API server for the real operator (kopf + the kubernetes client) and for a
person with kubectl:

- CustomResourceDefinitions are installed by creating them (``kubectl apply -f crds/``): the
  resources they define are served from then on, with their ``/status`` subresource.
- metadata.uid/resourceVersion/generation/creationTimestamp are stamped (kmock does not; kopf's
  finalizer patch needs them); only spec changes bump ``generation``, and a patch to ``/status``
  cannot change ``spec``, as with a real status subresource.
- ConfigMaps, Secrets and Events (the core resources the operator writes) are served.
- Object names must be DNS-1123 subdomains (422 Invalid otherwise).
- The API server's size limits hold: a ConfigMap's or Secret's data (``data`` plus decoded
  ``binaryData``, keys included) at most 1 MiB (422 Invalid, "Too long"), and any object as stored
  at most 1.5 MiB, etcd's default request limit (413, "etcdserver: request is too large"). The stored
  size is taken as the object's compact JSON, binary data counted decoded (etcd keeps core objects in
  protobuf and custom resources in JSON).

:class:`KubeClient` is the demo's kubectl: create, get, list (items) and merge-patch over HTTP (stdlib only); with a
bearer token and a CA it talks to a real API server too (the tests' kube-apiserver, tests/kube_apiserver.py).
The controller tests serve a subclass that records every request (tests/controller/kube.py).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import copy
import datetime as dt
import itertools
import json
import re
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp.test_utils
import aiohttp.web
import aiohttp.web_request
import aiohttp.web_server
import attrs
import kmock
import yaml
from kmock._internal import dicts, enums, rendering  # the request model, for the stamping hook; merge patches

from kafka_balancer.sandbox import kube_openapi

CRD_RESOURCE = "apiextensions.k8s.io/v1/customresourcedefinitions"
_CORE = (("events", "Event"), ("configmaps", "ConfigMap"), ("secrets", "Secret"))
_VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}


# The API server's limits (k8s.io/api core/v1 MaxSecretSize for ConfigMaps and Secrets; etcd's
# --max-request-bytes default for every object).
DATA_LIMIT_BYTES = 1024 * 1024
REQUEST_LIMIT_BYTES = 3 * 1024 * 1024  # a request body (aiohttp's own default is 1 MiB)
OBJECT_LIMIT_BYTES = 1024 * 1024 * 3 // 2
_DATA_KINDS = frozenset({"configmaps", "secrets"})


class KubeError(RuntimeError):
    """An API request answered with an error status (``code``), or not answered (``code`` None)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


@attrs.frozen
class _TooLong(kmock.KubernetesError):
    status: int = 422
    reason: str = "Invalid"
    message: str = ""
    details: Any = attrs.field(factory=lambda: {"causes": [{"reason": "FieldValueTooLong", "field": "[]"}]})


@attrs.frozen
class _Unprocessable(kmock.KubernetesError):
    status: int = 422
    reason: str = "Invalid"
    message: str = ""
    details: Any = attrs.field(factory=dict)


@attrs.frozen
class _TooLarge(kmock.KubernetesError):
    status: int = 413
    reason: str = "RequestEntityTooLarge"
    message: str = "etcdserver: request is too large"
    details: Any = attrs.field(factory=lambda: {"causes": []})


def _decoded_size(value: Any) -> int:
    try:
        return len(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError):
        return len(str(value))


def data_size(obj: Mapping[str, Any]) -> int:
    """A ConfigMap's or Secret's data as the API server counts it: keys plus values, binary values decoded."""
    total = sum(len(k) + len(str(v).encode()) for k, v in (obj.get("data") or {}).items())
    total += sum(len(k) + len(str(v).encode()) for k, v in (obj.get("stringData") or {}).items())
    return total + sum(len(k) + _decoded_size(v) for k, v in (obj.get("binaryData") or {}).items())


def stored_size(obj: Mapping[str, Any]) -> int:
    """The object's size as stored (see the module docstring)."""
    binary = obj.get("binaryData") or {}
    text = json.dumps({k: v for k, v in obj.items() if k != "binaryData"}, separators=(",", ":"))
    return len(text.encode()) + sum(len(k) + _decoded_size(v) for k, v in binary.items())


_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def check_name(kind: str, name: Any) -> None:
    """Refuse a name that is not a DNS-1123 subdomain, as the API server does for the objects served here."""
    if not isinstance(name, str) or len(name) > 253 or not _SUBDOMAIN.match(name):
        raise _Unprocessable(
            message=f'{kind} "{name}" is invalid: metadata.name: Invalid value: "{name}": a lowercase RFC 1123'
            " subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end"
            " with an alphanumeric character"
        )


def check_size(plural: str, name: str, obj: Mapping[str, Any]) -> None:
    """Refuse an object over the API server's limits, with the API server's status and message."""
    if plural in _DATA_KINDS and data_size(obj) > DATA_LIMIT_BYTES:
        kind = "ConfigMap" if plural == "configmaps" else "Secret"
        raise _TooLong(message=f'{kind} "{name}" is invalid: []: Too long: must have at most {DATA_LIMIT_BYTES} bytes')
    if stored_size(obj) > OBJECT_LIMIT_BYTES:
        raise _TooLarge()


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
        # The operator's Lease (one operator acts at a time, controller/lease.py).
        self.resources["coordination.k8s.io/v1/leases"] = kmock.ResourceInfo(
            kind="Lease", singular="lease", namespaced=True, verbs=_VERBS
        )
        self.resources["v1/namespaces"] = kmock.ResourceInfo(kind="Namespace", namespaced=False, verbs=_VERBS)
        # What the real kubectl needs beyond the resources (kube_openapi).
        self.fallback["get /openapi/v3"] << self._serve_openapi_index
        self.fallback["get", re.compile(r"/openapi/v3/.+")] << self._serve_openapi_document

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

    def _kinds(self) -> dict[Any, tuple[str, bool]]:
        infos = self.resources
        return {
            r: (str(infos[r].kind), bool(infos[r].namespaced)) for r in kmock.KubernetesScaffold._get_resources(self)
        }

    async def _serve_openapi_index(self, _: rendering.Request) -> Any:
        return kube_openapi.openapi_index(self._kinds())

    async def _serve_openapi_document(self, request: rendering.Request) -> Any:
        document = kube_openapi.openapi_document(request.url.path.removeprefix("/openapi/v3/"), self._kinds())
        if document is None:
            raise kmock.KubernetesResourceNotFoundError
        return document

    async def _serve_list(self, request: rendering.Request) -> Any:
        listed: Any = await super()._serve_list(request)
        resource = request.resource
        assert resource is not None  # kmock routes only a resource's list here
        return kube_openapi.typed_list(listed, resource, str(self.resources[resource].kind))

    async def _serve_version(self, request: rendering.Request) -> Any:
        served: Any = await super()._serve_version(request)
        return kube_openapi.without_subresource_names(served)

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
                check_name(str(data.get("kind") or request.resource.plural), meta.get("name"))
                meta.setdefault("uid", str(uuid.uuid4()))
                meta["generation"] = 1
                meta.setdefault("creationTimestamp", _now())
                if request.namespace:
                    meta.setdefault("namespace", request.namespace)
                meta["resourceVersion"] = str(next(self._rv))
                if request.resource.plural == "customresourcedefinitions":
                    self.install_crd(data)
                check_size(request.resource.plural or "", str(meta.get("name")), data)
            elif request.action == enums.action.UPDATE and request.name is not None:
                key = (request.resource, request.namespace, request.name)
                current = self.objects[key].raw if key in self.objects and not self.objects[key].deleted else {}
                # Only spec changes bump generation, as with the /status subresource on a real API server.
                if request.subresource != "status" and "spec" in data and data["spec"] != current.get("spec"):
                    meta["generation"] = int(current.get("metadata", {}).get("generation", 1)) + 1
                if request.subresource == "status":
                    data.pop("spec", None)  # the status subresource ignores spec changes
                meta["resourceVersion"] = str(next(self._rv))
                if current:  # the object this patch would make, before it is made
                    merged = dicts.patch_dict(copy.deepcopy(dict(current)), data)
                    check_size(request.resource.plural or "", request.name, merged)
        elif (
            request.resource is not None
            and request.name is not None
            and isinstance(data, list)
            and request.action == enums.action.UPDATE
        ):
            self._check_json_patch(request.resource, request.namespace, request.name, data)
        return await super()._handle(request)

    def _check_json_patch(self, resource: Any, namespace: str | None, name: str, patch: list[Any]) -> None:
        """A JSON patch (RFC 6902) that does not apply is refused with 422, as the API server does, not 500:
        kopf retries a 5xx with the same body (a stale resourceVersion ``test`` then fails nine times over
        a minute) while after a 4xx it reads the object again. One that applies bumps resourceVersion."""
        key = (resource, namespace, name)
        if key not in self.objects or self.objects[key].deleted:
            return  # kmock answers 404
        try:
            merged = dicts.patch_dict(copy.deepcopy(dict(self.objects[key].raw)), patch)
        except Exception as err:  # jsonpatch's errors: a failed "test", a path that is not there
            raise _Unprocessable(
                message=f"the server rejected our request due to an error in our request: {err}"
            ) from None
        check_size(resource.plural or "", name, merged)
        patch.append({"op": "replace", "path": "/metadata/resourceVersion", "value": str(next(self._rv))})


class _HttpServer(aiohttp.test_utils.RawTestServer):
    """kmock's HTTP server, taking request bodies up to the API server's limit."""

    async def _make_runner(self, debug: bool = True, **kwargs: Any) -> aiohttp.web.ServerRunner:
        loop = self._loop or asyncio.get_running_loop()

        def request(
            message: Any, payload: Any, protocol: Any, writer: Any, task: Any
        ) -> aiohttp.web_request.BaseRequest:
            return aiohttp.web_request.BaseRequest(
                message, payload, protocol, writer, task, loop, client_max_size=REQUEST_LIMIT_BYTES
            )

        server = aiohttp.web_server.Server(self._handler, loop=loop, debug=debug, request_factory=request, **kwargs)
        return aiohttp.web.ServerRunner(server, debug=debug, **kwargs)


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
        server = await self._stack.enter_async_context(
            kmock.Server(self.emulator, host="127.0.0.1", server_cls=_HttpServer)
        )
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

    def delete(self, api_version: str, plural: str, namespace: str | None, name: str) -> Any:
        """``kubectl delete --wait=false``: marks the object deleted; its finalizers still run."""
        return self._request("DELETE", self.path(api_version, plural, namespace, name))

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
        field_manager: str | None = None,
    ) -> Any:
        """``kubectl patch --type merge [--subresource status] [--field-manager NAME]``."""
        path = self.path(api_version, plural, namespace, name) + (f"/{subresource}" if subresource else "")
        if field_manager:
            path += f"?fieldManager={urllib.parse.quote(field_manager)}"
        return self._request("PATCH", path, dict(patch), "application/merge-patch+json")

    def resources(self, api_version: str) -> list[str]:
        """``kubectl api-resources --api-group``: resource names served for one group version."""
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        return [str(r["name"]) for r in self._request("GET", base).get("resources", [])]

"""A real Kubernetes API server for the operator's tests: kube-apiserver and etcd from `make kube-binaries`.

    with kube_apiserver(workdir) as server:  # etcd + kube-apiserver on 127.0.0.1, CRDs and the chart's RBAC in
        server.write_kubeconfig(path, "kafka", user="operator")  # for the operator
        server.client("admin").get(...)                          # the test's kubectl
        server.calls("operator")                                 # every request the operator made (audit log)

What runs, as in a cluster:

- etcd on free loopback ports, its data in the work directory (no fsync: the data is thrown away);
- kube-apiserver on https://127.0.0.1:<free port> with a serving certificate from a throwaway CA
  (trustme), a static token file with two users, ``--authorization-mode=RBAC``, service-account keys,
  the default admission plugins plus OwnerReferencesPermissionEnforcement (the operator's ConfigMaps
  carry a blockOwnerDeletion owner reference, which that plugin checks), and an audit log of every
  request: who, verb, resource, namespace, name and the response code;
- as ``admin`` (group system:masters): the namespaces, the CRDs of crds/ created as
  ``kubectl apply -f crds/`` does (then awaited until served), and the chart's ServiceAccount and RBAC
  objects rendered by the real Helm library with the given values (ClusterRole or Role variant,
  ``rbac.secrets``);
- ``operator`` is the user name of the chart's ServiceAccount (system:serviceaccount:<namespace>:<name>)
  with the groups a ServiceAccount token carries: the chart's bindings bind it as they are rendered.

A test node (tests/node) runs the same server as its control plane, with :class:`ServerOptions`: in
the node's namespaces (``network``), on the node's address and reached through a forwarded port,
nothing installed beforehand (helm installs the chart), the node's components among its users, and
the flags a cluster with nodes has (Node authorization, NodeRestriction, the `kubernetes` Service's
endpoints).

Both processes are stopped when the block exits, also on failure, and killed if pytest itself dies.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import trustme
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from delivery.chart import manifests, render
from kafka_balancer.sandbox.kube import KubeClient, KubeError
from kafka_balancer.sandbox.ports import free_port
from processes import spawn, stop, tail

REPO = Path(__file__).resolve().parents[1]
BIN = REPO / "build" / "kube" / "bin"
CRDS = REPO / "crds"
API_VERSION = "kafkabalancer.io/v1alpha1"
RELEASE_NAMESPACE = "kafka-balancer"  # where the chart is installed
# The operator's Lease as the chart names it for the tests' release "kb" (its fullname, the Deployment's
# KAFKA_BALANCER_LEASE_NAME): the chart grants get and patch on that Lease only.
LEASE_NAME = "kb-kafka-balancer"
POLICY_NAMESPACE = "kafka"  # where the tests' policies live
CREDENTIALS_SECRET = "kafka-balancer-credentials"
# The chart as the README installs it: the operator may read one Secret, in the policies' namespace.
CHART_VALUES: dict[str, Any] = {"rbac": {"secrets": [{"namespace": POLICY_NAMESPACE, "names": [CREDENTIALS_SECRET]}]}}

User = str  # "admin", "operator", or one of ServerOptions.users
_RBAC_KINDS = {
    "ServiceAccount": "serviceaccounts",
    "ClusterRole": "clusterroles",
    "ClusterRoleBinding": "clusterrolebindings",
    "Role": "roles",
    "RoleBinding": "rolebindings",
}
_AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata"}],
}


class Network(Protocol):
    """Where the servers run and how this process reaches them."""

    address: str  # what the servers listen on and advertise

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` as started there."""

    def reach(self, port: int) -> int:
        """The port on 127.0.0.1 here that reaches ``address:port``."""


class Loopback:
    """The machine's own loopback (the default)."""

    address = "127.0.0.1"

    def command(self, argv: list[str]) -> list[str]:
        return argv

    def reach(self, port: int) -> int:
        return port


@dataclass(frozen=True)
class ServerOptions:
    chart_values: dict[str, Any] = field(default_factory=lambda: CHART_VALUES)
    # The namespaces, CRDs and the chart's RBAC created at start (False: an empty cluster).
    install: bool = True
    network: Network = field(default_factory=Loopback)
    # More token users: role -> (user name, groups), e.g. a kubelet's system:node:<name>.
    users: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    # More flags; one of the defaults given here is replaced.
    extra_args: tuple[str, ...] = ()
    # More names and addresses the serving certificate is valid for (the Service's ClusterIP).
    server_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Call:
    """One API request as RBAC sees it."""

    user: str  # "admin", "operator", or the user name of anyone else
    group: str  # "" for the core API
    resource: str  # with the subresource, e.g. balancepolicies/status
    verb: str
    namespace: str | None
    name: str | None = None
    code: int | None = None  # the response status, where the server tells it


class KubeApiserver:
    """etcd and kube-apiserver, started by :meth:`start` and stopped by :meth:`stop`."""

    def __init__(self, workdir: Path, options: ServerOptions) -> None:
        self.workdir = workdir
        self.options = options
        self.rbac = [
            o for o in manifests(render(options.chart_values, namespace=RELEASE_NAMESPACE)) if o["kind"] in _RBAC_KINDS
        ]
        account = next(o for o in self.rbac if o["kind"] == "ServiceAccount")["metadata"]["name"]
        self.users = {"admin": "admin", "operator": f"system:serviceaccount:{RELEASE_NAMESPACE}:{account}"}
        self.groups = {
            "admin": ("system:masters",),
            "operator": ("system:serviceaccounts", f"system:serviceaccounts:{RELEASE_NAMESPACE}"),
        }
        for role, (name, groups) in options.users.items():
            self.users[role], self.groups[role] = name, groups
        self.url = ""  # as this process reaches it
        self.internal_url = ""  # as the servers' own network reaches it
        self._tokens = {role: secrets.token_hex(16) for role in self.users}
        self._processes: list[subprocess.Popen[bytes]] = []
        self.ca = workdir / "ca.crt"  # the CA of the serving certificate (kube-root-ca.crt in every namespace)
        self.service_account_key = workdir / "service-accounts.key"
        self._audit = workdir / "audit.log"

    # ----- processes ----------------------------------------------------------------------------
    def start(self) -> KubeApiserver:
        missing = [b for b in ("etcd", "kube-apiserver") if not (BIN / b).exists()]
        if missing:
            raise RuntimeError(f"{', '.join(missing)} not built: run `make kube-binaries` (see kube/go.mod)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            etcd = self._start_etcd()
            self._start_apiserver(etcd)
            if self.options.install:
                self._install()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for proc in reversed(self._processes):  # the API server before its storage
            stop(proc)
        self._processes.clear()

    def _spawn(self, name: str, command: list[str]) -> subprocess.Popen[bytes]:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.workdir)}
        proc = spawn(self.options.network.command(command), env=env, log=self.workdir / f"{name}.log")
        self._processes.append(proc)
        return proc

    def _wait(self, name: str, probe: Callable[[], bool], timeout: float = 90.0) -> None:
        proc = self._processes[-1]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited ({proc.returncode}):\n{tail(self.workdir / f'{name}.log')}")
            with contextlib.suppress(OSError, KubeError, ValueError):
                if probe():
                    return
            time.sleep(0.2)
        raise RuntimeError(f"{name} not ready after {timeout}s:\n{tail(self.workdir / f'{name}.log')}")

    def _start_etcd(self) -> str:
        address, client_port = self.options.network.address, free_port()
        client, peer = f"http://{address}:{client_port}", f"http://{address}:{free_port()}"
        reached = f"http://127.0.0.1:{self.options.network.reach(client_port)}"
        command = [
            str(BIN / "etcd"),
            "--name=test",
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=test={peer}",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ]
        self._spawn("etcd", command)

        def healthy() -> bool:
            with urllib.request.urlopen(f"{reached}/health", timeout=2) as response:  # noqa: S310 - loopback
                return bool(json.loads(response.read()).get("health") == "true")

        self._wait("etcd", healthy)
        return client

    def _credentials(self) -> tuple[Path, Path, tuple[Path, Path], Path]:
        """Serving certificate and key (trustme CA in ca.crt), service-account key pair, static token file."""
        ca = trustme.CA()
        ca.cert_pem.write_to_path(str(self.ca))
        serving = ca.issue_cert("127.0.0.1", self.options.network.address, *self.options.server_names)
        cert, key = self.workdir / "serving.crt", self.workdir / "serving.key"
        serving.cert_chain_pems[0].write_to_path(str(cert))
        serving.private_key_pem.write_to_path(str(key))
        signing = ec.generate_private_key(ec.SECP256R1())
        accounts = self.workdir / "service-accounts.key", self.workdir / "service-accounts.pub"
        accounts[0].write_bytes(
            signing.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        accounts[1].write_bytes(
            signing.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        tokens = self.workdir / "tokens.csv"
        tokens.write_text(
            "".join(f'{self._tokens[u]},{self.users[u]},{u},"{",".join(self.groups[u])}"\n' for u in self.users)
        )
        return cert, key, accounts, tokens

    def _start_apiserver(self, etcd: str) -> None:
        cert, key, accounts, tokens = self._credentials()
        policy = self.workdir / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump(_AUDIT_POLICY))
        port = free_port()
        address = self.options.network.address
        command = [
            str(BIN / "kube-apiserver"),
            f"--etcd-servers={etcd}",
            f"--bind-address={address}",
            f"--advertise-address={address}",
            f"--secure-port={port}",
            f"--cert-dir={self.workdir / 'certs'}",
            f"--tls-cert-file={cert}",
            f"--tls-private-key-file={key}",
            f"--token-auth-file={tokens}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={accounts[1]}",
            f"--service-account-signing-key-file={accounts[0]}",
            "--service-cluster-ip-range=10.96.0.0/24",  # allocated from, never reached
            "--endpoint-reconciler-type=none",
            "--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self._audit}",
            "--audit-log-mode=blocking",
            "--profiling=false",
        ]
        replaced = {arg.partition("=")[0] for arg in self.options.extra_args}
        command = [arg for arg in command if arg.partition("=")[0] not in replaced] + list(self.options.extra_args)
        self._spawn("kube-apiserver", command)
        self.url = f"https://127.0.0.1:{self.options.network.reach(port)}"
        self.internal_url = f"https://{address}:{port}"
        context = self.ssl_context()

        def ready() -> bool:  # every post-start hook done, the RBAC bootstrap roles among them
            request = urllib.request.Request(  # noqa: S310 - loopback
                f"{self.url}/readyz", headers={"Authorization": f"Bearer {self._tokens['admin']}"}
            )
            with urllib.request.urlopen(request, timeout=2, context=context) as response:  # noqa: S310 - loopback
                return bool(response.read() == b"ok")

        self._wait("kube-apiserver", ready)

    # ----- what the cluster holds at the start ----------------------------------------------------
    def _install(self) -> None:
        admin = self.client("admin")
        namespaces = {RELEASE_NAMESPACE, POLICY_NAMESPACE} | {
            o["metadata"]["namespace"] for o in self.rbac if o["metadata"].get("namespace")
        }
        for ns in sorted(namespaces):
            admin.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}, "namespaces")
        served: set[str] = set()
        for path in sorted(CRDS.glob("*.yaml")):
            for crd in yaml.safe_load_all(path.read_text()):
                admin.create(crd, "customresourcedefinitions")
                served.add(crd["spec"]["names"]["plural"])
        for obj in self.rbac:
            admin.create(obj, _RBAC_KINDS[obj["kind"]])

        def served_and_listable() -> bool:  # a new resource answers 429 while its watch cache fills
            found = set(admin.resources(API_VERSION))
            return served <= found and all(admin.items(API_VERSION, plural) is not None for plural in served)

        self._wait("kube-apiserver", served_and_listable, timeout=30)

    # ----- for the tests ----------------------------------------------------------------------
    @contextlib.contextmanager
    def stalled(self) -> Iterator[None]:
        """The API server stopped (SIGSTOP) meanwhile: every request waits for an answer, as from a server
        stalled by its storage; it answers them all once continued."""
        server = self._processes[-1]
        os.kill(server.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(server.pid, signal.SIGCONT)

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))

    def client(self, user: User = "admin") -> KubeClient:
        return KubeClient(self.url, token=self._tokens[user], ssl_context=self.ssl_context())

    def write_kubeconfig(
        self, path: Path, namespace: str = "default", *, user: User = "operator", internal: bool = False
    ) -> Path:
        """A kubeconfig for kopf, the kubernetes client and kubectl, as ``user``; ``internal``: for a
        process on the servers' own network (a node's kubelet)."""
        server = self.internal_url if internal else self.url
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "test", "cluster": {"server": server, "certificate-authority": str(self.ca)}}],
            "users": [{"name": user, "user": {"token": self._tokens[user]}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": user, "namespace": namespace}}],
            "current-context": "test",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def objects(self, plural: str, group: str = "kafkabalancer.io", version: str = "v1alpha1") -> list[dict[str, Any]]:
        """The objects of one resource in every namespace, read as admin."""
        return self.client("admin").items(f"{group}/{version}" if group else version, plural)

    def can_i(self, user: User, call: Call) -> bool:
        """``kubectl auth can-i --as``: the server's RBAC answer, asked with a SubjectAccessReview."""
        resource, _, sub = call.resource.partition("/")
        attributes = {"verb": call.verb, "group": call.group, "resource": resource, "subresource": sub}
        attributes |= {"namespace": call.namespace or "", "name": call.name or ""}
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": self.users[user], "groups": list(self.groups[user]), "resourceAttributes": attributes},
        }
        return bool(self.client("admin").create(review, "subjectaccessreviews")["status"].get("allowed"))

    def calls(self, user: User) -> list[Call]:
        """Every resource request ``user`` has made so far, from the audit log, with its response code."""
        who = {name: role for role, name in self.users.items()}
        last: dict[str, dict[str, Any]] = {}  # auditID -> its last stage (a watch: ResponseStarted)
        for line in self._audit.read_text().splitlines():
            event = json.loads(line)
            if who.get(event["user"]["username"]) == user and (event.get("objectRef") or {}).get("resource"):
                last[event["auditID"]] = event
        out = []
        for event in last.values():
            ref = event["objectRef"]
            sub = f"/{ref['subresource']}" if ref.get("subresource") else ""
            code = (event.get("responseStatus") or {}).get("code")
            out.append(
                Call(
                    user,
                    ref.get("apiGroup", ""),
                    ref["resource"] + sub,
                    event["verb"],
                    ref.get("namespace"),
                    ref.get("name"),
                    code,
                )
            )
        return out


@contextlib.contextmanager
def kube_apiserver(
    workdir: Path, chart_values: dict[str, Any] | None = None, *, options: ServerOptions | None = None
) -> Iterator[KubeApiserver]:
    """A started server with the CRDs and the chart's RBAC (``chart_values``, default :data:`CHART_VALUES`)."""
    options = options or ServerOptions(CHART_VALUES if chart_values is None else chart_values)
    server = KubeApiserver(workdir, options).start()
    try:
        yield server
    finally:
        server.stop()

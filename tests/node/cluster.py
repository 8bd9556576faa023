"""A real single-node Kubernetes cluster for the tests: the control plane and a node, in namespaces of
their own on this machine.

    with kube_node(workdir, images=[IMAGE_ARCHIVE]) as node:
        node.kubectl("get", "nodes")              # the real kubectl, as admin, from this machine
        node.helm("kafka-balancer")               # the Helm library's config for the same cluster
        node.call(lambda: ...)                    # run inside the node's network (Kafka on the node)

What runs (tests/node/components.py says how each is configured, tests/node/namespaces.py how the
node is kept apart from the machine):

- etcd and kube-apiserver (tests/kube_apiserver.py) on the node's address, nothing installed, with
  Node and RBAC authorization, NodeRestriction, and the `kubernetes` Service's endpoints; this
  process reaches it through a forwarded port on 127.0.0.1;
- kube-controller-manager and kube-scheduler; containerd with runc and the CNI bridge, the given
  image archives imported (``ctr -n k8s.io images import``) with the node's pause image; the kubelet
  (registered as node "node", Ready); kube-proxy (nftables), so that pods reach the API server at its
  Service's ClusterIP, as in any cluster.

Every binary is built by `make kube-binaries kube-node` from kube/go.mod (the same k8s.io/kubernetes
module for all of them). Everything stops when the block exits, also on failure: the node's
processes, its containers and its mounts end with its namespaces, and its cgroups are removed.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import helm_python as helm
from kafka_balancer.sandbox.kube import KubeError
from kafka_balancer.sandbox.ports import free_port
from kube_apiserver import BIN, KubeApiserver, ServerOptions
from kubectl import kubectl
from processes import tail

from node import components
from node.components import CONTAINERD_SOCKET, NODE_NAME, NodeFiles
from node.namespaces import NODE_ADDRESS, SERVICE_SUBNET, NodeNamespaces, node_environment

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]
PAUSE_ARCHIVE = REPO / "build" / "kube" / "pause.tar"
NODE_BINARIES = ("kubelet", "kube-controller-manager", "kube-scheduler", "kube-proxy", "pause", "kubectl")
SERVICE_IP = SERVICE_SUBNET.rsplit(".", 1)[0] + ".1"  # the `kubernetes` Service's ClusterIP
# The node's components as the API server knows them (the users its bootstrap RBAC binds).
NODE_USERS = {
    "kubelet": (f"system:node:{NODE_NAME}", ("system:nodes",)),
    "kube-controller-manager": ("system:kube-controller-manager", ()),
    "kube-scheduler": ("system:kube-scheduler", ()),
    "kube-proxy": ("system:kube-proxy", ()),
}


class KubeNode:
    """Started by :meth:`start`, stopped by :meth:`stop` (also after a failed start)."""

    def __init__(self, workdir: Path, images: Sequence[Path]) -> None:
        self.workdir = workdir
        self.images = [PAUSE_ARCHIVE, *images]
        self.namespaces = NodeNamespaces(workdir / "node", BIN / "pause")
        self.files = NodeFiles(workdir / "node", self.namespaces.cgroup_root)
        self.server: KubeApiserver | None = None
        self.admin_kubeconfig = workdir / "admin.kubeconfig"

    # ----- lifecycle ----------------------------------------------------------------------------
    def start(self) -> KubeNode:
        missing = [str(p) for p in [*(BIN / b for b in NODE_BINARIES), *self.images] if not p.exists()]
        if missing:
            raise RuntimeError(f"missing {', '.join(missing)}: run `make kube-node image` (README)")
        try:
            self.namespaces.start()
            self._start_control_plane()
            self._start_runtime()
            self._start_kubelet()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.namespaces.stop()

    def _start_control_plane(self) -> None:
        options = ServerOptions(
            install=False,
            network=_NodeNetwork(self.namespaces),
            users=NODE_USERS,
            extra_args=(
                "--authorization-mode=Node,RBAC",
                "--enable-admission-plugins=NodeRestriction,OwnerReferencesPermissionEnforcement",
                "--endpoint-reconciler-type=lease",
                f"--service-cluster-ip-range={SERVICE_SUBNET}",
                "--kubelet-preferred-address-types=InternalIP",
            ),
            server_names=(SERVICE_IP, "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
        )
        self.server = KubeApiserver(self.workdir / "kube-apiserver", options).start()
        self.server.write_kubeconfig(self.admin_kubeconfig, user="admin")
        ns = self.namespaces
        env = node_environment()
        manager = self._kubeconfig("kube-controller-manager")
        ns.spawn(
            "kube-controller-manager",
            components.kube_controller_manager(manager, self.server.ca, self.server.service_account_key),
            env,
        )
        ns.spawn("kube-scheduler", components.kube_scheduler(self.files, self._kubeconfig("kube-scheduler")), env)
        admin = self.server.client("admin")
        # As a cluster that serves its users: the controllers made the default ServiceAccount.
        self._await(
            "the default ServiceAccount",
            lambda: bool(admin.get("v1", "serviceaccounts", "default", "default")),
            "kube-controller-manager",
        )

    def _start_runtime(self) -> None:
        ns = self.namespaces
        ns.spawn("containerd", components.containerd(self.files), node_environment())
        ctr = ["/usr/bin/ctr", f"--address={CONTAINERD_SOCKET}", "--namespace=k8s.io"]
        self._await("containerd", lambda: bool(ns.run([*ctr, "version"])), "containerd")
        for archive in self.images:
            ns.run([*ctr, "images", "import", str(archive)], timeout=600)

    def _start_kubelet(self) -> None:
        assert self.server is not None
        ns, env = self.namespaces, node_environment()
        ns.spawn("kubelet", components.kubelet(self.files, self._kubeconfig("kubelet"), free_port()), env)
        self._await("node Ready", self._node_ready, "kubelet")
        ns.spawn("kube-proxy", components.kube_proxy(self.files, self._kubeconfig("kube-proxy")), env)
        self._await("the API server's Service", self._service_programmed, "kube-proxy")

    def _kubeconfig(self, role: str) -> Path:
        assert self.server is not None
        return self.server.write_kubeconfig(self.files.path(f"{role}.kubeconfig"), user=role, internal=True)

    def _node_ready(self) -> bool:
        assert self.server is not None
        node = self.server.client("admin").get("v1", "nodes", None, NODE_NAME)
        return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))

    def _service_programmed(self) -> bool:
        """kube-proxy's rules send the API server's Service (its ClusterIP) to the API server."""
        assert self.server is not None
        rules = self.namespaces.run(["nft", "list", "table", "ip", "kube-proxy"])
        return f"dnat to {self.server.internal_url.removeprefix('https://')}" in rules and SERVICE_IP in rules

    def _await(self, what: str, probe: Callable[[], bool], log: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.namespaces.processes():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited ({proc.returncode}):\n{tail(self.namespaces.log(name))}")
            with contextlib.suppress(OSError, KubeError, RuntimeError, subprocess.SubprocessError):
                if probe():
                    return
            time.sleep(0.5)
        raise RuntimeError(f"{what}: not after {timeout} s:\n{tail(self.namespaces.log(log))}")

    # ----- for the tests --------------------------------------------------------------------------
    def call(self, fn: Callable[[], T]) -> T:
        """``fn()`` inside the node's network (see NodeNamespaces.call)."""
        return self.namespaces.call(fn)

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """The real kubectl, as admin, from this machine."""
        return kubectl(self.admin_kubeconfig, *args, stdin=stdin, check=check)

    def helm(self, namespace: str) -> helm.Config:
        """The Helm library's configuration for this cluster, as admin, like `helm --namespace NAMESPACE`."""
        return helm.Config(kubeconfig_path=str(self.admin_kubeconfig), namespace=namespace)

    def logs(self) -> str:
        """The node's servers' last log lines, for a failure's message."""
        return "\n".join(f"--- {n}\n{tail(self.namespaces.log(n), 15)}" for n, _ in self.namespaces.processes())


class _NodeNetwork:
    """tests/kube_apiserver.Network for the node: its servers run inside, reached by forwarded ports."""

    address = NODE_ADDRESS

    def __init__(self, namespaces: NodeNamespaces) -> None:
        self._namespaces = namespaces

    def command(self, argv: list[str]) -> list[str]:
        return self._namespaces.command(argv)

    def reach(self, port: int) -> int:
        return self._namespaces.forward(port)


@contextlib.contextmanager
def kube_node(workdir: Path, images: Sequence[Path]) -> Iterator[KubeNode]:
    node = KubeNode(workdir, images).start()
    try:
        yield node
    finally:
        node.stop()

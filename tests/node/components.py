"""The configuration of each server of the test node, as a cluster administrator writes it.

Each function writes its server's files into the work directory and returns its command line; the
node (tests/node/cluster.py) starts them inside its namespaces. What had to differ from a default
install on these machines, and why, is said where it is set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml
from kube_apiserver import BIN

from node.namespaces import NODE_ADDRESS, POD_SUBNET

NODE_NAME = "node"
CONTAINERD_SOCKET = "/run/containerd/containerd.sock"  # on the node's own /run
PAUSE_IMAGE = "localhost/kafka-balancer-pause:1"


@dataclass(frozen=True)
class NodeFiles:
    """Where one node keeps its files, and the cgroup its pods go under."""

    workdir: Path
    cgroup_root: str

    def path(self, name: str) -> Path:
        path = self.workdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path


def containerd(files: NodeFiles) -> list[str]:
    """containerd with its CRI plugin: runc (cgroupfs), overlayfs, the CNI bridge, the local pause image."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    config = f"""\
version = 2
root = "{files.path("containerd/root")}"
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "{CONTAINERD_SOCKET}"

[ttrpc]
  address = "{CONTAINERD_SOCKET}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{files.path("containerd/opt")}"

[{cri}]
  # No registry serves registry.k8s.io/pause here: the node's own (kube/pause), imported beforehand.
  sandbox_image = "{PAUSE_IMAGE}"
  # Lowering a process's oom_score_adj is refused on these VMs: the pod sandbox's -998 would fail with
  # "can't get final child's PID from pipe". Restricted, containers get no lower than containerd's own.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  BinaryName = "/usr/sbin/runc"
  SystemdCgroup = false

[{cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{files.path("cni/net.d")}"
"""
    # Pods off the host network: a bridge (cni0) with the pod subnet, its gateway on the node.
    network = {
        "cniVersion": "1.0.0",
        "name": "pods",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": True,
                "ipMasq": False,  # nothing leaves the node: no NAT rule to make
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(files.path("cni/ipam")),
                },
            }
        ],
    }
    files.path("cni/net.d/10-pods.conflist").write_text(json.dumps(network, indent=2))
    files.path("containerd/config.toml").write_text(config)
    return ["/usr/bin/containerd", f"--config={files.path('containerd/config.toml')}"]


def kubelet(files: NodeFiles, kubeconfig: Path, port: int) -> list[str]:
    """The kubelet, as these VMs let it run (cgroup v1, cgroupfs driver)."""
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # These VMs have a hybrid cgroup v1 hierarchy: the kubelet refuses v1 unless told otherwise, and
        # without systemd as init the driver is cgroupfs (as runc's in containerd above).
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": files.cgroup_root,
        "containerRuntimeEndpoint": f"unix://{CONTAINERD_SOCKET}",
        "address": NODE_ADDRESS,
        "port": port,
        "readOnlyPort": 0,
        "healthzPort": 0,
        # Its API serves the API server's `kubectl logs`; nothing outside the node's network reaches it.
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        # Reads the kernel settings it wants (shadowed in the node's namespaces), never writes them.
        "protectKernelDefaults": True,
        "failSwapOn": False,
        "volumePluginDir": str(files.path("kubelet-plugins")),
        "podLogsDir": "/var/log/pods",
        "resolvConf": "/etc/resolv.conf",
        "maxPods": 16,
        # A shared build machine's disk is often past the default thresholds; memory as the default.
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
    }
    files.path("kubelet/config.yaml").write_text(yaml.safe_dump(config))
    return [
        str(BIN / "kubelet"),
        f"--config={files.path('kubelet/config.yaml')}",
        f"--kubeconfig={kubeconfig}",
        f"--root-dir={files.path('kubelet/root')}",
        f"--hostname-override={NODE_NAME}",
        f"--node-ip={NODE_ADDRESS}",
        "--v=1",
    ]


def kube_proxy(files: NodeFiles, kubeconfig: Path) -> list[str]:
    """kube-proxy in nftables mode, in the node's network only: ClusterIPs (the API server's Service)."""
    config = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "nftables",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": NODE_NAME,
        "clusterCIDR": POD_SUBNET,
        "healthzBindAddress": "",
        "metricsBindAddress": "",
        # Connection tracking limits are the machine's (not the node network's): left as they are.
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
            "udpTimeout": "0s",
            "udpStreamTimeout": "0s",
        },
    }
    files.path("kube-proxy/config.yaml").write_text(yaml.safe_dump(config))
    return [str(BIN / "kube-proxy"), f"--config={files.path('kube-proxy/config.yaml')}", "--v=1"]


def kube_controller_manager(kubeconfig: Path, ca: Path, service_account_key: Path) -> list[str]:
    """The controllers (Deployments, ReplicaSets, garbage collection, kube-root-ca.crt, ...), each
    with its own ServiceAccount's credentials as kubeadm runs them."""
    return [
        str(BIN / "kube-controller-manager"),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        "--secure-port=0",
        "--leader-elect=false",
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={service_account_key}",
        f"--root-ca-file={ca}",
        "--allocate-node-cidrs=false",
        "--controllers=*",
    ]


def kube_scheduler(files: NodeFiles, kubeconfig: Path) -> list[str]:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {"leaderElect": False},
    }
    files.path("kube-scheduler/config.yaml").write_text(yaml.safe_dump(config))
    return [
        str(BIN / "kube-scheduler"),
        f"--config={files.path('kube-scheduler/config.yaml')}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        "--secure-port=0",
    ]

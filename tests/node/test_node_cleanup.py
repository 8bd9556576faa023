"""The test node leaves nothing on the machine: after a run that ends with a failure inside it, and
after a start that fails half way, no process of it is left (servers, containerd's shims, containers),
no mount (its /run, /var, the pods' volumes and root filesystems), no cgroup and no network device
is visible on the machine."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from node.cluster import KubeNode, kube_node
from node.namespaces import CGROUP_FS

pytestmark = pytest.mark.timeout(900)
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "sleeper", "namespace": "default"},
    "spec": {
        "containers": [{"name": "pause", "image": "localhost/kafka-balancer-pause:1", "imagePullPolicy": "Never"}],
        "terminationGracePeriodSeconds": 0,
    },
}


def _traces(node: KubeNode) -> dict[str, list[str]]:
    """What of the node the machine can see: processes in its mount namespace, mounts under its work
    directory, its cgroups."""
    mount_ns = node.namespaces.mount_namespace
    processes = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "mnt") == mount_ns:
                    processes.append(entry.name)
            except OSError:
                continue
    mounts = [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(node.workdir) in line]
    mounts += [line for line in Path("/proc/self/mountinfo").read_text().splitlines() if " node-" in line]
    cgroups = [str(p) for p in CGROUP_FS.glob(f"*/{node.namespaces.cgroup_root.lstrip('/')}")]
    return {"processes": processes, "mounts": mounts, "cgroups": cgroups}


def _run_and_fail(node_dir: Path) -> KubeNode:
    """A node running a pod, left by an exception (as a failing test leaves it)."""
    with kube_node(node_dir, images=[]) as node:
        node.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(POD))
        node.kubectl("wait", "--for=condition=Ready", "pod/sleeper", "--timeout=300s")
        pod = json.loads(node.kubectl("get", "pod", "sleeper", "-o", "json").stdout)
        assert pod["status"]["podIP"].startswith("10.244.0.")
        running = _traces(node)
        assert running["processes"], "the node's servers, its shim and its container run in its namespaces"
        assert running["cgroups"]
        assert not running["mounts"], "the node's mounts are its own, not the machine's"
        raise FailureInNodeError(node)


class FailureInNodeError(Exception):
    def __init__(self, node: KubeNode) -> None:
        super().__init__("the test failed")
        self.node = node


def test_a_failure_inside_a_running_node_leaves_nothing_behind(tmp_path: Path) -> None:
    with pytest.raises(FailureInNodeError) as failed:
        _run_and_fail(tmp_path)
    assert _traces(failed.value.node) == {"processes": [], "mounts": [], "cgroups": []}


def test_a_start_that_fails_half_way_leaves_nothing_behind(tmp_path: Path) -> None:
    bad = tmp_path / "not-an-image.tar"
    bad.write_bytes(b"not a tar")
    node = KubeNode(tmp_path / "node", images=[bad])
    with pytest.raises(RuntimeError, match="images import"):
        node.start()  # containerd, the API server and the controllers run when the import fails
    assert _traces(node) == {"processes": [], "mounts": [], "cgroups": []}

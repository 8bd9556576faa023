"""The operator image (`make image`) run with podman as the chart runs it in a pod.

    with Pod(tmp_path, values) as pod:                        # the chart's Deployment, rendered
        pod.run(["kafka-balancer", "--help"])                 # a command in a new container, to its end
        operator = pod.start(env={"KUBECONFIG": ...})          # the image's own entry point, in the background

What the chart's pod spec says, podman is told: the user and group (runAsUser, runAsGroup, fsGroup),
a read-only root filesystem with nothing writable but the pod's volumes (each emptyDir a fresh
directory here, owned by the pod's fsGroup as the kubelet makes it), no capabilities, no privilege
escalation, the container's environment and arguments. The network is the machine's (`--network
host`: the tests' Kafka brokers and API server are on its loopback) or none. podman runs with runc and
explicit ulimits at or below this process's (crun fails on these VMs' hybrid cgroup v1).

Every container is labelled with this test run's pid and removed at the end of the block, also on
failure; containers left by a run that was killed are removed by the next one.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from delivery.chart import manifests, one, render

REPO = Path(__file__).resolve().parents[2]
VERSION = re.search(r'^version = "(.+)"', (REPO / "pyproject.toml").read_text(), re.M)
IMAGE = f"localhost/kafka-balancer:{VERSION.group(1) if VERSION else '0.1.0'}"
IMAGE_ARCHIVE = REPO / "build" / "image" / "kafka-balancer.tar"
PODMAN = ["podman", "--runtime", "runc"]
LABEL = "io.kafka-balancer.test-run"
ULIMITS = 65536  # at most: RLIMIT_NOFILE and RLIMIT_NPROC are set to min(this, our own soft limit)


def image_built() -> str:
    """The image's name, after checking podman has it."""
    if shutil.which("podman") is None:
        raise RuntimeError("podman is not installed: run `make image` (it installs Debian's podman)")
    found = subprocess.run(["podman", "image", "exists", IMAGE], check=False)
    if found.returncode != 0:
        raise RuntimeError(f"{IMAGE} not built: run `make image`")
    return IMAGE


def remove_abandoned_containers() -> None:
    """Remove containers of test runs whose process is gone (a killed run runs no teardown)."""
    listed = subprocess.run(
        [
            "podman",
            "ps",
            "-a",
            "--filter",
            f"label={LABEL}",
            "--format",
            f'{{{{.ID}}}} {{{{index .Labels "{LABEL}"}}}}',
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    for line in listed.stdout.splitlines():
        container, _, pid = line.partition(" ")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            subprocess.run(["podman", "rm", "-f", container], capture_output=True, check=False)


class Pod:
    """The chart's pod (rendered with ``values``) as podman containers of the built image."""

    def __init__(self, workdir: Path, values: dict[str, Any] | None = None) -> None:
        self.image = image_built()
        self.workdir = workdir
        deployment = one(manifests(render(values or {})), "Deployment")
        self.spec: dict[str, Any] = deployment["spec"]["template"]["spec"]
        self.container: dict[str, Any] = self.spec["containers"][0]
        self.volumes: dict[str, Path] = {}  # mount path -> the directory on this machine
        self._names: list[str] = []

    def __enter__(self) -> Pod:
        remove_abandoned_containers()
        group = self.spec["securityContext"].get("fsGroup")
        volumes = {v["name"]: v for v in self.spec["volumes"]}
        for mount in self.container["volumeMounts"]:
            assert "emptyDir" in volumes[mount["name"]], f"{mount['name']}: only emptyDir volumes are run here"
            path = self.workdir / "volumes" / mount["name"]
            path.mkdir(parents=True)
            if group is not None:  # the kubelet gives an emptyDir to the fsGroup, group-writable
                os.chown(path, 0, group)
                path.chmod(0o2775)
            self.volumes[mount["mountPath"]] = path
        return self

    def __exit__(self, *exc: object) -> None:
        for name in self._names:
            subprocess.run([*PODMAN, "rm", "-f", "-t", "30", name], capture_output=True, check=False, timeout=120)
        self._names.clear()

    def env(self, name: str) -> str:
        """The value the chart gives the container's variable ``name``."""
        return str(next(e["value"] for e in self.container["env"] if e["name"] == name))

    def args(
        self, *, network: str = "none", env: Mapping[str, str] | None = None, mounts: Sequence[Path] = ()
    ) -> list[str]:
        """``podman run`` options for one container of the pod; ``mounts``: files of this machine
        the container reads at the same path (read-only)."""
        pod_context, context = self.spec["securityContext"], self.container["securityContext"]
        user = f"{pod_context['runAsUser']}:{pod_context['runAsGroup']}"
        name = f"kafka-balancer-test-{uuid.uuid4().hex[:10]}"
        self._names.append(name)
        limit = min(
            ULIMITS, resource.getrlimit(resource.RLIMIT_NOFILE)[0], resource.getrlimit(resource.RLIMIT_NPROC)[0]
        )
        out = [f"--name={name}", f"--label={LABEL}={os.getpid()}", f"--network={network}", f"--user={user}"]
        out += [f"--ulimit=nofile={limit}:{limit}", f"--ulimit=nproc={limit}:{limit}"]
        if "fsGroup" in pod_context:
            out.append(f"--group-add={pod_context['fsGroup']}")
        if context.get("readOnlyRootFilesystem"):
            out += ["--read-only", "--read-only-tmpfs=false"]  # writable: the pod's volumes, nothing else
        if context.get("allowPrivilegeEscalation") is False:
            out.append("--security-opt=no-new-privileges")
        out += [f"--cap-drop={c}" for c in context.get("capabilities", {}).get("drop", [])]
        out += [f"--volume={path}:{target}" for target, path in self.volumes.items()]
        out += [f"--volume={path}:{path}:ro" for path in mounts]
        variables = {e["name"]: e["value"] for e in self.container.get("env", []) if "value" in e}
        out += [f"--env={k}={v}" for k, v in {**variables, **(env or {})}.items()]
        return out

    def run(
        self, command: Sequence[str], *, mounts: Sequence[Path] = (), timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """``command`` in a new container of the pod (no network), to its end."""
        args = [*PODMAN, "run", "--rm", *self.args(mounts=mounts), f"--entrypoint={command[0]}", self.image]
        return subprocess.run([*args, *command[1:]], capture_output=True, text=True, timeout=timeout, check=False)

    def start(
        self, log: Path, *, env: Mapping[str, str], mounts: Sequence[Path], arguments: Sequence[str]
    ) -> subprocess.Popen[bytes]:
        """The image's entry point with ``arguments`` (the chart's container args), on the machine's
        network, in the background; its output in ``log``. Stopped (``podman rm -f``) at the end of the block."""
        args = [*PODMAN, "run", "--rm", *self.args(network="host", env=env, mounts=mounts), self.image, *arguments]
        with log.open("wb") as out:
            return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

"""The test node's own namespaces and cgroup: nothing it runs is seen by, or left on, the machine.

    with NodeNamespaces(workdir, pause) as ns:   # pid, mount and network namespaces held by `pause`
        ns.spawn("kubelet", [...], env)          # a process inside all three (nsenter)
        ns.call(start_kafka)                     # a function run by a thread inside the network
                                                 # namespace (its sockets and children's are there)
        port = ns.forward(6443)                  # 127.0.0.1:port on the machine reaches NODE_ADDRESS:6443

Inside: the loopback up with the node's address (NODE_ADDRESS) on it and IP forwarding on; a private
tmpfs on /run (containerd's state and sockets, the pods' network namespace files) and an overlay on
/var whose changes go to the work directory (the CNI plugins' state, the pods' log links); the kernel
settings the kubelet insists on (KERNEL_TUNABLES) shadowed by files, so that it reads the values it
wants and never writes the machine's. Every server of the node is in the pid namespace: when its
first process (``pause``, killed with ``unshare``, killed if pytest dies) ends, the kernel kills them
all (containerd's shims and the containers included) and the mounts and network go with them.

The kubelet's cgroups are under one cgroup of the node's own in each hierarchy (``cgroup_root``),
removed when the node stops.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from kafka_balancer.sandbox.ports import free_port
from processes import spawn, stop, tail

T = TypeVar("T")

NODE_ADDRESS = "10.200.0.1"  # the node's InternalIP: the API server, the kubelet and Kafka listen here
POD_SUBNET = "10.244.0.0/24"  # the CNI bridge's (cni0, its gateway .1)
SERVICE_SUBNET = "10.96.0.0/24"  # ClusterIPs (kube-proxy); the API server's Service is .1
# What the kubelet sets at start-up unless protectKernelDefaults (pkg/kubelet/cm, setupKernelTunables):
# machine-wide settings (kernel.panic_on_oops=1 would turn an oops into a reboot), so the node reads
# these from files and the kubelet, protecting kernel defaults, finds them as it wants them.
KERNEL_TUNABLES = {
    "vm/overcommit_memory": 1,
    "vm/panic_on_oom": 0,
    "kernel/panic": 10,
    "kernel/panic_on_oops": 1,
    "kernel/keys/root_maxkeys": 1000000,
    "kernel/keys/root_maxbytes": 25000000,
}
CGROUP_FS = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "kafka-balancer-node-"  # then the test run's pid: a run killed before its teardown is found
_CLONE_NEWNET = 0x40000000


def _setns(pid: int, kinds: Sequence[tuple[str, int]]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for name, flag in kinds:
        fd = os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY)
        try:
            if libc.setns(fd, flag) != 0:
                raise OSError(ctypes.get_errno(), f"setns {name} of {pid}")
        finally:
            os.close(fd)


class NodeNamespaces:
    """The namespaces, started by :meth:`start`, ended by :meth:`stop` (also after a failed start)."""

    def __init__(self, workdir: Path, pause: Path) -> None:
        self.workdir = workdir
        self.pause = pause
        self.cgroup_root = f"/{CGROUP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.init_pid = 0  # pause, PID 1 inside, as the machine numbers it
        self._mount_ns = ""
        self._holder: subprocess.Popen[bytes] | None = None
        self._processes: list[tuple[str, subprocess.Popen[bytes]]] = []
        self._thread: ThreadPoolExecutor | None = None  # call()'s
        self._connector: ThreadPoolExecutor | None = None  # the forwarders' (never waits for call()'s)
        self._forwarders: list[_Forwarder] = []

    # ----- lifecycle ----------------------------------------------------------------------------
    def start(self) -> NodeNamespaces:
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._hold()
            self._furnish()
            self._make_cgroups()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Every process ended (the node's own first, then the kernel ends the rest), cgroups removed."""
        for forwarder in self._forwarders:
            forwarder.close()
        self._forwarders.clear()
        for _, proc in reversed(self._processes):
            stop(proc, timeout=30)
        self._processes.clear()
        for pool in (self._thread, self._connector):  # call()'s children were stopped by their owners
            if pool is not None:
                pool.shutdown(wait=True)
        self._thread = self._connector = None
        if self._holder is not None:
            stop(self._holder)
            self._holder = None
        if self.init_pid:
            self._await_gone()
        self._remove_cgroups()

    def __enter__(self) -> NodeNamespaces:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _hold(self) -> None:
        log = self.workdir / "namespaces.log"
        command = [_which("unshare"), "--pid", "--mount", "--net", "--fork", "--kill-child=SIGKILL"]
        command += ["--propagation", "private", "--mount-proc", str(self.pause)]
        self._holder = spawn(command, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, log=log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._holder.poll() is not None:
                raise RuntimeError(f"unshare exited ({self._holder.returncode}): {tail(log)}")
            children = _children(self._holder.pid)
            if children and _ns(children[0], "net") != _ns(os.getpid(), "net"):
                self.init_pid, self._mount_ns = children[0], _ns(children[0], "mnt")
                return
            time.sleep(0.05)
        raise RuntimeError(f"the node's namespaces did not come up: {tail(log)}")

    def _furnish(self) -> None:
        """Mounts, kernel settings and the network inside."""
        upper, work, shadows = (self.workdir / d for d in ("var-upper", "var-work", "sysctl"))
        for d in (upper, work, shadows):
            d.mkdir(parents=True, exist_ok=True)
        script = [
            "set -e",
            "mount -t tmpfs -o mode=0755 node-run /run",
            f"mount -t overlay -o lowerdir=/var,upperdir={upper},workdir={work} node-var /var",
        ]
        for name, value in KERNEL_TUNABLES.items():
            shadow = shadows / name.replace("/", ".")
            shadow.write_text(f"{value}\n")
            script.append(f"mount --bind {shadow} /proc/sys/{name}")
        script += [
            "ip link set lo up",
            f"ip addr add {NODE_ADDRESS}/32 dev lo",
            "echo 1 > /proc/sys/net/ipv4/ip_forward",
        ]
        self.run(["sh", "-c", "\n".join(script)])

    def _make_cgroups(self) -> None:
        _remove_abandoned_cgroups()
        for hierarchy in _hierarchies():
            path = hierarchy / self.cgroup_root.lstrip("/")
            path.mkdir()
            for name in ("cpuset.cpus", "cpuset.mems"):  # an empty cpuset admits no task
                if (path / name).exists():
                    (path / name).write_text((hierarchy / name).read_text())

    def _remove_cgroups(self) -> None:
        for hierarchy in _hierarchies():
            _remove_tree(hierarchy / self.cgroup_root.lstrip("/"))

    def _await_gone(self) -> None:
        """Until no process is left in the node's mount namespace (the kernel ends them with pause)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            left = [p for p in _pids() if _ns(p, "mnt") == self._mount_ns]
            if not left:
                return
            time.sleep(0.2)
        raise RuntimeError(f"processes left in the node's namespaces: {left}")

    # ----- running things inside ----------------------------------------------------------------
    def command(self, argv: Sequence[str], cwd: Path | None = None) -> list[str]:
        """``argv`` run inside the pid, mount and network namespaces (in ``cwd``, else in /)."""
        where = [f"--wd={cwd}"] if cwd else []
        return [_which("nsenter"), f"--target={self.init_pid}", "--pid", "--mount", "--net", *where, "--", *argv]

    def run(self, argv: Sequence[str], timeout: float = 600, cwd: Path | None = None) -> str:
        """Run to completion inside; its output, or RuntimeError with the output when it fails."""
        result = subprocess.run(self.command(argv, cwd), capture_output=True, text=True, timeout=timeout, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {result.returncode}: {result.stdout}{result.stderr}")
        return result.stdout

    def spawn(self, name: str, argv: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen[bytes]:
        """Start a server inside; stopped by :meth:`stop` (newest first) unless stopped before."""
        proc = spawn(self.command(argv), env=env, log=self.log(name))
        self._processes.append((name, proc))
        return proc

    @property
    def mount_namespace(self) -> str:
        """The node's mount namespace as /proc/<pid>/ns/mnt names it (``mnt:[inode]``)."""
        return self._mount_ns

    def processes(self) -> list[tuple[str, subprocess.Popen[bytes]]]:
        """The servers started by :meth:`spawn`, by name."""
        return list(self._processes)

    def log(self, name: str) -> Path:
        return self.workdir / f"{name}.log"

    def call(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the node's thread, which lives in its network namespace: the sockets it opens, and
        those of the processes and threads it starts, are the node's. (Not its pid namespace: a thread
        there could start no thread of its own.) A process it starts with a parent-death signal ends
        with the thread, which lives until :meth:`stop`."""
        if self._thread is None:
            self._thread = self._inside(1, "node")
        return self._thread.submit(fn).result()

    def _inside(self, threads: int, name: str) -> ThreadPoolExecutor:
        return ThreadPoolExecutor(
            threads, name, initializer=_setns, initargs=(self.init_pid, (("net", _CLONE_NEWNET),))
        )

    def forward(self, port: int, address: str = NODE_ADDRESS) -> int:
        """A port on 127.0.0.1 of the machine whose connections are made to ``address:port`` inside."""
        if self._connector is None:
            self._connector = self._inside(4, "node-connect")
        connector = self._connector
        forwarder = _Forwarder(lambda: connector.submit(socket.create_connection, (address, port), 10).result())
        self._forwarders.append(forwarder)
        return forwarder.port


class _Forwarder:
    """Accepts on 127.0.0.1:<free port>; copies each connection to and from a socket ``connect()`` opens."""

    def __init__(self, connect: Callable[[], socket.socket]) -> None:
        self._connect = connect
        self._listener = socket.create_server(("127.0.0.1", free_port()))
        self.port = int(self._listener.getsockname()[1])
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name=f"forward-{self.port}").start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                continue
            try:
                server = self._connect()
            except (OSError, RuntimeError):  # nothing listens there, or the node is stopping
                client.close()
                continue
            server.settimeout(None)
            self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def _hierarchies() -> list[Path]:
    """Every mounted cgroup hierarchy (v1 controllers, the named systemd one, the unified one)."""
    return [p for p in CGROUP_FS.iterdir() if p.is_dir() and (p / "cgroup.procs").exists()]


def _remove_tree(root: Path) -> None:
    """A cgroup and those under it, deepest first (a cgroup is removed with rmdir, once it has no task)."""
    if root.exists():
        for path in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            _rmdir(path)
        _rmdir(root)


def _remove_abandoned_cgroups() -> None:
    """The cgroups of nodes whose test run is gone (killed: its processes ended with it, its cgroups not)."""
    for hierarchy in _hierarchies():
        for path in hierarchy.glob(f"{CGROUP_PREFIX}*"):
            pid = path.name.removeprefix(CGROUP_PREFIX).split("-")[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    _remove_tree(path)


def _rmdir(path: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # EBUSY while the kernel is still reaping its last tasks
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _ns(pid: int, kind: str) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/{kind}")
    except OSError:
        return ""


def _pids() -> Iterator[int]:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            yield int(entry.name)


def node_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of the node's servers: a PATH with the sbin folders (runc, nft, ip, mount)."""
    return {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", **(extra or {})}


def _which(program: str) -> str:
    found = shutil.which(program, path=node_environment()["PATH"])
    if found is None:
        raise RuntimeError(f"{program} not found (util-linux)")
    return found

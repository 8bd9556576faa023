"""A real Apache Kafka cluster on 127.0.0.1 (or another local address): KRaft, one controller-only JVM
and N broker JVMs.

The jars come from Maven Central (``make kafka`` copies each version the Makefile's ``KAFKA_VERSIONS``
lists into ``build/kafka/<version>/libs``); nothing is downloaded here. A cluster runs the version whose
jars it is given (``kafka_version``, default KAFKA_VERSION), and says which (``RealCluster.version``).
Broker ``i`` (node ids 1..N) listens on ``port_base + i - 1`` and the controller
(node id 0) on ``port_base + N``. Racks are ``rack-a``, ``rack-b``, ... assigned round robin, and each
broker has ``log_dirs`` log directories. Heaps are small, the JIT stops at C1 and GC is serial: a
2-core machine runs a whole cluster plus the tests beside it.

Every JVM is started under ``setpriv --pdeathsig KILL`` (util-linux), so that it dies with the
process that started it even when that process is killed with SIGKILL and runs no cleanup.

A dense cluster (thousands of partitions per broker, bench.real_scale) needs a larger heap (``heap_mb``)
and an open file per log segment: every JVM starts with its soft limit of open files raised to the hard
one (inherited from this process, whose own limit is raised first). With ``tiered_storage`` the brokers
keep closed log segments in remote storage (KIP-405) through ``LocalTieredStorage``, the
RemoteStorageManager of Kafka's own tests (kafka-storage's test jar, fetched by ``make kafka``): a folder
of the cluster's data directory that every broker shares.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
import zipfile
from base64 import urlsafe_b64encode
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.kafka.port import KafkaError
from kafka_balancer.sandbox.ports import check_port_range
from kafka_balancer.sandbox.versions import version_key

CONTROLLER_ID = 0
LIBS_ENV = "KAFKA_BALANCER_KAFKA_LIBS"
JAVA_MAJOR = 17
# The version a cluster runs unless told otherwise (the sandbox, the demo, the tests' main cluster).
KAFKA_VERSION = "4.3.1"
# build/kafka/<version>/libs, one folder per version of the Makefile's KAFKA_VERSIONS (`make kafka`).
_REPO_KAFKA = Path(__file__).resolve().parents[3] / "build" / "kafka"
_LOCAL_TIERED_STORAGE = "org/apache/kafka/server/log/remote/storage/LocalTieredStorage.class"
_KAFKA_JAR = re.compile(r"^kafka_2\.13-(\d+(?:\.\d+)*)\.jar$")
_LOG4J = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka-request.name = kafka.request.logger
logger.kafka-request.level = WARN
"""


class SandboxError(Exception):
    """The real cluster cannot start or stop as asked; the message is one line that says why."""


@dataclass(frozen=True)
class RealClusterOptions:
    brokers: int = 3
    racks: int = 3
    port_base: int = 9092
    log_dirs: int = 2
    # Kept after stop when given (and reused by the next start); a fresh temporary folder otherwise.
    data_dir: Path | None = None
    # Default: the repository's build/kafka/<kafka_version>/libs, else $KAFKA_BALANCER_KAFKA_LIBS, else
    # build/kafka/<KAFKA_VERSION>/libs (kafka_libs).
    kafka_libs: Path | None = None
    kafka_version: str | None = None  # of the repository's fetched versions; default: KAFKA_VERSION
    heap_mb: int = 320
    cluster_id: str | None = None  # for a fresh data directory; default: a random one
    broker_configs: Mapping[str, str] = field(default_factory=dict)  # extra server.properties of every broker
    controller_configs: Mapping[str, str] = field(default_factory=dict)  # extra server.properties of the controller
    # A start is given up when the JVMs of the brokers it waits for have used start_cpu_s CPU seconds each
    # while it waits (a broker takes about 5 to start: more means it spins on something), or after
    # start_timeout_s (it waits on something that never comes). Wall time alone cannot tell a stuck start
    # from one a busy machine starves: 6 brokers and their controller used 34 CPU seconds to start, in
    # 17 s on a quiet 2-core machine and in 209 s at load average 64-92.
    start_timeout_s: float = 600.0
    start_cpu_s: float = 30.0
    # The local address every node listens on and advertises (a test node's pods reach the brokers on
    # its node address, tests/node).
    host: str = "127.0.0.1"
    # A broker's controlled shutdown hands its leaderships over before it exits; one of a dense cluster
    # takes minutes on a loaded machine, and one killed at the deadline recovers every log on restart.
    stop_timeout_s: float = 30.0
    tiered_storage: bool = False  # remote storage (KIP-405) in <data dir>/remote-storage; topics opt in

    def __post_init__(self) -> None:
        if not 1 <= self.brokers <= 64:
            raise SandboxError(f"--brokers must be between 1 and 64, got {self.brokers}")
        if not 1 <= self.racks <= 26:
            raise SandboxError(f"--racks must be between 1 and 26, got {self.racks}")
        if not 1 <= self.log_dirs <= 16:
            raise SandboxError(f"--log-dirs must be between 1 and 16, got {self.log_dirs}")
        if not 128 <= self.heap_mb <= 65536:
            raise SandboxError(f"--heap-mb must be between 128 and 65536, got {self.heap_mb}")
        if self.data_dir is not None:
            _check_properties_path(self.data_dir, "--data-dir")
        try:  # N brokers and the controller, above the privileged ports
            check_port_range(self.port_base, self.brokers + 1, "--port-base", lowest=1024)
        except ValueError as err:
            raise SandboxError(str(err)) from None

    def broker_port(self, broker_id: int) -> int:
        return self.port_base + broker_id - 1

    @property
    def controller_port(self) -> int:
        return self.port_base + self.brokers

    def rack(self, broker_id: int) -> str:
        return f"rack-{chr(ord('a') + (broker_id - 1) % self.racks)}"


def fetched_versions(root: Path = _REPO_KAFKA) -> list[str]:
    """The Kafka versions `make kafka` has fetched into ``root`` (each stamped when complete), oldest first."""
    stamps = root.glob("*/.fetched") if root.is_dir() else ()
    found = [s.parent.name for s in stamps if re.fullmatch(r"\d+(\.\d+)*", s.parent.name)]
    return sorted(found, key=version_key)


def libs_version(libs: Path) -> str | None:
    """The Kafka version of the jars in ``libs`` (by kafka_2.13-<version>.jar), None when there is none."""
    for jar in libs.glob("kafka_2.13-*.jar") if libs.is_dir() else ():
        found = _KAFKA_JAR.match(jar.name)
        if found:
            return found.group(1)
    return None


def has_local_tiered_storage(libs: Path) -> bool:
    """Whether the jars in ``libs`` hold LocalTieredStorage (kafka-storage's test jar up to Kafka 4.3, its
    test-fixtures jar from 4.4 on)."""
    for jar in (*libs.glob("*-test.jar"), *libs.glob("*-test-fixtures.jar")):
        with zipfile.ZipFile(jar) as archive:
            if _LOCAL_TIERED_STORAGE in archive.namelist():
                return True
    return False


def _check_properties_path(path: Path, option: str) -> None:
    """A path written into server.properties (log.dirs) must stay one value of one line: no line break
    or other control character (it would add lines of its own), no comma (log.dirs separates
    directories with it), no backslash (an escape in a properties file)."""
    bad = sorted({c for c in str(path) if not c.isprintable() or c in ",\\"})
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        raise SandboxError(
            f"{option} {str(path)!r}: {shown} cannot be written into server.properties; choose another path"
        )


def kafka_libs(configured: Path | None = None, version: str | None = None) -> Path:
    """The folder of Kafka's jars (``configured``, else $KAFKA_BALANCER_KAFKA_LIBS unless a version is asked
    for, else the repository's folder of ``version`` or of KAFKA_VERSION), checked: raises SandboxError
    naming what is missing."""
    if configured is None and version is None and os.environ.get(LIBS_ENV):
        configured = Path(os.environ[LIBS_ENV])
    if configured is None:
        version = version or KAFKA_VERSION
        configured = _REPO_KAFKA / version / "libs"
    libs = configured
    jars = {p.name for p in libs.glob("*.jar")} if libs.is_dir() else set()
    found = libs_version(libs)
    missing = [] if found and (version is None or found == version) else [f"kafka_2.13-{version or '*'}.jar"]
    if found and f"kafka-clients-{found}.jar" not in jars:
        missing.append(f"kafka-clients-{found}.jar")
    if not any(j.startswith("log4j-slf4j2-impl-") for j in jars):
        missing.append("log4j-slf4j2-impl-*.jar")
    if missing:
        raise SandboxError(
            f"Kafka {version + ' ' if version else ''}jars missing in {libs} ({', '.join(missing)}): run `make kafka`, "
            f"or point --kafka-libs or ${LIBS_ENV} at a folder that has them"
        )
    return libs


def java_binary() -> str:
    """The java of $JAVA_HOME (else on PATH), checked to be Java 17 or newer."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).is_file():
        raise SandboxError(f"Java {JAVA_MAJOR} or newer is needed and no java was found (JAVA_HOME or PATH)")
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False).stderr
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SandboxError(f"cannot run {java} -version: {err}") from err
    found = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    major = int(found.group(1)) if found else 0
    if major == 1 and found and found.group(2):  # "1.8.0" spells Java 8
        major = int(found.group(2))
    if major < JAVA_MAJOR:
        first = out.strip().splitlines()[0] if out.strip() else "no version"
        raise SandboxError(f"Java {JAVA_MAJOR} or newer is needed, {java} is {first!r}")
    return java


def check_ports_free(ports: list[int], host: str = "127.0.0.1") -> None:
    for port in ports:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError as err:
                raise SandboxError(f"port {port} on {host} is taken ({err.strerror})") from err


def _cpu_seconds(process: subprocess.Popen[bytes] | None) -> float:
    """User + system CPU seconds a running process has used (0 where /proc cannot tell)."""
    if process is None:
        return 0.0
    try:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _raise_open_files() -> None:
    """This process's soft limit of open files up to the hard one, for the JVMs it starts to inherit (a
    broker keeps a file open per log segment; a login shell's soft limit is often 1024)."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _properties(values: Mapping[str, object]) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


@dataclass
class _Node:
    node_id: int
    home: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def config(self) -> Path:
        return self.home / "server.properties"

    @property
    def log(self) -> Path:
        return self.home / "logs" / "server.log"

    def log_tail(self, lines: int = 5) -> str:
        for path in (self.log, self.home / "logs" / "stdout.log"):
            try:
                text = path.read_text(errors="replace").strip().splitlines()
            except OSError:
                continue
            if text:
                return " | ".join(text[-lines:])
        return "(no log)"


class RealCluster:
    """Start, stop and restart the JVMs of one local KRaft cluster. Use as a context manager."""

    def __init__(self, options: RealClusterOptions):
        self.options = options
        self.libs = kafka_libs(options.kafka_libs, options.kafka_version)
        self.version = libs_version(self.libs) or "unknown"
        if options.tiered_storage and not has_local_tiered_storage(self.libs):
            raise SandboxError(f"--tiered-storage needs LocalTieredStorage, which Kafka {self.version}'s jars lack")
        self.java = java_binary()
        self._temporary = options.data_dir is None
        self.data_dir = options.data_dir or Path(tempfile.mkdtemp(prefix="kafka-sandbox-"))
        self.controller = _Node(CONTROLLER_ID, self.data_dir / "controller")
        self.brokers = {i: _Node(i, self.data_dir / f"broker-{i}") for i in range(1, options.brokers + 1)}

    # ----- addresses ----------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{self.options.host}:{self.options.broker_port(b)}" for b in self.brokers)

    def log_dirs(self, broker_id: int) -> list[Path]:
        return [self.brokers[broker_id].home / f"data-{k}" for k in range(self.options.log_dirs)]

    # ----- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Write the configs, format the storage (first start only), start every JVM and wait until
        every broker is registered. On failure everything started is stopped again."""
        o = self.options
        check_ports_free([*(o.broker_port(b) for b in self.brokers), o.controller_port], o.host)
        try:
            self.prepare()
            self._launch(self.controller)
            for node in self.brokers.values():
                self._launch(node)
            self.wait_registered(set(self.brokers))
        except BaseException:
            self.stop()
            raise

    def prepare(self) -> None:
        """Write every node's configs and format its storage with kafka.tools.StorageTool (the nodes of
        a kept data directory are formatted already and left as they are)."""
        self._write_configs()
        self._format()

    def stop(self) -> None:
        """Stop every JVM (brokers first, with a controlled shutdown, then the controller) and
        delete the data unless a data directory was given."""
        self._terminate(list(self.brokers.values()), timeout_s=self.options.stop_timeout_s)
        self._terminate([self.controller], timeout_s=15.0)
        if self._temporary:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> RealCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop_broker(self, broker_id: int, *, kill: bool = False) -> None:
        """SIGTERM (a controlled shutdown) or SIGKILL one broker and wait until it has exited."""
        node = self.brokers[broker_id]
        if kill and node.process is not None and node.process.poll() is None:
            node.process.kill()
        self._terminate([node], timeout_s=self.options.stop_timeout_s)

    def start_broker(self, broker_id: int) -> None:
        """Start a stopped broker again and wait until it is registered."""
        node = self.brokers[broker_id]
        if node.process is not None and node.process.poll() is None:
            raise SandboxError(f"broker {broker_id} is running")
        check_ports_free([self.options.broker_port(broker_id)], self.options.host)
        self._launch(node)
        self.wait_registered({broker_id})

    def stop_controller(self, *, kill: bool = False) -> None:
        """SIGTERM (or SIGKILL) the KRaft controller and wait until it has exited: the brokers serve on
        with the metadata they have, while nothing that needs the controller can be done."""
        node = self.controller
        if kill and node.process is not None and node.process.poll() is None:
            node.process.kill()
        self._terminate([node], timeout_s=15.0)

    def start_controller(self) -> None:
        """Start the stopped controller again and wait until every running broker is registered with it."""
        if self.controller.process is not None and self.controller.process.poll() is None:
            raise SandboxError("the controller is running")
        check_ports_free([self.options.controller_port])
        self._launch(self.controller)
        self.wait_registered({b for b in self.brokers if self.running(b)})

    def pause_broker(self, broker_id: int, *, paused: bool = True) -> None:
        """SIGSTOP a broker (a hung JVM: its connections stay open, nothing answers), or SIGCONT it."""
        process = self.brokers[broker_id].process
        if process is None or process.poll() is not None:
            raise SandboxError(f"broker {broker_id} is not running")
        process.send_signal(signal.SIGSTOP if paused else signal.SIGCONT)

    def running(self, broker_id: int) -> bool:
        process = self.brokers[broker_id].process
        return process is not None and process.poll() is None

    def pids(self) -> list[int]:
        nodes = [self.controller, *self.brokers.values()]
        return [n.process.pid for n in nodes if n.process is not None and n.process.poll() is None]

    def wait_registered(self, broker_ids: set[int]) -> None:
        """Wait until DescribeCluster lists ``broker_ids``; fail at once when a JVM exits, and when the
        wait takes too much CPU or time (``RealClusterOptions.start_cpu_s``, ``start_timeout_s``): the CPU
        the brokers use from now on, not what they used before (a restarted controller's brokers have run
        for the whole session).

        The brokers' ports are polled first: a Kafka client pointed at brokers still starting logs
        every refused connection."""
        o = self.options
        deadline = time.monotonic() + o.start_timeout_s
        cpu_budget = o.start_cpu_s * len(broker_ids)
        cpu_before = sum(_cpu_seconds(self.brokers[b].process) for b in broker_ids)
        adapter: KafkaAdapter | None = None
        registered: set[int] = set()
        try:
            while not broker_ids <= registered:
                self._check_alive()
                used = sum(_cpu_seconds(self.brokers[b].process) for b in broker_ids) - cpu_before
                if time.monotonic() > deadline or used > cpu_budget:
                    missing = sorted(broker_ids - registered)
                    tails = "; ".join(f"broker {b}: {self.brokers[b].log_tail(2)}" for b in missing)
                    raise SandboxError(
                        f"brokers {missing} not registered after {o.start_timeout_s:g} s or {cpu_budget:g} "
                        f"CPU seconds (used {used:.0f}) ({tails})"
                    )
                time.sleep(0.3)
                if adapter is None:
                    if all(self._accepts(self.options.broker_port(b)) for b in broker_ids):
                        adapter = KafkaAdapter(ConnectionSpec(self.bootstrap_servers, request_timeout_s=5))
                    continue
                try:
                    registered = {b.id for b in adapter.describe_cluster().brokers}
                except KafkaError:
                    registered = set()
        finally:
            if adapter is not None:
                adapter.close()

    def _accepts(self, port: int) -> bool:
        with socket.socket() as sock:
            sock.settimeout(1.0)
            return sock.connect_ex((self.options.host, port)) == 0

    # ----- internals ----------------------------------------------------------------------------
    def _check_alive(self) -> None:
        for node in [self.controller, *self.brokers.values()]:
            if node.process is not None and node.process.poll() is not None:
                code = node.process.returncode
                node.process = None
                raise SandboxError(f"node {node.node_id} exited with status {code}: {node.log_tail()}")

    def _write_configs(self) -> None:
        o = self.options
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "log4j2.properties").write_text(_LOG4J)
        voters = f"{CONTROLLER_ID}@{o.host}:{o.controller_port}"
        common = {
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            # The balancer decides leadership; Kafka's own rebalancer would move it behind its back. In
            # KRaft the controller runs it, so the controller's setting is the one that counts.
            "auto.leader.rebalance.enable": "false",
        }
        controller = {
            "process.roles": "controller",
            "node.id": CONTROLLER_ID,
            "listeners": f"CONTROLLER://{o.host}:{o.controller_port}",
            "log.dirs": self.controller.home / "metadata",
            **common,
            # The controller validates a topic's remote.storage.enable against its own setting.
            **({"remote.log.storage.system.enable": "true"} if o.tiered_storage else {}),
            **o.controller_configs,
        }
        self.controller.home.mkdir(parents=True, exist_ok=True)
        self.controller.config.write_text(_properties(controller))
        replication = min(3, o.brokers)
        for b, node in self.brokers.items():
            address = f"{o.host}:{o.broker_port(b)}"
            broker: dict[str, object] = {
                "process.roles": "broker",
                "node.id": b,
                "listeners": f"PLAINTEXT://{address}",
                "advertised.listeners": f"PLAINTEXT://{address}",
                "inter.broker.listener.name": "PLAINTEXT",
                "broker.rack": o.rack(b),
                "log.dirs": ",".join(str(d) for d in self.log_dirs(b)),
                "offsets.topic.replication.factor": replication,
                "offsets.topic.num.partitions": 10,
                "transaction.state.log.replication.factor": replication,
                "transaction.state.log.min.isr": min(2, replication),
                "group.initial.rebalance.delay.ms": 0,
                # Thread pools and buffers sized for a 2-core machine running several brokers.
                "num.network.threads": 2,
                "num.io.threads": 2,
                "background.threads": 2,
                "log.cleaner.threads": 1,
                "log.cleaner.dedupe.buffer.size": 8 * 1024 * 1024,
                **common,
                **(self._tiered_storage(replication) if o.tiered_storage else {}),
                **o.broker_configs,
            }
            node.home.mkdir(parents=True, exist_ok=True)
            node.config.write_text(_properties(broker))

    @property
    def remote_storage_dir(self) -> Path:
        """Where LocalTieredStorage keeps the remote segments of every broker (``tiered_storage``)."""
        return self.data_dir / "remote-storage"

    def _tiered_storage(self, replication: int) -> dict[str, object]:
        """Remote storage (KIP-405) through LocalTieredStorage in one folder every broker shares (remote
        storage is the cluster's, not a broker's), with the remote log metadata in Kafka's own topic.
        The remote log manager looks for closed segments to copy, and the log manager for local segments
        past ``local.retention.*`` to delete, every second instead of every 30 s and 5 min."""
        self.remote_storage_dir.mkdir(parents=True, exist_ok=True)
        return {
            "remote.log.storage.system.enable": "true",
            "remote.log.storage.manager.class.name": "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
            "rsm.config.dir": self.remote_storage_dir,
            "remote.log.metadata.manager.listener.name": "PLAINTEXT",
            "rlmm.config.remote.log.metadata.topic.replication.factor": replication,
            "rlmm.config.remote.log.metadata.topic.num.partitions": 5,
            "remote.log.manager.task.interval.ms": 1000,
            "log.retention.check.interval.ms": 1000,
        }

    def _cluster_id(self) -> str:
        """The id in an existing meta.properties (a kept data directory), else a new one."""
        meta = self.controller.home / "metadata" / "meta.properties"
        if meta.is_file():
            for line in meta.read_text().splitlines():
                if line.startswith("cluster.id="):
                    return line.partition("=")[2].strip()
        return self.options.cluster_id or urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")

    def _format(self) -> None:
        """kafka.tools.StorageTool format on every node not formatted yet, all at once."""
        cluster_id = self._cluster_id()
        pending = []
        for node in [self.controller, *self.brokers.values()]:
            dirs = [self.controller.home / "metadata"] if node is self.controller else self.log_dirs(node.node_id)
            if all((d / "meta.properties").is_file() for d in dirs):
                continue
            command = [*self._java_command(node), "kafka.tools.StorageTool", "format", "--ignore-formatted"]
            # --cluster-id=ID, not "-t ID": an id may begin with "-" (base64url), which would read as an option.
            command += [f"--cluster-id={cluster_id}", "-c", str(node.config)]
            pending.append((node, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)))
        for node, process in pending:
            out, _ = process.communicate(timeout=120)
            if process.returncode != 0:
                last = out.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
                raise SandboxError(f"formatting node {node.node_id} failed: {last[0]}")

    def _java_command(self, node: _Node) -> list[str]:
        prefix = ["setpriv", "--pdeathsig", "KILL"] if shutil.which("setpriv") else []
        heap = self.options.heap_mb
        return [
            *prefix,
            self.java,
            f"-Xmx{heap}m",
            f"-Xms{min(heap, 64)}m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData",
            "-Djava.awt.headless=true",
            f"-Dkafka.logs.dir={node.home / 'logs'}",
            f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}",
            "-cp",
            f"{self.libs}/*",
        ]

    def _launch(self, node: _Node) -> None:
        (node.home / "logs").mkdir(parents=True, exist_ok=True)
        _raise_open_files()
        with (node.home / "logs" / "stdout.log").open("ab") as out:
            node.process = subprocess.Popen(
                [*self._java_command(node), "kafka.Kafka", str(node.config)],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def _terminate(self, nodes: list[_Node], *, timeout_s: float) -> None:
        """SIGTERM all at once (SIGCONT first: a paused JVM handles no signal), wait, SIGKILL whatever is left."""
        live = [n for n in nodes if n.process is not None and n.process.poll() is None]
        for node in live:
            assert node.process is not None
            node.process.send_signal(signal.SIGCONT)
            node.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for node in live:
            assert node.process is not None
            try:
                node.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait()
        for node in nodes:
            node.process = None

"""Apache Kafka 4.4 in KRaft mode on 127.0.0.1, from the jars `make` fetches from Maven Central (samples/kafka/pom.xml).

The real broker next to Tansu and librdkafka's mock: what a sample records of it is what Apache Kafka itself does.
Each node is one `java -cp '<lib>/*' kafka.Kafka server.properties` process combining broker and controller (a static
quorum of every node), its storage formatted by Kafka's own `kafka.tools.StorageTool` with the 4.4 features the
samples use (transactions v2, KIP-848 consumer groups, KIP-932 share groups, KIP-1071 streams groups). In 4.4 those
features alone enable the group kinds: `group.coordinator.rebalance.protocols` is deprecated (the broker warns) and
left at its default. Group timeouts are shortened so that a member frozen past its session is removed within seconds.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path

from kafkatap.samples.brokers import free_ports, port_is_free

VERSION = "4.4.0"
ROOT = Path(__file__).resolve().parent.parent
HOME = Path(os.environ.get("KAFKATAP_KAFKA_HOME", ROOT / ".cache" / f"kafka-{VERSION}"))
LOG4J = Path(__file__).parent / "java" / "log4j2.properties"
FEATURES = {"transaction.version": 2, "group.version": 1, "share.version": 2, "streams.version": 1}
SESSION_TIMEOUT_MS, HEARTBEAT_MS = 6000, 1000  # KIP-848/932/1071 groups: broker settings, not the clients'
JVM_OPTS = ["-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
READY_CLIENT = "kafkatap-ready"  # the readiness probe's client id
_STARTED = "Transition from STARTING to STARTED"  # the broker's lifecycle line once it serves clients
_COMPLETED = re.compile(r'DEBUG Completed request:\{"isForwarded":\w+,"requestHeader":\{"requestApiKey":(\d+),'
                        r'"requestApiVersion":\d+,"correlationId":-?\d+,"clientId":"((?:[^"\\]|\\.)*)"')


def lib_dir() -> Path:
    """The jars (broker, clients, streams, log4j); `make kafka` puts them there."""
    lib = HOME / "lib"
    if not (lib / f"kafka_2.13-{VERSION}.jar").exists():
        raise FileNotFoundError(f"Apache Kafka {VERSION} jars not in {lib}: run `make kafka` (Maven Central)")
    return lib


def classpath(*extra: Path) -> str:
    return os.pathsep.join([*map(str, extra), str(lib_dir() / "*")])


def node_properties(node_id: int, port: int, controller_port: int, voters: str, data: Path, nodes: int,
                    overrides: dict[str, object]) -> dict[str, object]:
    """server.properties of one combined broker+controller node of an `nodes`-node cluster."""
    rf = min(3, nodes)
    props: dict[str, object] = {
        "process.roles": "broker,controller", "node.id": node_id,
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
        "controller.quorum.voters": voters, "log.dirs": str(data),
        # Small internal topics: fewer partitions to create at the first FindCoordinator, less metadata on the wire.
        "offsets.topic.num.partitions": nodes, "offsets.topic.replication.factor": rf,
        "transaction.state.log.num.partitions": nodes, "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": 1, "share.coordinator.state.topic.num.partitions": nodes,
        "share.coordinator.state.topic.replication.factor": rf, "share.coordinator.state.topic.min.isr": 1,
        "default.replication.factor": rf, "min.insync.replicas": 1, "num.partitions": 1,
        "group.initial.rebalance.delay.ms": 0,
        "group.min.session.timeout.ms": 1000,
        **{f"group.{kind}.{key}": value for kind in ("consumer", "share", "streams") for key, value in (
            ("session.timeout.ms", SESSION_TIMEOUT_MS), ("min.session.timeout.ms", 1000),
            ("heartbeat.interval.ms", HEARTBEAT_MS), ("min.heartbeat.interval.ms", 500))},
    }
    props.update(overrides)
    return props


class Kafka:
    """`nodes` Apache Kafka 4.4 nodes on 127.0.0.1 (`ports`: their client ports, free ones when not given), data and
    logs in `workdir`; a context manager that always stops them. Same shape as brokers.Tansu: `port`, `bootstrap`,
    `stop()`; `ports` lists every node's client port (the capture filter), `controller_ports` their controller
    listeners (free ones when not given: a capture of the quorum names them), `logs` every node's log file. With
    `request_log`, every node logs each request it completes (`requests_by_client` counts them). `stop_node` and
    `start_node` restart one node of a running cluster."""

    def __init__(self, workdir: str | Path, nodes: int = 1, ports: list[int] | None = None,
                 overrides: dict[str, object] | None = None, start_timeout: float = 90.0,
                 request_log: bool = False, controller_ports: list[int] | None = None) -> None:
        self.workdir = Path(workdir)
        self.nodes = nodes
        self.ports = list(ports) if ports else free_ports(nodes)
        self.controller_ports = list(controller_ports) if controller_ports else free_ports(nodes)
        if len(self.ports) != nodes or len(self.controller_ports) != nodes:
            raise ValueError(f"{nodes} nodes need {nodes} ports each, got {self.ports} and {self.controller_ports}")
        self.port = self.ports[0]
        self.bootstrap = ",".join(f"127.0.0.1:{p}" for p in self.ports)
        self.overrides = overrides or {}
        self.start_timeout = start_timeout
        self.request_log = request_log
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        self.configs: list[Path] = []
        self._marks: list[int] = []  # byte offsets into `logs` where `requests_by_client` starts counting
        self.started_in: float | None = None  # seconds from the first java process to a cluster answering Metadata

    def __enter__(self) -> "Kafka":
        busy = [p for p in self.ports + self.controller_ports if not port_is_free(p)]
        if busy:
            raise RuntimeError(f"ports {busy} are busy: a stray broker? (ss -ltnp 'sport = :{busy[0]}')")
        voters = ",".join(f"{i + 1}@127.0.0.1:{p}" for i, p in enumerate(self.controller_ports))
        cluster_id = _random_cluster_id()
        t0 = time.monotonic()
        try:
            configs = self.configs
            for i, (port, cport) in enumerate(zip(self.ports, self.controller_ports)):
                node = self.workdir / f"node-{i + 1}"
                node.mkdir(parents=True, exist_ok=True)
                props = node_properties(i + 1, port, cport, voters, node / "data", self.nodes, self.overrides)
                config = node / "server.properties"
                config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
                configs.append(config)
                self.logs.append(node / "kafka.log")
            for config in configs:
                format_storage(config, cluster_id)
            for i in range(self.nodes):
                self.procs.append(self._spawn(i))
            self._wait_ready(t0 + self.start_timeout)
        except BaseException:
            self.stop()
            raise
        self.started_in = round(time.monotonic() - t0, 2)
        return self

    def _spawn(self, i: int) -> subprocess.Popen:
        """Node i + 1's JVM, appending to its log (a restarted node keeps one log)."""
        with open(self.logs[i], "ab") as out:
            return subprocess.Popen(
                ["java", *JVM_OPTS, f"-Dlog4j2.configurationFile={LOG4J}",
                 *(["-Dkafkatap.request.log=debug"] if self.request_log else []), "-cp", classpath(),
                 "kafka.Kafka", str(self.configs[i])],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def stop_node(self, node_id: int, timeout: float = 60.0) -> None:
        """Stop one node with SIGTERM: a controlled shutdown (its leaderships move first, a quorum leader resigns)."""
        proc = self.procs[node_id - 1]
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout)

    def start_node(self, node_id: int, timeout: float = 90.0) -> None:
        """Start a stopped node again and wait until its broker runs (read from its log: a probe of ours would be
        traffic in the capture)."""
        log = self.logs[node_id - 1]
        seen = log.read_text(errors="replace").count(_STARTED) if log.exists() else 0
        self.procs[node_id - 1] = proc = self._spawn(node_id - 1)
        deadline = time.monotonic() + timeout
        while log.read_text(errors="replace").count(_STARTED) == seen:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"kafka node {node_id} did not start again (exit {proc.poll()}); its log: {log}\n"
                                   + _tail(log))
            time.sleep(0.2)

    def quorum_leader(self) -> int | None:
        """The node id the KRaft quorum follows now, from a running node's quorum-state file (not from the wire)."""
        for i, proc in enumerate(self.procs):
            state = self.workdir / f"node-{i + 1}" / "data" / "__cluster_metadata-0" / "quorum-state"
            if proc.poll() is None and state.exists():
                leader = json.loads(state.read_text()).get("leaderId", -1)
                if leader >= 0:
                    return leader
        return None

    def _wait_ready(self, deadline: float) -> None:
        """Until every node is registered and answers Metadata (the controller elected, the brokers unfenced)."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "client.id": READY_CLIENT, "log_level": 0})
        while True:
            for proc, log in zip(self.procs, self.logs):
                if proc.poll() is not None:
                    raise RuntimeError(f"kafka node exited with {proc.returncode}; its log: {log}\n"
                                       + _tail(log))
            try:
                if len(admin.list_topics(timeout=2).brokers) == self.nodes:
                    return
            except Exception:  # KafkaException while the brokers are still starting
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"kafka not ready after {self.start_timeout} s; logs: {self.logs}\n"
                                   + _tail(self.logs[0]))
            time.sleep(0.2)

    def mark(self) -> None:
        """From now on `requests_by_client` counts (a capture starts: what the nodes did before is not in it)."""
        self._marks = [log.stat().st_size if log.exists() else 0 for log in self.logs]

    def wait_for_line(self, text: str, timeout: float) -> None:
        """Until a node's log has a line containing `text`: what a coordinator decided, where it says so (a harness
        that only sleeps past a timeout races the coordinator's timer on a loaded machine)."""
        deadline = time.monotonic() + timeout
        while not any(text in log.read_text(errors="replace") for log in self.logs if log.exists()):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no node logged {text!r} within {timeout} s; logs: {self.logs}")
            time.sleep(0.2)

    def requests_by_client(self, listeners: tuple[str, ...] = ("PLAINTEXT",)) -> Counter:
        """{(client_id, api_key): requests} every node completed on `listeners` since `mark` (with `request_log`:
        the brokers' own count, which includes the requests brokers send each other and themselves)."""
        counts: Counter = Counter()
        for log, mark in zip(self.logs, self._marks or [0] * len(self.logs)):
            with open(log, "rb") as f:
                f.seek(mark)
                text = f.read().decode(errors="replace")
            for line in text.splitlines():
                m = _COMPLETED.search(line)
                if m and any(f'"listener":"{name}"' in line for name in listeners):
                    counts[(m.group(2), int(m.group(1)))] += 1
        return counts

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM every node at once (a controlled shutdown needs the quorum alive), SIGKILL what is left."""
        running = [p for p in self.procs if p.poll() is None]
        for proc in running:
            proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in running:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def __exit__(self, *exc: object) -> None:
        self.stop()


def format_storage(config: Path, cluster_id: str) -> None:
    """Kafka's own storage tool: writes meta.properties and the bootstrap checkpoint with the features we need."""
    features = [arg for name, level in FEATURES.items() for arg in ("--feature", f"{name}={level}")]
    done = subprocess.run(
        ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={LOG4J}", "-cp", classpath(),
         "kafka.tools.StorageTool", "format", "--config", str(config), f"--cluster-id={cluster_id}", *features],
        capture_output=True, text=True, timeout=120)
    if done.returncode:
        raise RuntimeError(f"kafka-storage format failed: {done.stdout}{done.stderr}")


def version() -> str:
    """The broker's version as its jar names it (recorded in truth files)."""
    return VERSION if (lib_dir() / f"kafka_2.13-{VERSION}.jar").exists() else "unknown"


def _random_cluster_id() -> str:
    """A cluster id as `kafka-storage random-uuid` makes it: 16 random bytes, URL-safe base64 without padding."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""

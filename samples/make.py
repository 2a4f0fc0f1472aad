"""Make one sample: brokers up, capture on, workload run, truth written; everything torn down whatever happens."""

from __future__ import annotations

import importlib
import json
import platform
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import confluent_kafka
import kafka

from kafkatap.samples.brokers import MockCluster, Tansu, kill_stray_tansu, tansu_version
from kafkatap.samples.capture import Capture, port_filter
from kafkatap.samples.kafka import READY_CLIENT, Kafka, version as kafka_version
from kafkatap.samples.tls import TlsClients
from kafkatap.samples.clients import RequestLog
from kafkatap.samples.truth import Truth, api_name, validate

SAMPLE_DIR = Path(__file__).parent
TLS_DIR = SAMPLE_DIR / "tls"
MAX_CAPTURE_BYTES = 4_000_000
"""A sample stays small enough to commit and to dissect in a second: twice the largest bundled one (day_in_the_life,
1.9 MB). A real broker's capture grows with the machine's load, since its background traffic (followers' and the
quorum's Fetches, a consumer's polls) goes on while JVMs start and wait: kafka44_cluster_restart took 1.3 MB alone,
1.5 MB beside three busy loops and 2.1 MB beside the test suite, which a budget of 2 MB refused."""


@dataclass(frozen=True)
class TlsSpec:
    """TLS in front of Tansu (samples/tls.py): the port clients reach, the highest version they offer, and whether
    they log in with SASL/PLAIN inside it. The capture holds that port only, and the clients' key log is kept."""
    port: int
    maximum_version: str | None = None  # an ssl.TLSVersion name, e.g. "TLSv1_2"; None: TLS 1.3
    sasl_users: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Spec:
    """What a workload needs: a Tansu port, an Apache Kafka port and/or a mock cluster, and what its truth promises."""
    name: str
    description: str
    tansu_port: int | None = None  # for a synthetic sample: the simulated broker's port
    kafka_port: int | None = None  # one Apache Kafka 4.4 node (samples/kafka.py) on this port
    # more nodes: client ports kafka_port + i, controller ports after them; all of them captured
    kafka_nodes: int = 1
    kafka_config: tuple[tuple[str, object], ...] = ()  # server.properties overrides (samples/kafka.py defaults)
    mock_brokers: int = 0
    tshark_comparable: bool = False
    synthetic: bool = False  # written by samples.synthetic: no broker runs, run() leaves its Wire in env.wire
    tls: TlsSpec | None = None  # made in TLS_DIR with its key log: the other samples are dissected without one


@dataclass
class Env:
    """Handed to a workload's `run`: where the brokers are and where to write down what happened."""
    truth: Truth
    log: RequestLog
    tansu: Tansu | None = None
    mock: MockCluster | None = None
    kafka: Kafka | None = None
    workdir: Path | None = None  # with Spec.kafka_port: a scratch folder (broker data, the Java clients' logs)
    after_run: list = field(default_factory=list)  # callables run once the clients' logs are complete
    wire: object = None  # samples.synthetic.Wire of a synthetic sample
    tls: TlsClients | None = None  # with Spec.tls: what the clients need to reach the broker through TLS


def folder(spec: Spec, out_dir: Path = SAMPLE_DIR) -> Path:
    """Where a sample goes: TLS samples in their own folder of the bundled ones (with their key logs), since every
    other sample is dissected without a key log."""
    return TLS_DIR if spec.tls and out_dir == SAMPLE_DIR else out_dir


def capture_file(name: str, out_dir: Path = SAMPLE_DIR) -> Path:
    """The capture sample `name` is written to."""
    spec = importlib.import_module(f"kafkatap.samples.workloads.{name}").SPEC
    return folder(spec, out_dir) / f"{name}.pcapng"


def make(name: str, out_dir: Path = SAMPLE_DIR) -> dict:
    """Run workload `name` under capture (or synthesize it); write `<name>.pcapng` and `<name>.truth.json`."""
    module = importlib.import_module(f"kafkatap.samples.workloads.{name}")
    spec: Spec = module.SPEC
    out_dir = folder(spec, out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pcap, truth_path = out_dir / f"{name}.pcapng", out_dir / f"{name}.truth.json"
    tmp_pcap = out_dir / f".{name}.pcapng.partial"
    truth = Truth(name, spec.description, module.__name__)
    log = RequestLog()
    try:
        ports, mock_ports, broker_counts = (_synthesize if spec.synthetic else _capture)(spec, module, truth, log,
                                                                                         tmp_pcap)
    except BaseException:
        tmp_pcap.unlink(missing_ok=True)
        _keylog(tmp_pcap).unlink(missing_ok=True)
        raise
    requests = {"source": "the synthesizer's own ledger" if spec.synthetic else
                "client logs (librdkafka protocol debug log, kafka-python request encoder, Java NetworkClient debug "
                "log; Apache Kafka's request log for the requests the broker sends itself)",
                "exact": True, "by_client": log.by_client()}
    if mock_ports:
        requests["broker_by_api"] = {api_name(k): n for k, n in sorted(broker_counts.items())}
    kinds = ["synthetic"] if spec.synthetic else [k for k, on in (("tansu", spec.tansu_port),
                                                                  ("apache_kafka", spec.kafka_port),
                                                                  ("librdkafka_mock", mock_ports)) if on]
    truth.doc["synthetic"] = spec.synthetic
    truth.doc["broker"] = {
        "kind": "+".join(kinds),
        "versions": {"confluent-kafka": metadata.version("confluent-kafka"),
                     "librdkafka": confluent_kafka.libversion()[0], "kafka-python": kafka.__version__,
                     "python": platform.python_version(),
                     **({"tansu": tansu_version()} if spec.tansu_port and not spec.synthetic else {}),
                     **({"apache_kafka": kafka_version(), "java": platform_java()} if spec.kafka_port else {})},
    }
    truth.doc["broker_ports"] = sorted(ports)
    truth.doc["broker_ports_by_kind"] = {
        "tansu": [spec.tansu_port] if spec.tansu_port and not spec.synthetic else [],
        **({"apache_kafka": sorted(sum(kafka_ports(spec), []))} if spec.kafka_port else {}),
        "librdkafka_mock": sorted(mock_ports), **({"synthetic": [spec.tansu_port]} if spec.synthetic else {})}
    truth.doc["capture_filter"] = port_filter(ports)
    truth.doc["tshark_comparable"] = spec.tshark_comparable
    if spec.tls:
        truth.doc["tls"] = {"keylog": f"{name}.keys", "terminator_port": spec.tls.port, "tansu_port": spec.tansu_port,
                            "maximum_version": spec.tls.maximum_version or "TLSv1_3",
                            "sasl_users": [user for user, _ in spec.tls.sasl_users]}
    doc = truth.finish(requests, log.errors_by_client())
    problems = validate(doc)
    size = tmp_pcap.stat().st_size
    if problems or size > MAX_CAPTURE_BYTES:
        tmp_pcap.unlink()
        _keylog(tmp_pcap).unlink(missing_ok=True)
        raise RuntimeError(f"{name}: truth is malformed: {problems}" if problems else
                           f"{name}: capture is {size} bytes, over the {MAX_CAPTURE_BYTES} budget")
    tmp_pcap.chmod(0o644)  # dumpcap creates its files private
    if spec.tls:
        _keylog(tmp_pcap).replace(out_dir / f"{name}.keys")
    tmp_pcap.replace(pcap)
    truth_path.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def _capture(spec: Spec, module, truth: Truth, log: RequestLog, pcap: Path) -> tuple[list[int], list[int], Counter]:
    """Real brokers and a real capture around the workload; returns (all ports, mock ports, mock's request counts)."""
    ports = [p for p in (spec.tansu_port, spec.kafka_port) if p]
    mock_ports: list[int] = []
    broker_counts: Counter = Counter()  # what the mock received, read just before it is destroyed
    workdir: Path | None = None
    try:
        with ExitStack() as stack:
            mock = stack.enter_context(MockCluster(spec.mock_brokers)) if spec.mock_brokers else None
            if mock:
                stack.callback(lambda: broker_counts.update(mock.requests_by_api_key()))
                mock_ports = list(mock.ports)
                ports += mock_ports
            # Brokers first, capture second: the readiness probes stay out of the capture, the clients' traffic is in.
            advertised = spec.tls.port if spec.tls else None
            tansu = stack.enter_context(Tansu(spec.tansu_port, advertised=advertised)) if spec.tansu_port else None
            workdir = Path(tempfile.mkdtemp(prefix=f"kafkatap-{spec.name}-")) if spec.kafka_port else None
            kafka = stack.enter_context(_kafka(spec, workdir)) if spec.kafka_port else None
            if kafka and kafka.nodes > 1:  # the brokers' replication and the quorum's traffic too
                ports = [p for p in ports if p != spec.kafka_port] + kafka.ports + kafka.controller_ports
            tls = stack.enter_context(TlsClients(spec.tls, spec.tansu_port, _keylog(pcap))) if spec.tls else None
            if tls:
                ports = [spec.tls.port]  # the clients' side only: the terminator's own leg to Tansu is plaintext
            stack.enter_context(Capture(pcap, ports))
            if kafka:
                kafka.mark()
            stack.enter_context(log.kafka_python())
            stack.enter_context(log.librdkafka_stderr())
            env = Env(truth, log, tansu, mock, kafka, workdir, tls=tls)
            module.run(env)
            if kafka:
                _broker_clients(truth, log, kafka)
        for finish in env.after_run:
            finish()
    except BaseException:
        if workdir:  # the broker's and the Java clients' logs say what went wrong
            print(f"{spec.name}: the broker's and the clients' logs are kept in {workdir}", file=sys.stderr)
        raise
    else:
        if workdir:
            shutil.rmtree(workdir)
    finally:
        if spec.tansu_port:
            kill_stray_tansu([spec.tansu_port])
    return ports, mock_ports, broker_counts


def kafka_ports(spec: Spec) -> tuple[list[int], list[int]]:
    """The sample's Apache Kafka client and controller ports, fixed (the capture filter and the truth name them);
    one node's controller port is a free one: its capture holds the client port only."""
    n = spec.kafka_nodes
    return [spec.kafka_port + i for i in range(n)], [spec.kafka_port + n + i for i in range(n)] if n > 1 else []


def _kafka(spec: Spec, workdir: Path) -> Kafka:
    ports, controller_ports = kafka_ports(spec)
    return Kafka(workdir / "kafka", spec.kafka_nodes, ports, overrides=dict(spec.kafka_config), request_log=True,
                 controller_ports=controller_ports or None)


def _broker_clients(truth: Truth, log: RequestLog, kafka: Kafka) -> None:
    """The requests Apache Kafka sends itself (transactions v2: the partition leader's AddPartitionsToTxn to the
    coordinator, the coordinator's WriteTxnMarkers), counted by the brokers' request logs from the capture's start:
    they are in the capture, and no client of the workload logged them. One node's are exact: the workload's
    clients cause each one. A cluster's replication Fetches and quorum requests never pause, so a few are in flight
    whenever the capture starts or stops, and a node shutting down stops logging first: they go to
    `broker_requests`, with every listener's (the capture holds the controllers' ports too), marked not exact."""
    clients = {c["client_id"] for c in truth.doc["clients"]} | {READY_CLIENT}
    own: dict[str, dict[str, int]] = {}
    listeners = ("PLAINTEXT", "CONTROLLER") if kafka.nodes > 1 else ("PLAINTEXT",)
    for (client, key), n in sorted(kafka.requests_by_client(listeners).items()):
        if client not in clients:
            own.setdefault(client, {})[api_name(key)] = n
    for client in own:
        truth.client(client, f"Apache Kafka {kafka_version()} broker", "broker")
    if kafka.nodes == 1:
        log.merge(own, [])
        return
    truth.doc["broker_requests"] = {
        "source": "the brokers' request logs (both listeners), requests completed from the capture's start to the "
                  "workload's end: approximate, since requests are in flight at either edge and a node shutting "
                  "down stops logging before it stops answering",
        "exact": False, "by_client": own}


def platform_java() -> str:
    """The JVM's version line (`java -version`), recorded beside the broker's: both run on it."""
    out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30).stderr
    return out.splitlines()[0] if out else "unknown"


def _keylog(pcap: Path) -> Path:
    """Where the clients of a TLS sample write their key log while it is made (beside the partial capture)."""
    return pcap.with_name(pcap.name.replace(".pcapng.partial", ".keys.partial"))


def _synthesize(spec: Spec, module, truth: Truth, log: RequestLog, pcap: Path) -> tuple[list[int], list[int], Counter]:
    env = Env(truth, log)
    module.run(env)
    env.wire.write(pcap)
    return [spec.tansu_port], [], Counter()

"""Make one sample: brokers up, capture on, workload run, truth written; everything torn down whatever happens."""

from __future__ import annotations

import importlib
from collections import Counter
import json
import platform
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from samples.brokers import MockCluster, Tansu, kill_stray_tansu, tansu_version
from samples.capture import Capture, port_filter
from samples.clients import RequestLog
from samples.truth import Truth, api_name, validate

SAMPLE_DIR = Path(__file__).parent
MAX_CAPTURE_BYTES = 2_000_000


@dataclass(frozen=True)
class Spec:
    """What a workload needs: a Tansu port and/or a mock cluster, and what its truth promises."""
    name: str
    description: str
    tansu_port: int | None = None
    mock_brokers: int = 0
    tshark_comparable: bool = False


@dataclass
class Env:
    """Handed to a workload's `run`: where the brokers are and where to write down what happened."""
    truth: Truth
    log: RequestLog
    tansu: Tansu | None = None
    mock: MockCluster | None = None
    after_run: list = field(default_factory=list)  # callables run once the clients' logs are complete


def make(name: str, out_dir: Path = SAMPLE_DIR) -> dict:
    """Run workload `name` under capture; write `<name>.pcapng` and `<name>.truth.json` into out_dir."""
    module = importlib.import_module(f"samples.workloads.{name}")
    spec: Spec = module.SPEC
    out_dir.mkdir(parents=True, exist_ok=True)
    pcap, truth_path = out_dir / f"{name}.pcapng", out_dir / f"{name}.truth.json"
    tmp_pcap = out_dir / f".{name}.pcapng.partial"
    truth = Truth(name, spec.description, module.__name__)
    log = RequestLog()
    ports = [spec.tansu_port] if spec.tansu_port else []
    broker_counts: Counter = Counter()  # what the mock received, read just before it is destroyed
    try:
        with ExitStack() as stack:
            mock = stack.enter_context(MockCluster(spec.mock_brokers)) if spec.mock_brokers else None
            if mock:
                stack.callback(lambda: broker_counts.update(mock.requests_by_api_key()))
                ports += mock.ports
            # Brokers first, capture second: the readiness probes stay out of the capture, the clients' traffic is in.
            tansu = stack.enter_context(Tansu(spec.tansu_port)) if spec.tansu_port else None
            stack.enter_context(Capture(tmp_pcap, ports))
            stack.enter_context(log.kafka_python())
            stack.enter_context(log.librdkafka_stderr())
            env = Env(truth, log, tansu, mock)
            module.run(env)
        for finish in env.after_run:
            finish()
        requests = {"source": "client logs (librdkafka protocol debug log, kafka-python request encoder)",
                    "exact": True, "by_client": log.by_client()}
    finally:
        if spec.tansu_port:
            kill_stray_tansu([spec.tansu_port])
    if mock:
        requests["broker_by_api"] = {api_name(k): n for k, n in sorted(broker_counts.items())}
    import confluent_kafka
    import kafka

    truth.doc["broker"] = {
        "kind": "+".join(k for k, on in (("tansu", spec.tansu_port), ("librdkafka_mock", mock)) if on),
        "versions": {"confluent-kafka": confluent_kafka.version()[0], "librdkafka": confluent_kafka.libversion()[0],
                     "kafka-python": kafka.__version__, "python": platform.python_version(),
                     **({"tansu": tansu_version()} if spec.tansu_port else {})},
    }
    truth.doc["broker_ports"] = sorted(ports)
    truth.doc["capture_filter"] = port_filter(ports)
    truth.doc["tshark_comparable"] = spec.tshark_comparable
    doc = truth.finish(requests, log.errors_by_client())
    problems = validate(doc)
    if problems:
        raise RuntimeError(f"{name}: truth is malformed: {problems}")
    size = tmp_pcap.stat().st_size
    if size > MAX_CAPTURE_BYTES:
        raise RuntimeError(f"{name}: capture is {size} bytes, over the {MAX_CAPTURE_BYTES} budget")
    tmp_pcap.chmod(0o644)  # dumpcap creates its files private
    tmp_pcap.replace(pcap)
    truth_path.write_text(json.dumps(doc, indent=1) + "\n")
    return doc

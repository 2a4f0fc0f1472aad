"""Live captures on loopback: real engines, a real Tansu broker, real kafka-python clients.

The Kafka test is the end-to-end contract: `kafkatap capture --dissect` while clients produce and consume a known
number of records, stopped by SIGINT, must show exactly the Produce and Fetch requests the clients counted sending
(kafka-python's encoder, hooked by samples.clients.RequestLog) and exactly their records; and its Parquet must equal
`dissect_captures` run afterwards over the same ring files. A longer capture is dissected as it goes: its Parquet
can be read before the capture stops.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.support.pairing import assert_paired_but_in_flight
from tests.support.paths import ROOT
from tests.support.traffic import send_loop

pytestmark = [pytest.mark.live, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="live captures need capture rights (root here)")]


def start_capture(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kafkatap.capture", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for_file(ring: Path, timeout: float = 20) -> None:
    """The engine is capturing once it has created its first file."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ring.is_dir() and any(ring.iterdir()):
            return
        time.sleep(0.05)
    raise TimeoutError(f"no capture file in {ring} after {timeout}s")


def stop(proc: subprocess.Popen, sig: int = signal.SIGINT) -> tuple[str, str]:
    proc.send_signal(sig)
    try:
        return proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def summary_value(stdout: str, key: str) -> str:
    m = re.search(rf"^{re.escape(key)}: (.*)$", stdout, re.M)
    assert m, f"no {key!r} in summary:\n{stdout}"
    return m.group(1)


def tshark_count(path: Path) -> int:
    done = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "frame.number"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "cut short" not in done.stderr, done.stderr
    return len(done.stdout.split())


@pytest.mark.parametrize("engine,port", [("dumpcap", 29401), ("tcpdump", 29402), ("scapy", 29403)])
def test_sigterm_flushes_and_counts_match(tmp_path: Path, engine: str, port: int) -> None:
    """Every packet the engine reports is in the files, which all read cleanly after SIGTERM."""
    if engine != "scapy" and shutil.which(engine) is None:
        pytest.skip(f"{engine} not installed")
    ring = tmp_path / "ring"
    proc = start_capture("-i", "lo", "--port", str(port), "-w", str(ring), "--engine", engine, "--ring-mb", "0.05")
    wait_for_file(ring)
    send_loop(port, 150, 1200, 0.005, b"r").join(30)
    time.sleep(0.5)
    out, err = stop(proc, signal.SIGTERM)
    assert proc.returncode == 0, err
    assert summary_value(out, "stopped by").startswith("signal SIGTERM")
    files = sorted(ring.iterdir())
    expected_files = 1 if engine == "tcpdump" else 2  # tcpdump rotates at 1 MB at the least
    assert len(files) >= expected_files
    assert sum(tshark_count(f) for f in files) == int(summary_value(out, "packets captured")) >= 300


def test_ring_keeps_last_k_files(tmp_path: Path) -> None:
    if shutil.which("dumpcap") is None:
        pytest.skip("dumpcap not installed")
    ring, port = tmp_path / "ring", 29404
    proc = start_capture("-i", "lo", "--port", str(port), "-w", str(ring), "--ring-mb", "0.03", "--ring-files", "2")
    wait_for_file(ring)
    send_loop(port, 200, 1200, 0.003, b"r").join(30)
    time.sleep(0.5)
    out, err = stop(proc)
    assert proc.returncode == 0, err
    files = sorted(ring.iterdir())
    assert len(files) == 2
    assert "rotated away by the ring" in out
    for f in files:
        tshark_count(f)


def test_dissect_reads_files_the_ring_deleted(tmp_path: Path) -> None:
    """With --ring-files K the engine deletes old files; the dissector still reads every packet captured."""
    if shutil.which("dumpcap") is None:
        pytest.skip("dumpcap not installed")
    ring, out, port = tmp_path / "ring", tmp_path / "out", 29405
    proc = start_capture("-i", "lo", "--port", str(port), "-w", str(ring), "--ring-mb", "0.02", "--ring-files", "2",
                         "--dissect", str(out))
    wait_for_file(ring)
    send_loop(port, 200, 1200, 0.003, b"r").join(30)  # fast: dumpcap opens several files per batch of packets
    time.sleep(0.5)
    stdout, stderr = stop(proc)
    assert proc.returncode == 0, stderr
    assert len(list(ring.iterdir())) == 2
    assert "files the ring has since deleted" in stdout and "MISSING" not in stdout
    assert not (ring / ".kafkatap-held").exists()
    captured = int(summary_value(stdout, "packets captured"))
    assert int(summary_value(stdout, "  packets read")) == captured >= 400
    assert _summary(out)["capture_files_read"] > 2


# ---- Kafka end to end -----------------------------------------------------------------------------------------

TOPIC, PARTITIONS, RECORDS = "kt-capture", 2, 60
PRODUCER, CONSUMER = "kt-cap-producer", "kt-cap-consumer"


def kafka_workload(bootstrap: str) -> tuple[dict, int]:
    """Produce RECORDS records and consume them back with kafka-python; (requests sent per (client, api), consumed)."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    from kafkatap.samples.clients import RequestLog

    log = RequestLog()
    with log.kafka_python():
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kt-cap-admin", api_version=(2, 5))
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap, client_id=PRODUCER, api_version=(2, 5), linger_ms=5)
        for i in range(RECORDS):
            producer.send(TOPIC, key=f"k{i}".encode(), value=b"v" * (50 + i), partition=i % PARTITIONS)
            if i % 10 == 9:
                producer.flush()
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id=CONSUMER, api_version=(2, 5),
                                 group_id=None, enable_auto_commit=False, max_partition_fetch_bytes=1024)
        parts = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        consumed = 0
        deadline = time.monotonic() + 30
        while consumed < RECORDS and time.monotonic() < deadline:
            consumed += sum(len(v) for v in consumer.poll(timeout_ms=200).values())
        consumer.close()
    return dict(log.sent), consumed


def table(out: Path, name: str):
    return pq.read_table(out / name)


@pytest.mark.skipif(shutil.which("dumpcap") is None, reason="dumpcap not installed")
def test_kafka_capture_dissects_exactly_what_clients_sent(tmp_path: Path) -> None:
    from kafkatap.dissect.run import dissect_captures
    from kafkatap.samples.brokers import Tansu

    ring, out, port = tmp_path / "ring", tmp_path / "out", 29411
    with Tansu(port) as broker:
        proc = start_capture("-i", "lo", "--port", str(port), "-w", str(ring), "--ring-mb", "0.005",
                             "--dissect", str(out), "--records")
        try:
            wait_for_file(ring)
            sent, consumed = kafka_workload(broker.bootstrap)
            time.sleep(0.5)  # the last packets reach the capture
        finally:
            stdout, stderr = stop(proc)
    assert proc.returncode == 0, stderr
    assert consumed == RECORDS
    assert summary_value(stdout, "stopped by").startswith("signal SIGINT")
    assert summary_value(stdout, "packets dropped").startswith("0")
    files = sorted(ring.iterdir())
    assert len(files) >= 5, "the ring should have rotated often: connections must span files"

    frames = table(out, "frames").to_pandas()
    seen = frames.groupby(["client_id", "api_name"]).size().to_dict()
    assert seen == sent  # every request of every client, no more, no less
    assert sent[(PRODUCER, "Produce")] >= 6 and sent[(CONSUMER, "Fetch")] >= 1
    assert_paired_but_in_flight(frames.to_dict("records"))  # a client may close with a request in flight
    records = table(out, "records").to_pandas()
    produced = records[(records.direction == "produce") & (records.client_id == PRODUCER)]
    fetched = records[(records.direction == "fetch") & (records.client_id == CONSUMER)]
    assert len(produced) == RECORDS
    assert len(fetched) == RECORDS
    assert len(fetched[["partition", "offset"]].drop_duplicates()) == RECORDS

    again = tmp_path / "again"
    summary = dissect_captures([str(f) for f in files], str(again), ports=[port], records=True)
    assert summary["messages_by_api"] == _summary(out)["messages_by_api"]
    key = ["conn_id", "correlation_id", "api_key"]
    assert table(again, "frames").sort_by([(k, "ascending") for k in key]).equals(
        table(out, "frames").sort_by([(k, "ascending") for k in key]))


@pytest.mark.skipif(shutil.which("dumpcap") is None, reason="dumpcap not installed")
def test_parquet_grows_during_the_capture(tmp_path: Path) -> None:
    """A long capture is dissected as it goes: OUT/frames has rows while the engine still runs, and the output at
    the end equals `dissect_captures` over the ring's files, table for table and row for row."""
    from kafka import KafkaProducer

    from kafkatap.dissect.run import dissect_captures
    from kafkatap.samples.brokers import Tansu

    ring, out, port = tmp_path / "ring", tmp_path / "out", 29501
    rows_while_capturing = 0
    with Tansu(port) as broker:
        proc = start_capture("-i", "lo", "--port", str(port), "-w", str(ring), "--ring-mb", "0.005",
                             "--dissect", str(out), "--records")
        try:
            wait_for_file(ring)
            sent, consumed = kafka_workload(broker.bootstrap)
            producer = KafkaProducer(bootstrap_servers=broker.bootstrap, client_id="kt-cap-live", api_version=(2, 5))
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:  # traffic closes ring files
                producer.send(TOPIC, value=b"x" * 400).get(timeout=10)
                rows_while_capturing = _rows(out / "frames")
                if rows_while_capturing:
                    break
                time.sleep(0.1)
            # one more exchange after the rows were counted: the output must grow past them (without it, a capture
            # whose dissection had caught up with every packet by then ended with exactly those rows)
            producer.send(TOPIC, value=b"x" * 400).get(timeout=10)
            producer.close()
            assert proc.poll() is None, "the capture must still be running"
        finally:
            stdout, stderr = stop(proc)
    assert proc.returncode == 0, stderr
    assert consumed == RECORDS and rows_while_capturing > 0
    assert int(summary_value(stdout, "  Parquet files readable before the capture stopped")) > 0
    files = sorted(str(f) for f in ring.iterdir())
    again = tmp_path / "again"
    want = dissect_captures(files, str(again), ports=[port], records=True)
    got = _summary(out)
    assert got == json.loads(json.dumps(want))
    assert got["rows"]["frames"] > rows_while_capturing
    for name in ("frames", "batches", "records", "share", "anomalies"):
        assert table(out, name).equals(table(again, name)), name
    assert len(list((out / "frames").glob("part-*.parquet"))) >= 2


def _rows(directory: Path) -> int:
    """Rows a reader of the directory sees now (0 while there is no published file)."""
    return pq.read_table(directory).num_rows if directory.is_dir() else 0


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def test_bootstrap_adds_every_advertised_port(tmp_path: Path) -> None:
    from kafkatap.capture.discovery import discover
    from kafkatap.samples.brokers import Tansu

    port = 29412
    with Tansu(port) as broker:
        assert [(host, p) for _, host, p in discover(broker.bootstrap)] == [("127.0.0.1", port)]
        proc = start_capture("-i", "lo", "--port", "29499", "--bootstrap", broker.bootstrap, "-w",
                             str(tmp_path / "ring"), "--duration", "1")
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert summary_value(stdout, "filter") == f"tcp and (port {port} or port 29499)"
    assert f"advertises 127.0.0.1:{port}" in stderr

"""Real TLS on loopback: kafka-python clients speak TLS 1.3 or 1.2 (optionally SASL/PLAIN inside) to a Tansu broker
through a TLS terminator (samples/tls.py: Tansu 0.6 does not finish a TLS handshake), writing a real key log; dumpcap
captures the TLS port. Then `kafkatap dissect --tls-keylog` must see exactly the requests tshark sees with the same key
log and exactly the requests the clients sent, the records produced and fetched, a balanced byte account, and no
secret of the key log nor the SASL password anywhere in its output. Without the key log the TLS is counted; with
another run's key log it is `tls_no_key`. `kafkatap capture --dissect --tls-keylog` follows a key log that the
clients write while it runs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.support.pairing import assert_paired_but_in_flight
from tests.support.paths import ROOT
from tests.support.tls import assert_no_secrets, tshark_requests

pytestmark = [pytest.mark.live, pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="live captures need capture rights (root here)"),
              pytest.mark.skipif(shutil.which("dumpcap") is None, reason="dumpcap not installed"),
              pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")]

TOPIC, PARTITIONS, RECORDS, GROUP = "tls-orders", 2, 30, "kt-tls-group"
USER, PASSWORD = "alice", "pa55-inside-tls"
TABLES = ("frames", "batches", "records", "share", "anomalies")


@dataclass(frozen=True)
class Case:
    name: str
    version: str  # as the frames' `tls` column names it
    maximum: ssl.TLSVersion | None
    sasl: bool
    tansu_port: int
    tls_port: int


CASES = {case.name: case for case in (
    Case("tls13", "TLS 1.3", None, False, 29631, 29632),
    Case("tls12-sasl", "TLS 1.2", ssl.TLSVersion.TLSv1_2, True, 29633, 29634),
    Case("tls13-sasl", "TLS 1.3", None, True, 29635, 29636),
)}


@dataclass
class Run:
    case: Case
    capture: Path
    keylog: Path
    sent: dict  # (client_id, api_name) -> requests the clients sent
    consumed: int
    logins: list


def client_config(case: Case, cafile: Path, keylog: Path) -> dict:
    from kafkatap.samples.tls import client_context

    config = {"bootstrap_servers": f"127.0.0.1:{case.tls_port}", "api_version": (2, 5),
              "security_protocol": "SASL_SSL" if case.sasl else "SSL",
              "ssl_context": client_context(cafile, keylog, case.maximum)}
    if case.sasl:
        config.update(sasl_mechanism="PLAIN", sasl_plain_username=USER, sasl_plain_password=PASSWORD)
    return config


def workload(config: dict) -> int:
    """Create a topic, produce RECORDS records, consume them in a group and commit; returns the records consumed."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(client_id="kt-tls-admin", **config)
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    admin.close()
    producer = KafkaProducer(client_id="kt-tls-producer", linger_ms=5, **config)
    for i in range(RECORDS):
        producer.send(TOPIC, key=f"k{i}".encode(), value=b"v" * (40 + i), partition=i % PARTITIONS)
        if i % 10 == 9:
            producer.flush()
    producer.close()
    consumer = KafkaConsumer(TOPIC, client_id="kt-tls-consumer", group_id=GROUP, enable_auto_commit=False,
                             auto_offset_reset="earliest", session_timeout_ms=6000, heartbeat_interval_ms=1000,
                             **config)
    consumed, deadline = 0, time.monotonic() + 60
    while consumed < RECORDS and time.monotonic() < deadline:
        consumed += sum(len(records) for records in consumer.poll(timeout_ms=300).values())
    consumer.commit()
    consumer.close()
    return consumed


def run_case(case: Case, folder: Path) -> Run:
    from kafkatap.samples.brokers import Tansu
    from kafkatap.samples.capture import Capture
    from kafkatap.samples.clients import RequestLog
    from kafkatap.samples.tls import TlsTerminator, self_signed

    folder.mkdir(parents=True, exist_ok=True)
    cafile, keyfile = self_signed(folder)
    keylog, capture = folder / "keys.log", folder / f"{case.name}.pcapng"
    log = RequestLog()
    users = {USER: PASSWORD} if case.sasl else None
    with Tansu(case.tansu_port, advertised=case.tls_port), \
            TlsTerminator(case.tls_port, case.tansu_port, cafile, keyfile, users) as terminator, \
            Capture(capture, [case.tls_port]), log.kafka_python():
        consumed = workload(client_config(case, cafile, keylog))
    return Run(case, capture, keylog, dict(log.sent), consumed, terminator.logins)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    folder = tmp_path_factory.mktemp("tls-live")
    return {name: run_case(case, folder / name) for name, case in CASES.items()}


def dissect(run: Run, out: Path, keylogs: list[Path] | None) -> dict:
    from kafkatap.dissect.run import dissect_captures

    return dissect_captures([str(run.capture)], str(out), ports=[run.case.tls_port], records=True, payloads=True,
                            tls_keylog=[str(k) for k in keylogs or ()])


def table(out: Path, name: str) -> list[dict]:
    return pq.read_table(out / name).to_pylist()


@pytest.mark.parametrize("name", CASES)
def test_decrypted_capture_is_what_clients_sent_and_what_tshark_sees(runs: dict[str, Run], name: str,
                                                                     tmp_path: Path) -> None:
    run = runs[name]
    assert run.consumed == RECORDS
    assert run.logins == ([(USER, True)] * len(run.logins) if run.case.sasl else [])
    assert not run.case.sasl or run.logins
    out = tmp_path / "out"
    summary = dissect(run, out, [run.keylog])
    frames = table(out, "frames")

    ours = {(int(f["client_addr"].rsplit(":", 1)[1]), f["api_key"], f["api_version"], f["correlation_id"])
            for f in frames}
    theirs = tshark_requests(run.capture, run.case.tls_port, run.keylog)
    assert theirs and ours == theirs and len(frames) == len(theirs)
    by_client: dict = {}
    for f in frames:
        by_client[(f["client_id"], f["api_name"])] = by_client.get((f["client_id"], f["api_name"]), 0) + 1
    assert by_client == run.sent
    assert_paired_but_in_flight(frames)  # a consumer may close with its next Fetch unanswered
    assert {f["tls"] for f in frames} == {run.case.version}
    apis = {f["api_name"] for f in frames}
    assert {"Produce", "Fetch", "JoinGroup", "SyncGroup", "OffsetCommit"} <= apis
    assert ("SaslAuthenticate" in apis) == run.case.sasl

    batches = table(out, "batches")
    produced = [b for b in batches if b["direction"] == "produce"]
    assert sum(b["record_count"] for b in produced) == RECORDS
    assert sorted((b["partition"], b["assigned_offset"]) for b in produced)[0][1] == 0
    fetched = {(r["partition"], r["offset"]) for r in table(out, "records") if r["direction"] == "fetch"}
    assert fetched == {(p, o) for p in range(PARTITIONS) for o in range(RECORDS // PARTITIONS)}
    assert len([r for r in table(out, "records") if r["direction"] == "produce"]) == RECORDS

    account = summary["byte_account"]
    assert account["balanced"] and summary["anomalies_by_kind"] == {}
    assert set(account["totals"]["skipped"]) == {"tls_overhead"}
    assert {s["tls"]["version"] for s in account["streams"]} == {run.case.version}
    assert summary["tls"]["connections"]["decrypted"] == summary["connections"]["tls"] == len(account["streams"]) / 2
    assert summary["tls"]["keylog_files"] == [str(run.keylog)]

    assert assert_no_secrets(out, run.keylog, (PASSWORD,)) >= len(account["streams"]) / 2


def test_without_the_key_log_and_with_another_one(runs: dict[str, Run], tmp_path: Path) -> None:
    run, other = runs["tls13"], runs["tls13-sasl"]
    summary = dissect(run, tmp_path / "none", None)
    anomalies = table(tmp_path / "none", "anomalies")
    assert {a["kind"] for a in anomalies} == {"tls"} and len(anomalies) == summary["connections"]["tls"]
    assert all("give --tls-keylog to decrypt" in a["detail"] for a in anomalies)
    assert summary["rows"]["frames"] == 0 and summary["byte_account"]["balanced"]
    assert summary["tls"]["connections"]["not_decrypted"] == summary["connections"]["tls"]

    summary = dissect(run, tmp_path / "wrong", [other.keylog])
    kinds = {a["kind"] for a in table(tmp_path / "wrong", "anomalies")}
    assert kinds == {"tls_no_key"} and summary["rows"]["frames"] == 0 and summary["byte_account"]["balanced"]
    assert set(summary["byte_account"]["totals"]["skipped"]) == {"tls_overhead", "tls_no_key"}


def test_capture_dissect_follows_a_key_log_written_while_it_runs(tmp_path: Path) -> None:
    from kafkatap.dissect.run import dissect_captures
    from kafkatap.samples.brokers import Tansu
    from kafkatap.samples.tls import TlsTerminator, self_signed

    case = Case("capture", "TLS 1.3", None, False, 29637, 29638)
    cafile, keyfile = self_signed(tmp_path)
    keylog, ring, out = tmp_path / "keys.log", tmp_path / "ring", tmp_path / "out"
    keylog.touch()  # the clients write it once the capture runs
    with Tansu(case.tansu_port, advertised=case.tls_port), \
            TlsTerminator(case.tls_port, case.tansu_port, cafile, keyfile):
        proc = subprocess.Popen([sys.executable, "-m", "kafkatap.capture", "-i", "lo", "--port", str(case.tls_port),
                                 "-w", str(ring), "--ring-mb", "0.01", "--dissect", str(out), "--records",
                                 "--tls-keylog", str(keylog)], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 20
            while not (ring.is_dir() and any(ring.iterdir())) and time.monotonic() < deadline:
                time.sleep(0.05)
            consumed = workload(client_config(case, cafile, keylog))
            time.sleep(0.5)
        finally:
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert consumed == RECORDS
    summary = json.loads((out / "summary.json").read_text())
    assert summary["anomalies_by_kind"] == {} and summary["byte_account"]["balanced"]
    assert summary["tls"]["connections"]["decrypted"] == summary["connections"]["tls"] > 1
    again = tmp_path / "again"
    want = dissect_captures(sorted(str(f) for f in ring.iterdir()), str(again), ports=[case.tls_port],
                            records=True, tls_keylog=[str(keylog)])
    assert summary["messages_by_api"] == want["messages_by_api"]
    for name in TABLES:
        assert pq.read_table(out / name).equals(pq.read_table(again / name)), name

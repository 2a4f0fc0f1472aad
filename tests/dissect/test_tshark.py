"""An outside oracle: tshark's Kafka dissector must see the same messages as ours.

For each sample whose clients stay within the versions tshark 4.0 decodes (truth `tshark_comparable`, i.e. kafka-python
with api_version=(2, 5)), the set of (client port, api_key, api_version, correlation_id, error_code) is identical.
tshark reads the headers of every api and version, so on the real Apache Kafka 4.4 samples (Java clients, KRaft
quorum and replication traffic, api versions tshark cannot decode the bodies of) every request's (client port,
broker port, api_key, api_version, correlation_id) is compared.

Error codes: tshark lists every error field of a response (`kafka.error`, in wire order); our `error_code` is the
top-level one if non-zero, else the first non-zero nested one. The comparable tshark value is therefore the first
non-zero entry of its list, else 0 when it listed any, else nothing (tshark did not decode that body: not compared).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures
from tests.support.paths import REAL_BROKER_SAMPLES, SAMPLES


def _comparable() -> list[str]:
    out = []
    for truth in sorted(SAMPLES.glob("*.truth.json")):
        t = json.loads(truth.read_text())
        if t.get("tshark_comparable") and (SAMPLES / t["capture"]).exists():
            out.append(truth.name[:-len(".truth.json")])
    return out


pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")]


def _packets(capture: Path, ports: list[int]):
    """tshark's PDML packets of the capture, with the broker ports decoded as Kafka."""
    args = ["tshark", "-r", str(capture), "-T", "pdml"]
    for port in ports:
        args += ["-d", f"tcp.port=={port},kafka"]
    return ET.fromstring(subprocess.run(args, check=True, capture_output=True).stdout).iter("packet")


def tshark_messages(capture: Path, ports: list[int]) -> set[tuple]:
    """(client_port, api_key, api_version, correlation_id, error) per request tshark decoded, from its PDML."""
    requests: dict[tuple[int, int], tuple[int, int]] = {}
    errors: dict[tuple[int, int], int | None] = {}
    for packet in _packets(capture, ports):
        tcp = next(p for p in packet.iter("proto") if p.get("name") == "tcp")
        sport = int(next(f.get("show") for f in tcp.iter("field") if f.get("name") == "tcp.srcport"))
        dport = int(next(f.get("show") for f in tcp.iter("field") if f.get("name") == "tcp.dstport"))
        for pdu in (p for p in packet.iter("proto") if p.get("name") == "kafka"):
            fields: dict[str, list[str]] = {}
            for f in pdu.iter("field"):
                fields.setdefault(f.get("name"), []).append(f.get("show"))
            corr = int(fields["kafka.correlation_id"][0])
            if "kafka.request_frame" in fields or "kafka.response.version" in fields:
                codes = [int(e) for e in fields.get("kafka.error", [])]
                errors[(dport, corr)] = next((c for c in codes if c), 0) if codes else None
            else:
                requests[(sport, corr)] = (int(fields["kafka.api_key"][0]), int(fields["kafka.api_version"][0]))
    return {(port, key, version, corr, errors.get((port, corr), None))
            for (port, corr), (key, version) in requests.items()}


@pytest.mark.parametrize("name", _comparable())
def test_same_messages_as_tshark(name: str, tmp_path: Path) -> None:
    truth = json.loads((SAMPLES / f"{name}.truth.json").read_text())
    capture = SAMPLES / truth["capture"]
    dissect_captures([str(capture)], str(tmp_path), ports=truth["broker_ports"])
    ours = set()
    no_error_in_tshark = set()
    theirs = tshark_messages(capture, truth["broker_ports"])
    for (port, key, version, corr, err) in theirs:
        if err is None:
            no_error_in_tshark.add((port, corr))
    for row in pq.read_table(tmp_path / "frames").to_pylist():
        port = int(row["client_addr"].rsplit(":", 1)[1])
        err = None if (port, row["correlation_id"]) in no_error_in_tshark else row["error_code"]
        ours.add((port, row["api_key"], row["api_version"], row["correlation_id"], err))
    assert theirs, "tshark decoded nothing"
    assert ours == theirs


def tshark_requests(capture: Path, ports: list[int]) -> set[tuple]:
    """(client_port, broker_port, api_key, api_version, correlation_id) per request header tshark found."""
    out = set()
    for packet in _packets(capture, ports):
        tcp = next(p for p in packet.iter("proto") if p.get("name") == "tcp")
        show = {f.get("name"): f.get("show") for f in tcp.iter("field")}
        for pdu in (p for p in packet.iter("proto") if p.get("name") == "kafka"):
            names = {f.get("name"): f.get("show") for f in pdu.iter("field")}
            if "kafka.request_frame" in names or "kafka.response.version" in names or "kafka.api_key" not in names:
                continue  # a response, or a fragment tshark could not place
            out.add((int(show["tcp.srcport"]), int(show["tcp.dstport"]), int(names["kafka.api_key"]),
                     int(names["kafka.api_version"]), int(names["kafka.correlation_id"])))
    return out


@pytest.mark.parametrize("name", REAL_BROKER_SAMPLES)
def test_same_request_headers_as_tshark_on_the_real_broker(name: str, tmp_path: Path) -> None:
    truth = json.loads((SAMPLES / f"{name}.truth.json").read_text())
    capture = SAMPLES / truth["capture"]
    dissect_captures([str(capture)], str(tmp_path), ports=truth["broker_ports"])
    ours = {(int(r["client_addr"].rsplit(":", 1)[1]), int(r["broker_addr"].rsplit(":", 1)[1]), r["api_key"],
             r["api_version"], r["correlation_id"])
            for r in pq.read_table(tmp_path / "frames").to_pylist() if r["ts_request"] is not None}
    theirs = tshark_requests(capture, truth["broker_ports"])
    assert len(theirs) > 50 and ours == theirs

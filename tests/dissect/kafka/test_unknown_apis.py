"""Every message on a stream that starts after its SYN is a row: a request of an api key or version the schemas lack
(a newer client) is an `unknown_api` row with its header fields, paired with its response; a request whose body does
not decode is a `decode_error` row; neither is skipped as `resync`."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from kafkatap.dissect.run import dissect_captures
from tests.support.kafka_messages import frame, metadata_request, metadata_response
from tests.support.pcap import TcpFlow, pcap_bytes, timed

PORT = 9092


def raw_request(api_key: int, version: int, corr: int, body: bytes, client_id: bytes = b"newer-client") -> bytes:
    """A request with a v1 header, as any client writes one for an api the codec may not know."""
    return frame(struct.pack(">hhih", api_key, version, corr, len(client_id)) + client_id + body)


def raw_response(corr: int, body: bytes) -> bytes:
    return frame(struct.pack(">i", corr) + body)


def connection(port: int, exchanges: list[tuple[bytes, bytes]], syn: bool = True) -> list[bytes]:
    flow = TcpFlow(client=("127.0.0.1", port), server=("127.0.0.1", PORT))
    frames = flow.handshake() if syn else []
    for request, response in exchanges:
        frames += flow.send(0, request) + flow.send(1, response)
    return frames + flow.fin(0) + flow.fin(1)


def dissect(tmp_path: Path, frames: list[bytes]) -> tuple[dict, list[dict], list[dict]]:
    capture = tmp_path / "unknown.pcap"
    capture.write_bytes(pcap_bytes(timed(frames)))
    summary = dissect_captures([str(capture)], str(tmp_path / "out"), ports=[PORT])
    assert summary["byte_account"]["balanced"], summary["byte_account"]["totals"]
    return (summary, pq.read_table(tmp_path / "out" / "frames").to_pylist(),
            pq.read_table(tmp_path / "out" / "anomalies").to_pylist())


def test_unknown_apis_and_undecodable_bodies_at_a_stream_start_are_rows(tmp_path: Path) -> None:
    bad_delete = struct.pack(">ihi", 1, 50, 30000) + b"abc"  # DeleteTopics v1: a topic name longer than the frame
    frames = (connection(50001, [(raw_request(10000, 0, 1, b"\x01\x02\x03"), raw_response(1, b"\x00\x00")),
                                 (metadata_request(2), metadata_response(2))])
              + connection(50002, [(raw_request(3, 1000, 5, b"\x00" * 6), raw_response(5, b"\x00" * 8))])
              + connection(50003, [(raw_request(20, 1, 7, bad_delete), raw_response(7, b"\x00" * 8))]))
    summary, rows, anomalies = dissect(tmp_path, frames)
    by = {(r["api_key"], r["correlation_id"]): r for r in rows}
    newer = by[(10000, 1)]
    assert (newer["api_name"], newer["api_version"], newer["client_id"], newer["status"]) == (
        "unknown", 0, "newer-client", "unknown_api")
    assert (newer["request_bytes"], newer["response_bytes"]) == (4 + 22 + 3, 4 + 6)
    assert by[(3, 2)]["status"] == "ok", "the connection goes on after the unknown request"
    version = by[(3, 5)]
    assert (version["api_name"], version["api_version"], version["status"]) == ("Metadata", 1000, "unknown_api")
    broken = by[(20, 7)]
    assert broken["status"] == "decode_error" and broken["response_bytes"] == 4 + 4 + 8
    assert "length_too_large" in broken["decode_error"]
    kinds = {a["kind"] for a in anomalies}
    assert "resync" not in kinds and {"unknown_api", "decode_error"} <= kinds
    assert summary["frames_by_status"] == {"decode_error": 1, "ok": 1, "unknown_api": 2}


def test_without_a_syn_an_unknown_request_is_not_trusted(tmp_path: Path) -> None:
    """Mid-stream there is no frame boundary to be sure of: bytes that do not make a known request are skipped
    (reported as resync, and booked) until one does."""
    frames = connection(50004, [(raw_request(10000, 0, 1, b"\x01\x02\x03"), raw_response(1, b"\x00\x00")),
                                (metadata_request(2), metadata_response(2))], syn=False)
    summary, rows, anomalies = dissect(tmp_path, frames)
    assert [r["api_key"] for r in rows] == [3]
    assert [a["bytes"] for a in anomalies if a["kind"] == "resync" and a["direction"] == "request"] == [4 + 22 + 3]
    assert summary["byte_account"]["totals"]["skipped"]["resync"] >= 4 + 22 + 3


ODD_DELETES = [struct.pack(">ihi", 1, 50, 30000) + b"abc",  # a topic name longer than the frame
               struct.pack(">ih", 1, -5) + struct.pack(">i", 1000),  # a negative string length
               struct.pack(">ih", 1, 3) + b"\xff\xfe\xfd" + struct.pack(">i", 1000)]  # not UTF-8


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_every_request_tshark_lists_is_a_row(tmp_path: Path) -> None:
    """Wireshark-style crafted traffic: an unknown api key, an unknown version, three DeleteTopics with odd strings
    on three connections, and the unknown ones again mid-stream right after a decoded message. tshark lists every
    request's header; each must be a frame row with the same api key, version and correlation id."""
    frames = (connection(50001, [(raw_request(10000, 0, 1, b"\x01\x02\x03"), raw_response(1, b"\x00\x00")),
                                 (metadata_request(2), metadata_response(2))])
              + connection(50002, [(raw_request(3, 1000, 5, b"\x00" * 6), raw_response(5, b"\x00" * 8))])
              + [f for i, body in enumerate(ODD_DELETES)
                 for f in connection(50003 + i, [(raw_request(20, 1, 7 + i, body), raw_response(7 + i, b"\x00" * 8))])]
              + connection(50010, [(metadata_request(1), metadata_response(1)),
                                   (raw_request(10000, 0, 2, b"\x01\x02\x03"), raw_response(2, b"\x00\x00")),
                                   (raw_request(3, 1000, 3, b"\x00" * 6), raw_response(3, b"\x00" * 8))], syn=False))
    summary, rows, _ = dissect(tmp_path, frames)
    fields = subprocess.run(["tshark", "-r", str(tmp_path / "unknown.pcap"), "-d", f"tcp.port=={PORT},kafka", "-Y",
                             f"kafka && tcp.dstport=={PORT}", "-T", "fields", "-e", "tcp.srcport", "-e",
                             "kafka.api_key", "-e", "kafka.api_version", "-e", "kafka.correlation_id"],
                            check=True, capture_output=True, text=True).stdout
    theirs = sorted(tuple(int(v) for v in line.split("\t")) for line in fields.splitlines())
    ours = sorted((int(r["client_addr"].rsplit(":", 1)[1]), r["api_key"], r["api_version"], r["correlation_id"])
                  for r in rows)
    assert len(theirs) == 9 and ours == theirs
    assert summary["frames_by_status"] == {"decode_error": 3, "ok": 2, "unknown_api": 4}

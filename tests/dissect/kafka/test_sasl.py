"""SASL: mechanisms are recorded, credentials never reach any output, raw v0 tokens are counted and skipped.

No SASL broker is at hand on loopback, so the connections are built from messages encoded by the codec (the same
bytes a client sends) and packetised with real TCP framing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from kafkatap.dissect.run import dissect_captures
from tests.support.kafka_messages import frame, request, response
from tests.support.pcap import TcpFlow, pcap_bytes, timed

SECRET = b"s3cr3t-pw"
SERVER_SECRET = b"server-nonce-s3cr3t"
METADATA_REQ = {"topics": None}
METADATA_RESP = {"brokers": [], "controller_id": 1, "topics": []}


def test_sasl_v0_tokens_and_v1_authenticate(tmp_path: Path) -> None:
    v0 = TcpFlow(client=("127.0.0.1", 51000), server=("127.0.0.1", 9092))
    client_token = frame(b"\0alice\0" + SECRET)
    server_token = frame(b"")
    frames = v0.handshake()
    frames += v0.send(0, request(17, 0, 1, {"mechanism": "PLAIN"}))
    frames += v0.send(1, response(17, 0, 1, {"error_code": 0, "mechanisms": ["PLAIN"]}))
    frames += v0.send(0, client_token)
    frames += v0.send(1, server_token)
    frames += v0.send(0, request(3, 1, 2, METADATA_REQ))
    frames += v0.send(1, response(3, 1, 2, METADATA_RESP))
    v1 = TcpFlow(client=("127.0.0.1", 51001), server=("127.0.0.1", 9092))
    frames += v1.handshake()
    frames += v1.send(0, request(17, 1, 1, {"mechanism": "SCRAM-SHA-512"}))
    frames += v1.send(1, response(17, 1, 1, {"error_code": 0, "mechanisms": ["SCRAM-SHA-512"]}))
    frames += v1.send(0, request(36, 1, 2, {"auth_bytes": b"n,,n=alice,r=" + SECRET}))
    frames += v1.send(1, response(36, 1, 2, {"error_code": 0, "error_message": None, "auth_bytes": SERVER_SECRET,
                                             "session_lifetime_ms": 0}))
    frames += v1.send(0, request(3, 1, 3, METADATA_REQ))
    frames += v1.send(1, response(3, 1, 3, METADATA_RESP))
    frames += v0.fin(0) + v1.fin(0)
    capture = tmp_path / "sasl.pcap"
    capture.write_bytes(pcap_bytes(timed(frames)))
    out = tmp_path / "out"
    summary = dissect_captures([str(capture)], str(out), records=True, payloads=True)

    rows = pq.read_table(out / "frames").to_pylist()
    assert [(r["client_addr"], r["api_name"], r["status"]) for r in rows] == [
        ("127.0.0.1:51000", "SaslHandshake", "ok"), ("127.0.0.1:51000", "Metadata", "ok"),
        ("127.0.0.1:51001", "SaslHandshake", "ok"), ("127.0.0.1:51001", "SaslAuthenticate", "ok"),
        ("127.0.0.1:51001", "Metadata", "ok")]
    assert json.loads(rows[0]["request_json"]) == {"mechanism": "PLAIN"}
    auth = rows[3]
    assert json.loads(auth["request_json"])["auth_bytes"] == {"$redacted": len(b"n,,n=alice,r=" + SECRET)}
    assert json.loads(auth["response_json"])["auth_bytes"] == {"$redacted": len(SERVER_SECRET)}
    assert summary["anomalies_by_kind"] == {}
    streams = {(s["conn_id"].split(">")[0], s["direction"]): s for s in summary["byte_account"]["streams"]}
    assert streams[("127.0.0.1:51000", "request")]["skipped"] == {"sasl_token": len(client_token)}
    assert streams[("127.0.0.1:51000", "response")]["skipped"] == {"sasl_token": len(server_token)}
    assert summary["byte_account"]["balanced"]

    everything = (out / "summary.json").read_text()
    for table in ("frames", "batches", "records", "share", "anomalies"):
        everything += json.dumps(pq.read_table(out / table).to_pylist(), default=repr)
    assert "s3cr3t" not in everything

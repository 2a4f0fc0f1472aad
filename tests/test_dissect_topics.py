"""Topic ids are named from Metadata seen in the capture, even when the Metadata comes after the rows that need it."""

from __future__ import annotations

import base64
import struct
import uuid
from pathlib import Path

import pyarrow.parquet as pq
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkatap.dissect.protocol import encode_request, encode_request_header, encode_response, encode_response_header
from kafkatap.dissect.run import dissect_captures
from tests.pcaputil import TcpFlow, pcap_bytes, timed


def kafka_uuid(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode()


NAMED = kafka_uuid(uuid.UUID(int=0x1234))
NEVER_NAMED = kafka_uuid(uuid.UUID(int=0x5678))


def frame(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def request(api_key: int, version: int, corr: int, body: dict) -> bytes:
    return frame(encode_request_header({"api_key": api_key, "api_version": version, "correlation_id": corr,
                                        "client_id": "c"}) + encode_request(api_key, version, body))


def response(api_key: int, version: int, corr: int, body: dict) -> bytes:
    return frame(encode_response_header(api_key, version, {"correlation_id": corr})
                 + encode_response(api_key, version, body))


def batch(base_offset: int, n: int) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(n):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"v%d" % i, headers=[])
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)
    return bytes(data)


def fetch_request(corr: int) -> bytes:
    part = {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 5, "last_fetched_epoch": -1,
            "log_start_offset": -1, "partition_max_bytes": 1 << 20}
    return request(1, 13, corr, {
        "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "topics": [{"topic_id": t, "partitions": [part]}
                                                         for t in (NAMED, NEVER_NAMED)],
        "forgotten_topics_data": [], "rack_id": ""})


def fetch_response(corr: int) -> bytes:
    def part(records: bytes) -> dict:
        return {"partition_index": 0, "error_code": 0, "high_watermark": 8, "last_stable_offset": 8,
                "log_start_offset": 0, "aborted_transactions": [], "preferred_read_replica": -1, "records": records}
    return response(1, 13, corr, {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic_id": NAMED, "partitions": [part(batch(5, 3))]},
        {"topic_id": NEVER_NAMED, "partitions": [part(batch(5, 1))]}]})


def metadata_response(corr: int) -> bytes:
    return response(3, 12, corr, {"throttle_time_ms": 0, "brokers": [], "cluster_id": "x", "controller_id": 1,
                                  "topics": [{"error_code": 0, "name": "orders", "topic_id": NAMED,
                                              "is_internal": False, "partitions": [],
                                              "topic_authorized_operations": 0}]})


def test_ids_seen_before_their_metadata_are_named_at_the_end(tmp_path: Path) -> None:
    flow = TcpFlow(client=("10.0.0.1", 40000), server=("10.0.0.2", 9092))
    frames = flow.handshake()
    frames += flow.send(0, fetch_request(1)) + flow.send(1, fetch_response(1))
    frames += flow.send(0, request(3, 12, 2, {"topics": None, "allow_auto_topic_creation": False,
                                              "include_topic_authorized_operations": False}))
    frames += flow.send(1, metadata_response(2))
    frames += flow.send(0, fetch_request(3)) + flow.send(1, fetch_response(3))
    capture = tmp_path / "ids.pcap"
    capture.write_bytes(pcap_bytes(timed(frames + flow.fin(0))))
    out = tmp_path / "out"
    summary = dissect_captures([str(capture)], str(out), records=True)

    assert summary["frames_by_status"] == {"ok": 3}
    assert summary["topic_ids_named_late"] == {"frames": 1, "batches": 1, "records": 1}
    rows = pq.read_table(out / "batches").to_pylist()
    assert [(r["correlation_id"], r["topic"], r["topic_id"], r["base_offset"], r["last_offset"], r["fetch_offset"],
             r["high_watermark"]) for r in rows] == [
        (1, "orders", NAMED, 5, 7, 5, 8), (1, NEVER_NAMED, NEVER_NAMED, 5, 5, 5, 8),
        (3, "orders", NAMED, 5, 7, 5, 8), (3, NEVER_NAMED, NEVER_NAMED, 5, 5, 5, 8)]
    fetches = [r for r in pq.read_table(out / "frames").to_pylist() if r["api_name"] == "Fetch"]
    assert [r["topics"] for r in fetches] == [["orders", NEVER_NAMED]] * 2
    records = pq.read_table(out / "records").to_pylist()
    assert [(r["topic"], r["offset"]) for r in records if r["correlation_id"] == 1] == [
        ("orders", 5), ("orders", 6), ("orders", 7), (NEVER_NAMED, 5)]
    assert pq.read_schema(out / "batches" / "part-00000.parquet").metadata  # docs survive the rewrite

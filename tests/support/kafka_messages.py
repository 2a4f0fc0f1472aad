"""Kafka messages as a client or broker puts them on the wire (length prefix, header, body), encoded by the codec.

The Fetch/Metadata builders tell one story: topic id NAMED is named "orders" by a Metadata response, NEVER_NAMED is
never named, so tests can place the Metadata before or after the rows that need it.
"""

from __future__ import annotations

import base64
import struct
import uuid

from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkatap.dissect.protocol import encode_request, encode_request_header, encode_response, encode_response_header


def kafka_uuid(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode()


NAMED = kafka_uuid(uuid.UUID(int=0x1234))
NEVER_NAMED = kafka_uuid(uuid.UUID(int=0x5678))


def frame(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def request(api_key: int, version: int, corr: int, body: dict, client_id: str = "c") -> bytes:
    return frame(encode_request_header({"api_key": api_key, "api_version": version, "correlation_id": corr,
                                        "client_id": client_id}) + encode_request(api_key, version, body))


def response(api_key: int, version: int, corr: int, body: dict) -> bytes:
    return frame(encode_response_header(api_key, version, {"correlation_id": corr})
                 + encode_response(api_key, version, body))


def batch(base_offset: int, n: int) -> bytes:
    """A v2 record batch of n records (kafka-python's builder) starting at base_offset."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    for i in range(n):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"v%d" % i, headers=[])
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)
    return bytes(data)


def fetch_request(corr: int) -> bytes:
    """Fetch v13 (topics by id) of partition 0 of NAMED and NEVER_NAMED from offset 5."""
    part = {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 5, "last_fetched_epoch": -1,
            "log_start_offset": -1, "partition_max_bytes": 1 << 20}
    return request(1, 13, corr, {
        "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "topics": [{"topic_id": t, "partitions": [part]}
                                                         for t in (NAMED, NEVER_NAMED)],
        "forgotten_topics_data": [], "rack_id": ""})


def fetch_partition(records: bytes, index: int = 0, high_watermark: int = 8) -> dict:
    """One partition of a Fetch response (v4+), without error, holding `records`."""
    return {"partition_index": index, "error_code": 0, "high_watermark": high_watermark,
            "last_stable_offset": high_watermark, "log_start_offset": 0, "aborted_transactions": [],
            "preferred_read_replica": -1, "records": records}


def fetch_response(corr: int) -> bytes:
    """Offsets 5-7 of NAMED and offset 5 of NEVER_NAMED."""
    return response(1, 13, corr, {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic_id": NAMED, "partitions": [fetch_partition(batch(5, 3))]},
        {"topic_id": NEVER_NAMED, "partitions": [fetch_partition(batch(5, 1))]}]})


def metadata_request(corr: int) -> bytes:
    return request(3, 12, corr, {"topics": None, "allow_auto_topic_creation": False,
                                 "include_topic_authorized_operations": False})


def metadata_response(corr: int) -> bytes:
    """Metadata v12 naming NAMED "orders"."""
    return response(3, 12, corr, {"throttle_time_ms": 0, "brokers": [], "cluster_id": "x", "controller_id": 1,
                                  "topics": [{"error_code": 0, "name": "orders", "topic_id": NAMED,
                                              "is_internal": False, "partitions": [],
                                              "topic_authorized_operations": 0}]})

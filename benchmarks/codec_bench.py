"""Decode speed of the protocol codec: small requests (µs each) and Produce/Fetch with big record payloads (MB/s);
then what the dissector does with each body (decode, extract, JSON): the pure-Python reader against the compiled one.

    python benchmarks/codec_bench.py

Targets: a typical small request (Metadata, Heartbeat, OffsetCommit) decodes in low microseconds; Produce and Fetch
with large record payloads are dominated by slicing the records bytes (hundreds of MB/s or more); the compiled body
reader takes about a microsecond for a small message, JSON included.
"""

from __future__ import annotations

import os
import sys
import time


from kafkatap.dissect import native
from kafkatap.dissect.kafka import bodies
from kafkatap.dissect.protocol import (
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_request_header,
    encode_response,
    response_header_version,
)

TOPIC_ID = "AAECAwQFBgcICQoLDA0ODw"


def measure(fn, data: bytes, seconds: float = 0.25, repeats: int = 3) -> float:
    """Calls per second: the best of a few short runs, so a busy shared machine disturbs the figure less."""
    best = 0.0
    for _ in range(repeats):
        n, start = 0, time.perf_counter()
        while True:
            for _ in range(100):
                fn(data)
            n += 100
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        best = max(best, n / elapsed)
    return best


def produce(version: int, payload: int, partitions: int) -> bytes:
    topic = {"name": "orders", "topic_id": TOPIC_ID,
             "partition_data": [{"index": p, "records": os.urandom(payload)} for p in range(partitions)]}
    return encode_request(0, version, {"transactional_id": None, "acks": -1, "timeout_ms": 30000,
                                       "topic_data": [topic]})


def fetch(version: int, payload: int, partitions: int) -> bytes:
    topic = {"topic": "orders", "topic_id": TOPIC_ID, "partitions": [
        {"partition_index": p, "error_code": 0, "high_watermark": 10**6, "last_stable_offset": 10**6,
         "log_start_offset": 0, "aborted_transactions": [], "preferred_read_replica": -1,
         "records": os.urandom(payload)} for p in range(partitions)]}
    return encode_response(1, version, {"throttle_time_ms": 0, "error_code": 0, "session_id": 7, "responses": [topic]})


def small() -> list[tuple[str, int, int, bool, bytes]]:
    return [
        ("Heartbeat v4 request", 12, 4, False, encode_request(12, 4, {
            "group_id": "my-group", "generation_id": 5, "member_id": "consumer-1-0123456789abcdef"})),
        ("Metadata v12 request (1 topic)", 3, 12, False, encode_request(3, 12, {
            "topics": [{"topic_id": "AAAAAAAAAAAAAAAAAAAAAA", "name": "orders"}], "allow_auto_topic_creation": True})),
        ("Metadata v1 request (legacy, 3 topics)", 3, 1, False, encode_request(3, 1, {
            "topics": [{"name": "orders"}, {"name": "payments"}, {"name": "audit"}]})),
        ("OffsetCommit v8 request (3 partitions)", 8, 8, False, encode_request(8, 8, {
            "group_id": "my-group", "generation_id_or_member_epoch": 5, "member_id": "consumer-1",
            "topics": [{"name": "orders", "partitions": [
                {"partition_index": p, "committed_offset": 1000 + p, "committed_metadata": ""} for p in range(3)]}]})),
        ("Metadata v12 response (10 topics x 3)", 3, 12, True, encode_response(3, 12, {
            "brokers": [{"node_id": n, "host": f"broker-{n}", "port": 9092} for n in range(3)],
            "cluster_id": "c", "controller_id": 0, "topics": [
                {"name": f"topic-{t}", "topic_id": TOPIC_ID, "partitions": [
                    {"partition_index": p, "leader_id": p % 3, "replica_nodes": [0, 1, 2], "isr_nodes": [0, 1, 2]}
                    for p in range(3)]} for t in range(10)]})),
    ]


def main() -> int:
    print(f"{'small message':42} {'bytes':>6} {'µs/msg':>8} {'msgs/s':>10}")
    header = encode_request_header({"api_key": 12, "api_version": 4, "correlation_id": 7, "client_id": "rdkafka"})
    rate = measure(decode_request_header, header)
    print(f"{'request header v2':42} {len(header):6d} {1e6 / rate:8.2f} {rate:10.0f}")
    for label, key, version, response, data in small():
        decode = decode_response if response else decode_request
        rate = measure(lambda b: decode(key, version, b), data)
        print(f"{label:42} {len(data):6d} {1e6 / rate:8.2f} {rate:10.0f}")
    print(f"\n{'records-heavy message':42} {'bytes':>8} {'msgs/s':>10} {'MB/s':>8}")
    for label, key, version, response, data in [
        ("Produce v9 request, 1 x 1 KB", 0, 9, False, produce(9, 1024, 1)),
        ("Produce v9 request, 1 x 100 KB", 0, 9, False, produce(9, 102400, 1)),
        ("Produce v2 request (legacy), 1 x 100 KB", 0, 2, False, produce(2, 102400, 1)),
        ("Produce v9 request, 8 x 100 KB", 0, 9, False, produce(9, 102400, 8)),
        ("Fetch v12 response, 1 x 1 KB", 1, 12, True, fetch(12, 1024, 1)),
        ("Fetch v12 response, 1 x 100 KB", 1, 12, True, fetch(12, 102400, 1)),
        ("Fetch v4 response (legacy), 1 x 100 KB", 1, 4, True, fetch(4, 102400, 1)),
        ("Fetch v16 response, 8 x 100 KB", 1, 16, True, fetch(16, 102400, 8)),
    ]:
        decode = decode_response if response else decode_request
        rate = measure(lambda b: decode(key, version, b), data)
        print(f"{label:42} {len(data):8d} {rate:10.0f} {rate * len(data) / 1e6:8.0f}")
    compiled = native.extension("kafkatap.dissect.kafka._bodies")
    if compiled is not None:
        print(f"\n{'body read by the dissector (JSON included)':42} {'bytes':>8} {'Python µs':>10} {'compiled µs':>12}")
        for label, key, version, response, data in small() + [
                ("Produce v9 request, 1 x 1 KB", 0, 9, False, produce(9, 1024, 1)),
                ("Fetch v12 response, 1 x 1 KB", 1, 12, True, fetch(12, 1024, 1))]:
            if response:
                head = b"\x00\x00\x00\x07" + (b"\x00" if response_header_version(key, version) == 1 else b"")
                args = (key, version, head + data)
            else:
                args = (key, version, data, 0)
            name = "read_response" if response else "read_request"
            pure, fast = (measure(lambda a, f=getattr(m, name): f(*a), args) for m in (bodies, compiled))
            print(f"{label:42} {len(data):8d} {1e6 / pure:10.2f} {1e6 / fast:12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

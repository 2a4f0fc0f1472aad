"""Measure kio 0.6.5 (native reader, Kafka 4.x schemas) against kafkatap's own codec: speed, leniency, coverage.

    python benchmarks/kio_compare.py

Why this exists: it is the evidence behind writing our own codec instead of wrapping kio (see docs/performance.md).
The same bytes (built with our encoder) are decoded by both; "kio+dict" adds the conversion to the plain dicts the
dissector contract needs (kio returns frozen dataclasses with uuid.UUID objects and defaults for absent tags).
"""

from __future__ import annotations

import dataclasses
import uuid as uuidlib


from kio.index import load_request_schema, load_response_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.protocol import api_versions, decode_request, decode_response, encode_request, encode_response

from codec_bench import measure as rate  # a sibling script: Python puts a script's folder first on its path

TOPIC_ID = "AAECAwQFBgcICQoLDA0ODw"


def produce_request(payload: int) -> tuple[int, int, bool, bytes]:
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
        {"name": "orders", "partition_data": [{"index": 0, "records": b"\x01" * payload}]}]}
    return 0, 9, False, encode_request(0, 9, body)


def fetch_response(payload: int) -> tuple[int, int, bool, bytes]:
    body = {"throttle_time_ms": 0, "error_code": 0, "session_id": 1, "responses": [
        {"topic": "orders", "partitions": [
            {"partition_index": p, "error_code": 0, "high_watermark": 1000, "last_stable_offset": 1000,
             "log_start_offset": 0, "aborted_transactions": [], "preferred_read_replica": -1,
             "records": b"\x02" * payload} for p in range(1)]}]}
    return 1, 12, True, encode_response(1, 12, body)


def metadata_response() -> tuple[int, int, bool, bytes]:
    body = {"throttle_time_ms": 0, "brokers": [{"node_id": n, "host": f"broker{n}", "port": 9092, "rack": None}
                                               for n in range(3)],
            "cluster_id": "cluster", "controller_id": 1, "topics": [
                {"error_code": 0, "name": f"topic-{t}", "topic_id": TOPIC_ID, "is_internal": False, "partitions": [
                    {"error_code": 0, "partition_index": p, "leader_id": p % 3, "leader_epoch": 0,
                     "replica_nodes": [0, 1, 2], "isr_nodes": [0, 1, 2], "offline_replicas": []}
                    for p in range(3)], "topic_authorized_operations": -2147483648} for t in range(10)]}
    return 3, 12, True, encode_response(3, 12, body)


def metadata_request() -> tuple[int, int, bool, bytes]:
    body = {"topics": [{"topic_id": "AAAAAAAAAAAAAAAAAAAAAA", "name": "orders"}], "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": False}
    return 3, 12, False, encode_request(3, 12, body)


def heartbeat_request() -> tuple[int, int, bool, bytes]:
    body = {"group_id": "my-group", "generation_id": 5, "member_id": "consumer-1-0123456789abcdef",
            "group_instance_id": None}
    return 12, 4, False, encode_request(12, 4, body)


def to_plain(value):
    """What kio's output must become to meet the contract: dicts, str uuids."""
    if dataclasses.is_dataclass(value):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, uuidlib.UUID):
        return value.bytes
    return value


def kio_reader(api_key: int, version: int, response: bool):
    schema = (load_response_schema if response else load_request_schema)(api_key, version)
    return entity_reader(schema)


def speed() -> None:
    cases = [("Heartbeat v4 request", heartbeat_request()), ("Metadata v12 request", metadata_request()),
             ("Metadata v12 response (10 topics x 3)", metadata_response()),
             ("Produce v9 request 1 KB", produce_request(1024)), ("Produce v9 request 100 KB", produce_request(102400)),
             ("Fetch v12 response 1 KB", fetch_response(1024)), ("Fetch v12 response 100 KB", fetch_response(102400))]
    print(f"{'message':40} {'bytes':>7} {'kio us':>8} {'kio+dict us':>12} {'kafkatap us':>12}")
    for label, (key, version, response, data) in cases:
        reader = kio_reader(key, version, response)
        ours = decode_response if response else decode_request
        t_kio = 1e6 / rate(lambda b: reader(b, 0), data)
        t_kio_dict = 1e6 / rate(lambda b: to_plain(reader(b, 0)[0]), data)
        t_ours = 1e6 / rate(lambda b: ours(key, version, b), data)
        print(f"{label:40} {len(data):7d} {t_kio:8.2f} {t_kio_dict:12.2f} {t_ours:12.2f}")


def outcome(fn) -> str:
    try:
        fn()
        return "accepted"
    except DecodeError as exc:
        return f"DecodeError({exc.reason}, offset {exc.offset})"
    except Exception as exc:  # noqa: BLE001 - the point is to see what kio raises
        return f"{type(exc).__name__}: {str(exc)[:60]}"


def leniency() -> None:
    key, version, response, data = metadata_response()
    reader = kio_reader(key, version, response)
    accepted = sum(outcome(lambda: reader(data[:i], 0)) == "accepted" for i in range(len(data)))
    print(f"\ntruncated Metadata v12 response at every offset ({len(data)} prefixes): kio accepted {accepted}; "
          f"first failure: {outcome(lambda: reader(data[:len(data) // 2], 0))}")
    print(f"  kafkatap: {outcome(lambda: decode_response(key, version, data[:len(data) // 2]))}")
    key, version, response, data = heartbeat_request()
    reader = kio_reader(key, version, response)
    bad_utf8 = data[:2] + b"\xff" + data[3:]
    trailing = data + b"\x00junk"
    absurd = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x07]) + data[10:]
    unknown_tag = data[:-1] + b"\x01\x05\x02hi"
    for label, blob in (("bad UTF-8 in group_id", bad_utf8), ("5 trailing bytes", trailing),
                        ("group_id length 2^31-2", absurd), ("unknown tagged field 5", unknown_tag)):
        kio_out = outcome(lambda: reader(blob, 0))
        if kio_out == "accepted":
            entity, size = reader(blob, 0)
            kio_out = f"accepted, consumed {size} of {len(blob)}"
        ours = outcome(lambda: decode_request(key, version, blob))
        if ours == "accepted":
            obj, end = decode_request(key, version, blob)
            ours = f"accepted, consumed {end} of {len(blob)}" + (
                f", kept {obj['_unknown_tagged_fields']}" if "_unknown_tagged_fields" in obj else "")
        print(f"  {label:26} kio: {kio_out:50} kafkatap: {ours}")


def coverage() -> None:
    kio_pairs = {(key, v) for key, name in api_key_map.items() for v in schema_name_map.get(name, {})}
    ours = {(key, v) for key in range(95) for v in (api_versions(key) or ())}
    missing = sorted(ours - kio_pairs)
    by_api: dict[int, list[int]] = {}
    for key, v in missing:
        by_api.setdefault(key, []).append(v)
    print(f"\ncoverage: kio {len(kio_pairs)} (api_key, version) pairs, kafkatap {len(ours)}; "
          f"{len(missing)} versions only kafkatap decodes, e.g. "
          + ", ".join(f"{key}:v{min(vs)}-{max(vs)}" for key, vs in list(by_api.items())[:8]))


if __name__ == "__main__":
    speed()
    leniency()
    coverage()

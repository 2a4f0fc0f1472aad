"""The small lookups of the codec's public interface: names, versions, header versions, errors, JSON."""

from __future__ import annotations

import json

from kafkatap.dissect.protocol import (
    api_name,
    api_versions,
    decode_request_header,
    decode_response_header,
    encode_request_header,
    encode_response_header,
    error_name,
    is_known,
    request_header_version,
    response_header_version,
    to_json,
)


def test_api_names_and_versions() -> None:
    assert api_name(0) == "Produce" and api_name(18) == "ApiVersions" and api_name(94) is not None
    assert api_name(95) is None and api_versions(95) is None and api_name(-1) is None
    assert api_versions(0) == range(0, 14)        # v0-2 from the legacy schemas, v3-13 from trunk
    assert api_versions(1) == range(0, 19)
    assert api_versions(4) == range(0, 8)         # LeaderAndIsr: gone from trunk, still on old wires
    assert is_known(1, 0) and is_known(0, 13) and not is_known(0, 14) and not is_known(200, 0)


def test_header_versions() -> None:
    assert request_header_version(7, 0) == 0      # ControlledShutdown v0 predates client_id
    assert request_header_version(7, 1) == 1
    assert request_header_version(0, 8) == 1 and request_header_version(0, 9) == 2
    assert request_header_version(999, 3) == 1    # unknown: the v1 layout
    assert response_header_version(18, 3) == 0   # ApiVersions always v0
    assert response_header_version(0, 9) == 1 and response_header_version(0, 8) == 0


def test_error_names() -> None:
    assert error_name(0) == "NONE"
    assert error_name(-1) == "UNKNOWN_SERVER_ERROR"
    assert error_name(3) == "UNKNOWN_TOPIC_OR_PARTITION"
    assert error_name(4242) == "UNKNOWN_ERROR_4242"


def test_request_header_round_trip() -> None:
    for api_key, version, size in ((0, 8, 8 + 2 + 7), (0, 9, 8 + 2 + 7 + 1), (7, 0, 8)):
        header = {"api_key": api_key, "api_version": version, "correlation_id": 42,
                  "client_id": None if (api_key, version) == (7, 0) else "rdkafka"}
        raw = encode_request_header(header)
        assert len(raw) == size
        assert decode_request_header(raw) == (header, size)
    raw = encode_request_header({"api_key": 3, "api_version": 12, "correlation_id": 1, "client_id": None})
    assert raw[8:10] == b"\xff\xff"               # null client_id stays an int16 -1 even in header v2
    assert decode_request_header(raw)[0]["client_id"] is None
    tagged = raw[:-1] + b"\x01\x07\x01z"          # unknown tagged field 7 in header v2
    assert decode_request_header(tagged)[0]["_unknown_tagged_fields"] == {7: b"z"}


def test_response_header_round_trip() -> None:
    assert decode_response_header(18, 3, encode_response_header(18, 3, {"correlation_id": 9})) == (
        {"correlation_id": 9}, 4)
    assert decode_response_header(0, 9, encode_response_header(0, 9, {"correlation_id": 9})) == (
        {"correlation_id": 9}, 5)


def test_to_json_is_faithful() -> None:
    obj = {"records": b"\x00\xff", "name": "é", "_unknown_tagged_fields": {5: b"hi"}, "n": None, "xs": [1, 2.5]}
    back = json.loads(to_json(obj))
    assert back == {"records": {"$bytes": "AP8="}, "name": "é", "_unknown_tagged_fields": {"5": {"$bytes": "aGk="}},
                    "n": None, "xs": [1, 2.5]}
    assert json.loads(to_json({"x": float("nan")})) == {"x": {"$float": "nan"}}


def test_encoding_fills_schema_defaults() -> None:
    from kafkatap.dissect.protocol import decode_request, decode_response, encode_request, encode_response

    reply = encode_response(0, 2, {"responses": [{"name": "t", "partition_responses": [{"index": 0}]}]})
    partition = decode_response(0, 2, reply)[0]["responses"][0]["partition_responses"][0]
    assert partition == {"index": 0, "error_code": 0, "base_offset": 0, "log_append_time_ms": -1}
    body = decode_request(0, 13, encode_request(0, 13, {"topic_data": [{"partition_data": []}]}))[0]
    assert body["transactional_id"] is None and body["topic_data"][0]["topic_id"] == "AAAAAAAAAAAAAAAAAAAAAA"
    assert decode_request(0, 13, memoryview(encode_request(0, 13, body)))[0] == body

"""Malformed input: only DecodeError, with the reason and the offset of the field at fault, and no allocation
driven by an untrusted length."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.protocol import (
    decode_request,
    decode_request_header,
    decode_response,
    decode_response_header,
    encode_request,
    encode_response,
)

# Heartbeat v0 request: group_id (int16 string) at 0, generation_id (int32) at 2+len, member_id (int16 string).
HEARTBEAT_V0 = encode_request(12, 0, {"group_id": "grp", "generation_id": 7, "member_id": "m-1"})
# Metadata v12 request (flexible): topics compact array at 0, then bools, then the tagged section.
METADATA_V12 = encode_request(3, 12, {"topics": [{"topic_id": "AAAAAAAAAAAAAAAAAAAAAA", "name": "orders"}],
                                      "allow_auto_topic_creation": True})


def error(fn, *args) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        fn(*args)
    return info.value


def test_truncation_points_at_the_field() -> None:
    assert HEARTBEAT_V0[:5] == b"\x00\x03grp"
    e = error(decode_request, 12, 0, HEARTBEAT_V0[:7])        # generation_id cut after 2 of its 4 bytes
    assert (e.reason, e.offset) == ("truncated", 5)
    e = error(decode_request, 12, 0, HEARTBEAT_V0[:10])       # member_id length prefix cut
    assert (e.reason, e.offset) == ("truncated", 9)
    e = error(decode_request, 12, 0, HEARTBEAT_V0[:12])       # member_id says 3 bytes, 1 left
    assert (e.reason, e.offset) == ("length_too_large", 9)
    e = error(decode_request, 12, 0, b"")
    assert (e.reason, e.offset) == ("truncated", 0)


def test_offsets_are_absolute_when_decoding_from_pos() -> None:
    framed = b"\xaa" * 10 + HEARTBEAT_V0
    assert decode_request(12, 0, framed, 10) == decode_request(12, 0, HEARTBEAT_V0)[:1] + (len(framed),)
    e = error(decode_request, 12, 0, framed[:17], 10)
    assert (e.reason, e.offset) == ("truncated", 15)


@pytest.mark.parametrize("body, reason, offset", [
    (b"\x7f\xff" + b"x" * 20, "length_too_large", 0),                  # string length 32767
    (b"\xff\xfe", "negative_length", 0),                                # string length -2
    (b"\xff\xff" + b"\x00" * 10, "null_not_allowed", 0),                # null group_id (not nullable)
    (b"\x00\x02\xff\xfe\x00\x00\x00\x07\x00\x00", "bad_utf8", 2),       # invalid UTF-8 in group_id
])
def test_bad_strings(body: bytes, reason: str, offset: int) -> None:
    e = error(decode_request, 12, 0, body)
    assert (e.reason, e.offset) == (reason, offset)


def test_absurd_array_count_allocates_nothing() -> None:
    # Metadata v0 request: topics is an int32-counted array; 2^31-1 elements claimed, 4 bytes present
    body = b"\x7f\xff\xff\xff" + b"\x00\x01a\x00"
    tracemalloc.start()
    e = error(decode_request, 3, 0, body)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert (e.reason, e.offset) == ("length_too_large", 0)
    assert peak < 1 << 20
    e = error(decode_request, 3, 0, b"\xff\xff\xff\xfe")          # count -2
    assert (e.reason, e.offset) == ("negative_length", 0)
    assert decode_request(3, 1, b"\xff\xff\xff\xff") == ({"topics": None}, 4)   # -1: null, nullable from v1
    e = error(decode_request, 3, 0, b"\xff\xff\xff\xff")          # but not in v0
    assert e.reason == "null_not_allowed"


def test_absurd_compact_lengths_and_bad_varints() -> None:
    e = error(decode_request, 3, 12, b"\xff\xff\xff\xff\x0f" + METADATA_V12[1:])   # 2^32-1 topics
    assert (e.reason, e.offset) == ("length_too_large", 0)
    e = error(decode_request, 3, 12, b"\xff\xff\xff\xff\xff\x01")                   # 6-byte varint
    assert (e.reason, e.offset) == ("bad_varint", 0)
    e = error(decode_request, 3, 12, b"\x80")                                        # varint cut short
    assert e.reason == "truncated"


def test_tagged_fields() -> None:
    base = encode_request(12, 4, {"group_id": "g", "generation_id": 1, "member_id": "m"})
    assert base[-1] == 0
    with_unknown = base[:-1] + b"\x02\x09\x01z\x0a\x00"                  # tags 9 and 10, unknown: kept raw
    assert decode_request(12, 4, with_unknown)[0]["_unknown_tagged_fields"] == {9: b"z", 10: b""}
    e = error(decode_request, 12, 4, base[:-1] + b"\x01\x09\x05z")        # size 5, 1 byte left
    assert e.reason == "length_too_large" and e.offset == len(base) - 1 + 1
    e = error(decode_request, 12, 4, base[:-1] + b"\x40")                  # 64 tags claimed, none there
    assert e.reason == "length_too_large"
    # Produce v10 response: node_endpoints is tag 0 at the top level; a size that disagrees with its content
    reply = encode_response(0, 10, {"responses": [], "throttle_time_ms": 0, "node_endpoints": []})
    assert reply.endswith(b"\x01\x00\x01\x01")
    e = error(decode_response, 0, 10, reply[:-3] + b"\x00\x02\x01\x00")   # size 2, value takes 1
    assert e.reason == "bad_tagged_field"


def test_nullable_struct_marker() -> None:
    # ConsumerGroupHeartbeat v0 response: Assignment is a nullable struct (int8 -1 = null, 1 = present)
    fields = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m", "member_epoch": 1,
              "heartbeat_interval_ms": 500}
    null = encode_response(68, 0, {**fields, "assignment": None})
    present = encode_response(68, 0, {**fields, "assignment": {"topic_partitions": []}})
    assert decode_response(68, 0, null)[0]["assignment"] is None
    assert decode_response(68, 0, present)[0]["assignment"] == {"topic_partitions": []}
    assert len(present) == len(null) + 2                      # marker 1 plus empty array plus empty tags vs -1


def test_unknown_api_and_version_carry_the_size() -> None:
    e = error(decode_request, 999, 0, b"abc")
    assert (e.reason, e.offset) == ("unknown_api", 0) and "3 bytes" in e.detail
    e = error(decode_response, 0, 99, b"abcdef", 2)
    assert (e.reason, e.offset) == ("unknown_version", 2) and "4 bytes" in e.detail


def test_headers() -> None:
    for cut in range(10):
        error(decode_request_header, b"\x00\x03\x00\x0c\x00\x00\x00\x01\x00\x03abc"[:cut])
    assert decode_request_header(b"\x00\x07\x00\x00\x00\x00\x00\x05")[0]["client_id"] is None   # header v0
    e = error(decode_request_header, b"\x00\x03\x00\x0c\x00\x00\x00\x01\xff\xfe")
    assert (e.reason, e.offset) == ("negative_length", 8)
    e = error(decode_request_header, b"\x00\x03\x00\x0c\x00\x00\x00\x01\x00\x05ab")
    assert (e.reason, e.offset) == ("length_too_large", 8)
    e = error(decode_response_header, 0, 9, b"\x00\x00\x00\x01")   # flexible: tagged section missing
    assert (e.reason, e.offset) == ("truncated", 4)
    # an unknown api key still has a readable v1 header
    assert decode_request_header(b"\x03\xe7\x00\x00\x00\x00\x00\x09\x00\x01x") == (
        {"api_key": 999, "api_version": 0, "correlation_id": 9, "client_id": "x"}, 11)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(key=st.sampled_from([0, 1, 3, 8, 9, 11, 12, 14, 18, 22, 68]), version=st.integers(0, 18),
       response=st.booleans(), blob=st.binary(max_size=64))
def test_random_bytes_only_raise_decode_error(key: int, version: int, response: bool, blob: bytes) -> None:
    decode = decode_response if response else decode_request
    try:
        obj, end = decode(key, version, blob)
    except DecodeError as exc:
        assert 0 <= exc.offset <= len(blob)
    else:
        assert 0 <= end <= len(blob) and isinstance(obj, dict)

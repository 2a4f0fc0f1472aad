"""The classic consumer protocol (ConsumerProtocolSubscription / ConsumerProtocolAssignment inside JoinGroup and
SyncGroup): real clients' bytes, every version round-tripped and checked against the table interpreter, and damaged
bytes raising DecodeError only."""

from __future__ import annotations

import base64
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.protocol import embedded, interpret
from kafkatap.dissect.protocol.embedded import ASSIGNMENT, NEWEST, SUBSCRIPTION
from tests.support.strategies import struct_of

# Bytes as the samples' clients sent them (base64 as in the frames table's JSON).
REAL = [
    # kafka-python 3.0 against Tansu (samples/classic_group.pcapng): JoinGroup v7 metadata, SyncGroup v5 assignments
    (SUBSCRIPTION, "AAAAAAABAAZjbGlja3MAAAAA", {"version": 0, "topics": ["clicks"], "user_data": b""}),
    (ASSIGNMENT, "AAAAAAABAAZjbGlja3MAAAAEAAAAAAAAAAEAAAACAAAAAwAAAAA=",
     {"version": 0, "assigned_partitions": [{"topic": "clicks", "partitions": [0, 1, 2, 3]}], "user_data": b""}),
    (ASSIGNMENT, "AAAAAAABAAZjbGlja3MAAAACAAAAAgAAAAMAAAAA",
     {"version": 0, "assigned_partitions": [{"topic": "clicks", "partitions": [2, 3]}], "user_data": b""}),
    # librdkafka 2.16 (samples/produce_consume.pcapng): JoinGroup v5 metadata v3, SyncGroup v3 assignment
    (SUBSCRIPTION, "AAMAAAACAAZvcmRlcnMACHBheW1lbnRzAAAAAAAAAAD/////AAA=",
     {"version": 3, "topics": ["orders", "payments"], "user_data": b"", "owned_partitions": [],
      "generation_id": -1, "rack_id": ""}),
    (ASSIGNMENT, "AAAAAAACAAhwYXltZW50cwAAAAIAAAAAAAAAAQAGb3JkZXJzAAAAAwAAAAAAAAABAAAAAgAAAAA=",
     {"version": 0, "assigned_partitions": [{"topic": "payments", "partitions": [0, 1]},
                                            {"topic": "orders", "partitions": [0, 1, 2]}], "user_data": b""}),
    # Java client 3.9 layout (samples/synthetic_classic_rebalance.pcapng): null user data
    (ASSIGNMENT, "AAAAAAABAAZldmVudHMAAAABAAAAAf////8=",
     {"version": 0, "assigned_partitions": [{"topic": "events", "partitions": [1]}], "user_data": None}),
]


@pytest.mark.parametrize("kind, b64, expected", REAL, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(REAL)])
def test_real_clients_bytes(kind: str, b64: str, expected: dict) -> None:
    raw = base64.b64decode(b64)
    assert embedded.decode(kind, raw) == expected
    assert embedded.encode(kind, expected) == raw
    for cut in range(len(raw)):  # every truncation is a DecodeError, never anything else
        with pytest.raises(DecodeError) as info:
            embedded.decode(kind, raw[:cut])
        assert info.value.reason in ("truncated", "length_too_large") and 0 <= info.value.offset <= cut


def test_public_shortcuts() -> None:
    kind, b64, expected = REAL[1]
    assert embedded.decode_assignment(base64.b64decode(b64)) == expected
    kind, b64, expected = REAL[0]
    assert embedded.decode_subscription(base64.b64decode(b64)) == expected


CASES = [(kind, v) for kind in (ASSIGNMENT, SUBSCRIPTION) for v in range(NEWEST[kind] + 1)]


def test_schemas_define_versions_0_to_3() -> None:
    assert NEWEST == {ASSIGNMENT: 3, SUBSCRIPTION: 3}


@pytest.mark.parametrize("kind, version", CASES, ids=[f"{k}-v{v}" for k, v in CASES])
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.data())
def test_round_trip_every_version(kind: str, version: int, data: st.DataObject) -> None:
    fields = embedded.fields(kind, version)
    obj = {"version": version, **data.draw(struct_of(fields, False))}
    raw = embedded.encode(kind, obj)
    assert embedded.decode(kind, raw) == obj
    assert interpret.decode_struct(fields, False, raw, 2) == ({k: v for k, v in obj.items() if k != "version"},
                                                              len(raw))
    with pytest.raises(DecodeError) as info:
        embedded.decode(kind, raw + b"\x00")
    assert info.value.reason == "trailing_bytes" and info.value.offset == len(raw)
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(DecodeError):
        embedded.decode(kind, raw[:cut])


@pytest.mark.parametrize("kind, version", CASES, ids=[f"{k}-v{v}" for k, v in CASES])
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.data())
def test_damaged_bytes_agree_with_the_interpreter(kind: str, version: int, data: st.DataObject) -> None:
    """Corrupted bytes give a dict or a DecodeError (same reason as the table interpreter), nothing else."""
    fields = embedded.fields(kind, version)
    raw = bytearray(embedded.encode(kind, {"version": version, **data.draw(struct_of(fields, False))}))
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(2, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        decoded = embedded.decode(kind, bytes(raw))
    except DecodeError as exc:
        assert 0 <= exc.offset <= len(raw)
        if exc.reason != "trailing_bytes":
            with pytest.raises(DecodeError) as info:
                interpret.decode_struct(fields, False, bytes(raw), 2)
            assert info.value.reason == exc.reason
    else:
        body = {k: v for k, v in decoded.items() if k != "version"}
        assert interpret.decode_struct(fields, False, bytes(raw), 2) == (body, len(raw))


def test_newer_versions_are_read_with_the_newest_layout() -> None:
    """Kafka's ConsumerProtocol: a newer version may only append fields; they are left unread, not an error."""
    v3 = {"version": 3, "topics": ["t"], "user_data": None, "owned_partitions": [{"topic": "t", "partitions": [1]}],
          "generation_id": 7, "rack_id": "r1"}
    raw = embedded.encode(SUBSCRIPTION, v3)
    newer = struct.pack(">h", 9) + raw[2:] + b"\x00\x00\x00\x2a"  # a v9 field after the v3 ones
    assert embedded.decode(SUBSCRIPTION, newer) == {**v3, "version": 9}
    assignment = embedded.encode(ASSIGNMENT, {"version": 3, "assigned_partitions": [], "user_data": b"u"})
    assert embedded.decode(ASSIGNMENT, struct.pack(">h", 4) + assignment[2:])["user_data"] == b"u"


def test_bad_versions_and_values() -> None:
    with pytest.raises(DecodeError) as info:
        embedded.decode(ASSIGNMENT, b"\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff")
    assert info.value.reason == "unknown_version" and info.value.offset == 0
    with pytest.raises(DecodeError) as info:
        embedded.decode(SUBSCRIPTION, b"\x00")
    assert info.value.reason == "truncated"
    with pytest.raises(DecodeError) as info:  # a topic count larger than the bytes left
        embedded.decode(ASSIGNMENT, b"\x00\x00\x7f\xff\xff\xff")
    assert info.value.reason == "length_too_large" and info.value.offset == 2
    with pytest.raises(DecodeError) as info:
        embedded.encode(ASSIGNMENT, {"version": 4})
    assert info.value.reason == "bad_value"

"""An outside oracle: kafka-python's hand-written protocol structs (kafka.protocol.old), written years before and
independently of Kafka's JSON schemas, encode random messages; our codec must decode them to the same values.

This covers the legacy versions (Produce v0-2, Fetch v0-3, OffsetCommit v0-1, ...) that only message-legacy/ defines.
Values are compared by position (kafka-python's field names differ in places: `topics` vs `topic_data`).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import uuid as uuidlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatap.dissect.protocol import decode_request, decode_request_header, decode_response, is_known, wire

old = pytest.importorskip("kafka.protocol.old")
types = importlib.import_module("kafka.protocol.old.types")
api = importlib.import_module("kafka.protocol.old.api")

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=5)


def _classes() -> list[type]:
    found = {}
    for info in pkgutil.iter_modules(old.__path__):
        module = importlib.import_module(f"kafka.protocol.old.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (issubclass(cls, (api.Request, api.Response)) and isinstance(getattr(cls, "API_KEY", None), int)
                    and isinstance(getattr(cls, "SCHEMA", None), types.Schema)):
                found[cls.__name__] = cls
    return [found[name] for name in sorted(found)]


def strategy(t) -> st.SearchStrategy:
    """Random values for one kafka-python type (positional tuples for schemas)."""
    if isinstance(t, types.Schema):
        return st.tuples(*[strategy(f) for f in t.fields if f is not types.TaggedFields])
    if isinstance(t, types.Array):
        return st.lists(strategy(t.array_of), max_size=3)
    if isinstance(t, types.String):
        return TEXT
    ints = {types.Int8: 7, types.Int16: 15, types.Int32: 31, types.Int64: 63}
    if t in ints:
        return st.integers(-(1 << ints[t]), (1 << ints[t]) - 1)
    if t in (types.Bytes, types.CompactBytes):
        return st.binary(max_size=6)
    if t is types.Boolean:
        return st.booleans()
    if t is types.Float64:
        return st.floats(allow_nan=False)
    if t is types.UUID:
        return st.uuids()
    if t is types.BitField:
        return st.sets(st.integers(0, 30), max_size=3)
    raise NotImplementedError(t)


def leaves(t, value, out: list) -> list:
    """kafka-python's value as a token stream: leaves in order, arrays as ("[", len) then their elements.

    Structs leave no token, so a struct nested for grouping (CreatePartitions) and an array of one-field structs
    (Kafka's schema) vs an array of scalars (kafka-python's Metadata v0) compare equal, as they are on the wire.
    """
    if isinstance(t, types.Schema):
        for f, v in zip([f for f in t.fields if f is not types.TaggedFields], value):
            leaves(f, v, out)
    elif isinstance(t, types.Array):
        out.append(("[", len(value)))
        for v in value:
            leaves(t.array_of, v, out)
    elif t is types.UUID:
        out.append(wire.uuid_str((value or uuidlib.UUID(int=0)).bytes))
    elif t is types.BitField:
        out.append(int.from_bytes(types.BitField.encode(value), "big", signed=True))
    else:
        out.append(value)
    return out


def our_leaves(value, out: list) -> list:
    """The same token stream for our decoded dicts (unknown tagged fields are not part of the positional data)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k != "_unknown_tagged_fields":
                our_leaves(v, out)
    elif isinstance(value, list):
        out.append(("[", len(value)))
        for v in value:
            our_leaves(v, out)
    else:
        out.append(value)
    return out


# kafka-python's own schema disagrees with Kafka's here; these are its bugs, not ours.
KAFKA_PYTHON_BUGS = {
    "DescribeAclsRequest_v2": "reuses the v1 schema, but v2 is flexible (compact strings, tagged fields)",
    "DescribeAclsResponse_v2": "reuses the v1 schema, but v2 is flexible (compact strings, tagged fields)",
    "DescribeLogDirsRequest_v0": "declares partitions as one int32; Kafka's schema has []int32",
}


CLASSES = [c for c in _classes() if is_known(c.API_KEY, c.API_VERSION) and c.__name__ not in KAFKA_PYTHON_BUGS]


def test_oracle_covers_legacy_versions() -> None:
    covered = {(c.API_KEY, c.API_VERSION) for c in CLASSES}
    assert {(0, 0), (0, 1), (0, 2), (1, 0), (1, 3), (8, 0), (3, 0), (18, 0)} <= covered
    assert len(CLASSES) > 100


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.data())
def test_decodes_kafka_python_encoding(cls: type, data: st.DataObject) -> None:
    value = data.draw(strategy(cls.SCHEMA))
    message = cls(*value)
    raw = message.encode()
    decode = decode_request if cls.is_request() else decode_response
    decoded, end = decode(cls.API_KEY, cls.API_VERSION, raw)
    assert end == len(raw)
    assert our_leaves(decoded, []) == leaves(cls.SCHEMA, value, [])


def test_request_header_from_kafka_python() -> None:
    from kafka.protocol.old.metadata import MetadataRequest_v0

    request = MetadataRequest_v0(["orders", "payments"])
    request.with_header(correlation_id=1234, client_id="kafka-python-golden")
    raw = request.encode(header=True)
    header, pos = decode_request_header(raw)
    assert header == {"api_key": 3, "api_version": 0, "correlation_id": 1234, "client_id": "kafka-python-golden"}
    body, end = decode_request(3, 0, raw, pos)
    assert body == {"topics": [{"name": "orders"}, {"name": "payments"}]} and end == len(raw)

"""Hypothesis strategies drawing Kafka message bodies from the codec's generated tables (every field of a version,
tagged fields sometimes, unknown tagged fields sometimes)."""

from __future__ import annotations

from functools import lru_cache

from hypothesis import strategies as st

from kafkatap.dissect.protocol import registry, wire
from kafkatap.dissect.protocol.table import SCALARS, Field

INT_RANGES = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}
UNKNOWN_TAGS = st.dictionaries(st.integers(200, 300), st.binary(max_size=4), min_size=1, max_size=2)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)


def scalar(type_: str) -> st.SearchStrategy:
    if type_ in INT_RANGES:
        bits = INT_RANGES[type_]
        return st.integers(-(1 << bits), (1 << bits) - 1)
    return {
        "bool": st.booleans(),
        "uint16": st.integers(0, 0xFFFF),
        "uint32": st.integers(0, 0xFFFFFFFF),
        "float64": st.floats(allow_nan=False),
        "uuid": st.binary(min_size=16, max_size=16).map(wire.uuid_str),
    }[type_]


def field_value(f: Field) -> st.SearchStrategy:
    if f.kind == "scalar":
        strat = scalar(f.type)
    elif f.kind == "string":
        strat = TEXT
    elif f.kind in ("bytes", "records"):
        strat = st.binary(max_size=8)
    elif f.kind == "struct":
        strat = struct_of(f.fields, f.flexible)
    else:
        kind = "struct" if f.type == "struct" else ("scalar" if f.type in SCALARS else f.type)
        elem = field_value(Field(f.name, kind, f.type, False, f.flexible, None, ..., f.fields))
        strat = st.lists(elem, max_size=3)
    return st.one_of(st.none(), strat) if f.nullable else strat


def struct_of(fields: tuple[Field, ...], flexible: bool) -> st.SearchStrategy:
    """A dict with every required field and, sometimes, the tagged ones (and unknown tags when flexible)."""
    required = {f.name: field_value(f) for f in fields if f.tag is None}
    optional = {f.name: field_value(f) for f in fields if f.tag is not None}
    if flexible:
        optional["_unknown_tagged_fields"] = UNKNOWN_TAGS
    return st.fixed_dictionaries(required, optional=optional)


@lru_cache(maxsize=None)
def message(api_key: int, version: int, response: bool) -> st.SearchStrategy:
    """A request or response body of one api key and version."""
    fields, flexible = registry.body_fields(api_key, version, response)
    return struct_of(fields, flexible)

"""The in-memory form of the generated message tables, and per-version views of them.

The generated modules under `dissect/protocol/generated/` describe each field once with its version range (the way
Kafka's JSON schemas do); `fields_for(...)` turns that into the flat, ordered field list of one version, which is
what both the interpreter and the compiler walk.
"""

from __future__ import annotations

from typing import Any, NamedTuple

SCALARS = {
    "bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "float64": 8, "uuid": 16,
}
VARIABLE = ("string", "bytes", "records")
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
MAX_VERSION = 0x7FFF


def parse_versions(spec: str) -> tuple[tuple[int, int], ...]:
    """"0+", "3-8", "5", "none" or comma-joined pieces ("0-2,5+") -> inclusive (lo, hi) ranges."""
    if spec == "none":
        return ()
    ranges = []
    for piece in spec.split(","):
        if piece.endswith("+"):
            ranges.append((int(piece[:-1]), MAX_VERSION))
        elif "-" in piece:
            lo, hi = piece.split("-")
            ranges.append((int(lo), int(hi)))
        else:
            ranges.append((int(piece), int(piece)))
    return tuple(ranges)


def in_ranges(version: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(lo <= version <= hi for lo, hi in ranges)


class F(NamedTuple):
    """One schema field: snake_case name, Kafka type, the versions carrying it, and the rest of its schema entry.

    `type` is spelled as in the schema: a scalar ("int32"), "string"/"bytes"/"records", a struct type name
    ("Assignment") or an array of either ("[]int32", "[]TopicProduceData"); struct types carry their `fields`.
    """

    name: str
    type: str
    versions: str
    nullable: str = "none"
    tag: int | None = None
    default: Any = ...
    fields: tuple["F", ...] = ()
    flexible: str | None = None  # field-level override of the message's flexibleVersions (RequestHeader.ClientId)


class Message(NamedTuple):
    """A request, response or header schema: its name, valid and flexible version specs, and its fields."""

    name: str
    valid: str
    flexible: str
    fields: tuple[F, ...]


class Field(NamedTuple):
    """A field as one version sees it: what the codec needs, with version ranges resolved."""

    name: str
    kind: str          # "scalar" | "string" | "bytes" | "records" | "struct" | "array"
    type: str          # scalar type, or for arrays the element type ("int32", "string", "struct")
    nullable: bool
    flexible: bool     # compact encodings for this field
    tag: int | None
    default: Any
    fields: tuple["Field", ...]  # struct / array-of-struct members (untagged first, as on the wire, tagged too)


def _kind(type_: str) -> tuple[str, str]:
    if type_.startswith("[]"):
        elem = type_[2:]
        return "array", elem if elem in SCALARS or elem in VARIABLE else "struct"
    if type_ in SCALARS:
        return "scalar", type_
    if type_ in VARIABLE:
        return type_, type_
    return "struct", "struct"


def implicit_default(f: Field) -> Any:
    """The value Kafka uses for a field absent from a message (schema `default`, else the type's zero)."""
    if f.default is not ...:
        return f.default
    if f.kind == "scalar":
        return {"bool": False, "float64": 0.0, "uuid": ZERO_UUID}.get(f.type, 0)
    if f.kind == "string":
        return ""
    if f.kind == "bytes":
        return b""
    if f.kind == "records":
        return None
    if f.kind == "array":
        return []
    return ...  # struct: built from its members' defaults by the encoder


def fields_for(fields: tuple[F, ...], version: int, flexible: bool) -> tuple[Field, ...]:
    """The fields of one version in wire order (tagged ones keep their tag and are read from the tagged section)."""
    out = []
    for f in fields:
        if not in_ranges(version, parse_versions(f.versions)):
            continue
        kind, type_ = _kind(f.type)
        flex = flexible if f.flexible is None else in_ranges(version, parse_versions(f.flexible))
        children = fields_for(f.fields, version, flexible) if type_ == "struct" else ()
        out.append(Field(f.name, kind, type_, in_ranges(version, parse_versions(f.nullable)), flex,
                         f.tag if flexible else None, f.default, children))
    return tuple(out)


def message_versions(msg: Message) -> tuple[int, ...]:
    return tuple(v for lo, hi in parse_versions(msg.valid) for v in range(lo, hi + 1))


def is_flexible(msg: Message, version: int) -> bool:
    return in_ranges(version, parse_versions(msg.flexible))

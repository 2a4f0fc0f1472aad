"""Encoders built once per (api_key, version, direction) as a tree of closures over the version's field list.

Encoding is not on the dissector's hot path (tests, fixtures and tools use it), so closures are enough: the schema
is still walked only once, at build time.
"""

from __future__ import annotations

import struct
from typing import Any, Callable

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.protocol import wire
from kafkatap.dissect.protocol.compiler import FORMAT
from kafkatap.dissect.protocol.table import SCALARS, Field, implicit_default

Encoder = Callable[[bytearray, Any], None]


def _bad(what: str, value: Any, exc: Exception | None = None) -> DecodeError:
    return DecodeError("bad_value", 0, f"{what}: cannot encode {value!r}" + (f" ({exc})" if exc else ""))


def _scalar(type_: str, name: str) -> Encoder:
    pack = struct.Struct(">" + FORMAT[type_]).pack

    def write(out: bytearray, value: Any) -> None:
        try:
            out += pack(wire.uuid_bytes(value) if type_ == "uuid" else value)
        except (struct.error, TypeError) as exc:
            raise _bad(name, value, exc) from None
    return write


def _length(flexible: bool, wide: bool) -> Callable[[bytearray, int], None]:
    if flexible:
        return lambda out, n: out.extend(wire.write_uvarint(n + 1))
    pack = struct.Struct(">i" if wide else ">h").pack
    return lambda out, n: out.extend(pack(n))


def _variable(f: Field) -> Encoder:
    put_len = _length(f.flexible, wide=f.kind != "string")

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            if not f.nullable:
                raise _bad(f.name, value)
            put_len(out, -1)
            return
        raw = value.encode() if f.kind == "string" else bytes(value)
        if f.kind == "string" and len(raw) > 0x7FFF and not f.flexible:
            raise _bad(f.name, f"string of {len(raw)} bytes")
        put_len(out, len(raw))
        out += raw
    return write


def _array(f: Field) -> Encoder:
    put_len = _length(f.flexible, wide=True)
    if f.type == "struct":
        elem = _struct(f.fields, f.flexible)
    elif f.type in SCALARS:
        elem = _scalar(f.type, f.name)
    else:
        elem = _variable(Field(f.name, f.type, f.type, False, f.flexible, None, ..., ()))

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            if not f.nullable:
                raise _bad(f.name, value)
            put_len(out, -1)
            return
        put_len(out, len(value))
        for item in value:
            elem(out, item)
    return write


def _nullable_struct(f: Field) -> Encoder:
    body = _struct(f.fields, f.flexible)

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            out.append(0xFF)
        else:
            out.append(1)
            body(out, value)
    return write


def field_encoder(f: Field) -> Encoder:
    if f.kind == "scalar":
        return _scalar(f.type, f.name)
    if f.kind in ("string", "bytes", "records"):
        return _variable(f)
    if f.kind == "array":
        return _array(f)
    if f.nullable:
        return _nullable_struct(f)
    return _struct(f.fields, f.flexible)


def _default(f: Field) -> Any:
    value = implicit_default(f)
    return {} if value is ... else value


def _struct(fields: tuple[Field, ...], flexible: bool) -> Encoder:
    plain = [(f.name, _default(f), field_encoder(f)) for f in fields if f.tag is None]
    tagged = sorted((f.tag, f.name, field_encoder(f)) for f in fields if f.tag is not None)

    def write(out: bytearray, obj: dict) -> None:
        for name, default, enc in plain:
            enc(out, obj.get(name, default))
        if not flexible:
            return
        entries = {tag: (name, enc) for tag, name, enc in tagged if name in obj}
        unknown = obj.get("_unknown_tagged_fields") or {}
        out += wire.write_uvarint(len(entries) + len(unknown))
        for tag in sorted(set(entries) | set(unknown)):
            if tag in entries:
                name, enc = entries[tag]
                payload = bytearray()
                enc(payload, obj[name])
            else:
                payload = unknown[tag]
            out += wire.write_uvarint(tag)
            out += wire.write_uvarint(len(payload))
            out += payload
    return write


def compile_encoder(fields: tuple[Field, ...], flexible: bool) -> Encoder:
    """`encoder(out: bytearray, obj: dict)` for one message version."""
    return _struct(fields, flexible)

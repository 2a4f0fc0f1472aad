"""The slow, obvious table interpreter: the oracle the compiled decoders are tested against.

It walks the field list on every call and checks every bound explicitly, sharing no code with compiler.py beyond
the primitive helpers, so a bug in the code generator shows up as a disagreement.
"""

from __future__ import annotations

import struct

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.protocol import registry, wire
from kafkatap.dissect.protocol.table import SCALARS, Field

_FMT = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q",
        "float64": "d", "uuid": "16s"}


class _Reader:
    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf, self.pos = buf, pos

    def take(self, n: int) -> bytes:
        if n > len(self.buf) - self.pos:
            raise DecodeError("truncated", self.pos, f"{n} bytes needed, {len(self.buf) - self.pos} left")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def scalar(self, type_: str):
        value, = struct.unpack(">" + _FMT[type_], self.take(SCALARS[type_]))
        return wire.uuid_str(value) if type_ == "uuid" else value

    def uvarint(self) -> int:
        start, value, shift = self.pos, 0, 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7
            if shift >= 35:
                raise DecodeError("bad_varint", start)

    def length(self, f: Field, wide: bool) -> int | None:
        start = self.pos
        if f.flexible:
            n = self.uvarint() - 1
        else:
            n = self.scalar("int32" if wide else "int16")
        if n < -1:
            raise DecodeError("negative_length", start)
        if n == -1:
            if not f.nullable:
                raise DecodeError("null_not_allowed", start)
            return None
        if n > len(self.buf) - self.pos:
            raise DecodeError("length_too_large", start)
        return n


def _value(r: _Reader, f: Field):
    if f.kind == "scalar":
        return r.scalar(f.type)
    if f.kind in ("string", "bytes", "records"):
        n = r.length(f, wide=f.kind != "string")
        if n is None:
            return None
        raw = r.take(n)
        if f.kind != "string":
            return raw
        try:
            return raw.decode()
        except UnicodeDecodeError as exc:
            raise DecodeError("bad_utf8", r.pos - n + exc.start) from None
    if f.kind == "struct":
        if f.nullable and r.scalar("int8") < 0:
            return None
        return _struct(r, f.fields, f.flexible)
    n = r.length(f, wide=True)
    if n is None:
        return None
    kind = "struct" if f.type == "struct" else ("scalar" if f.type in SCALARS else f.type)
    elem = Field(f.name, kind, f.type, False, f.flexible, None, ..., f.fields)
    return [_value(r, elem) for _ in range(n)]


def _struct(r: _Reader, fields: tuple[Field, ...], flexible: bool) -> dict:
    obj = {f.name: _value(r, f) for f in fields if f.tag is None}
    if not flexible:
        return obj
    tagged = {f.tag: f for f in fields if f.tag is not None}
    count_at = r.pos
    count = r.uvarint()
    if count > len(r.buf) - r.pos:
        raise DecodeError("length_too_large", count_at)
    for _ in range(count):
        start = r.pos
        tag = r.uvarint()
        size = r.uvarint()
        if size > len(r.buf) - r.pos:
            raise DecodeError("length_too_large", start)
        f = tagged.get(tag)
        if f is None:
            obj.setdefault("_unknown_tagged_fields", {})[tag] = r.take(size)
            continue
        end = r.pos + size
        obj[f.name] = _value(r, f)
        if r.pos != end:
            raise DecodeError("bad_tagged_field", start)
    return obj


def decode(api_key: int, api_version: int, response: bool, buf: bytes, pos: int = 0) -> tuple[dict, int]:
    """Decode a body like decode_request/decode_response, interpreting the table field by field."""
    if not registry.is_known(api_key, api_version):
        raise DecodeError("unknown_api" if registry.api_name(api_key) is None else "unknown_version", pos)
    fields, flexible = registry.body_fields(api_key, api_version, response)
    return decode_struct(fields, flexible, buf, pos)


def decode_struct(fields: tuple[Field, ...], flexible: bool, buf: bytes, pos: int = 0) -> tuple[dict, int]:
    """Interpret any field list (a message body, or an embedded struct such as the consumer protocol's)."""
    r = _Reader(bytes(buf), pos)
    return _struct(r, fields, flexible), r.pos

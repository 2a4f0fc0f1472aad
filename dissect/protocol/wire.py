"""Primitive wire helpers shared by the compiled codec and the interpreter: varints, uuids, tagged sections."""

from __future__ import annotations

import base64
import struct
from functools import lru_cache
from typing import Callable

from kafkatap.dissect.errors import DecodeError

I8 = struct.Struct(">b")
I16 = struct.Struct(">h")
I32 = struct.Struct(">i")

TagDecoders = dict[int, tuple[str, Callable[[bytes, int], tuple[object, int]]]]


def read_uvarint(buf: bytes, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """An unsigned varint of at most `max_bytes` bytes: 5 for the protocol's (Kafka's readUnsignedVarint), 10 for
    record varlongs (the caller un-zigzags those); IndexError past the end."""
    start = pos
    limit = 7 * max_bytes
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift >= limit:
            raise DecodeError("bad_varint", start, f"unsigned varint longer than {max_bytes} bytes")


def varint_start(pos: int, n: int) -> int:
    """Where the compact length prefix of value n + 1 that ends at pos began (error offsets only)."""
    return pos - max(1, ((n + 1).bit_length() + 6) // 7)


def write_uvarint(value: int) -> bytes:
    if value < 0 or value > 0xFFFFFFFF:
        raise DecodeError("bad_value", 0, f"unsigned varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_UUIDS: dict[bytes, str] = {}


def uuid_str(raw: bytes) -> str:
    """16 bytes -> Kafka's Uuid.toString(): URL-safe base64 without padding (22 chars).

    Cached: the same topic ids come back in every Metadata/Fetch/Produce of a capture.
    """
    text = _UUIDS.get(raw)
    if text is None:
        if len(_UUIDS) > 65536:
            _UUIDS.clear()
        text = _UUIDS[raw] = base64.urlsafe_b64encode(raw)[:22].decode()
    return text


@lru_cache(maxsize=512)
def array_struct(code: str, count: int) -> struct.Struct:
    """The Struct reading `count` big-endian scalars of one struct code (arrays of int32 etc.)."""
    return struct.Struct(f">{count}{code}")


def uuid_bytes(text: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError) as exc:
        raise DecodeError("bad_value", 0, f"not a Kafka uuid: {text!r}") from exc
    if len(raw) != 16:
        raise DecodeError("bad_value", 0, f"not a Kafka uuid: {text!r}")
    return raw


def read_tag_section(buf: bytes, pos: int, obj: dict, decoders: TagDecoders) -> int:
    """A whole tagged-field section (count first); the compiled code calls it only when the count is not 0."""
    count, pos = read_uvarint(buf, pos)
    return read_tagged(buf, pos, count, obj, decoders)


def read_tagged(buf: bytes, pos: int, count: int, obj: dict, decoders: TagDecoders) -> int:
    """The body of a tagged-field section (after its count): known tags decoded into obj, unknown ones kept raw."""
    end = len(buf)
    if count > end - pos:
        raise DecodeError("length_too_large", pos, f"{count} tagged fields, {end - pos} bytes left")
    for _ in range(count):
        start = pos
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        if size > end - pos:
            raise DecodeError("length_too_large", start, f"tagged field {tag} of {size} bytes, {end - pos} left")
        known = decoders.get(tag)
        if known is None:
            obj.setdefault("_unknown_tagged_fields", {})[tag] = buf[pos:pos + size]
        else:
            name, decode = known
            obj[name], after = decode(buf, pos)
            if after != pos + size:
                raise DecodeError("bad_tagged_field", start, f"tagged field {tag} ({name}) is {size} bytes, "
                                  f"its value took {after - pos}")
        pos += size
    return pos


def convert(exc: Exception, pos: int, label: str, end: int) -> DecodeError:
    """Turn a low-level failure inside a decoder into the DecodeError of the field read at `pos`."""
    if isinstance(exc, UnicodeDecodeError):
        return DecodeError("bad_utf8", pos + exc.start, f"{label}: {exc.reason}")
    return DecodeError("truncated", pos, f"{label}: field at {pos} runs past the end at {end}")

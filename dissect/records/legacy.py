"""Legacy message sets (magic 0 and 1): one message per record, compressed sets wrapped in one outer message.

Layout: offset int64, message_size int32, crc uint32 (zlib crc32 of magic..end), magic int8, attributes int8,
timestamp int64 (magic 1 only), key bytes, value bytes. A wrapper's value is a compressed inner message set.
Each top-level message becomes one Batch. The CRC of a top-level message is checked (crc_ok); the CRCs of the inner
messages of a wrapper are not, since the wrapper's CRC already covers their compressed bytes.
"""

from __future__ import annotations

import struct
import zlib

from kafkatap.dissect.errors import DecodeError
from kafkatap.dissect.records import compression
from kafkatap.dissect.records.batch import Batch
from kafkatap.dissect.records.record import Record

_PREFIX = struct.Struct(">qiIbb")  # offset, message_size, crc, magic, attributes
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
MIN_SIZE = (14, 22)
"""Smallest message_size for magic 0 and 1: crc, magic, attributes, [timestamp,] key and value lengths."""


def parse_message(buf: bytes | memoryview, pos: int, size: int) -> tuple:
    """Fields of the message at `buf[pos:pos+size]` (size includes the 12-byte offset/size prefix).

    Returns (offset, crc, magic, attributes, timestamp, key, value); the key and value must end exactly at the
    message end.
    """
    offset, _, crc, magic, attributes = _PREFIX.unpack_from(buf, pos)
    end = pos + size
    p = pos + 18
    if magic == 1:
        timestamp = _I64.unpack_from(buf, p)[0]
        p += 8
    else:
        timestamp = -1
    key, p = _bytes(buf, p, end)
    value, p = _bytes(buf, p, end)
    if p != end:
        raise DecodeError("trailing_bytes", p, f"{end - p} bytes after the message value")
    return offset, crc, magic, attributes, timestamp, key, value


def _bytes(buf: bytes | memoryview, p: int, end: int) -> tuple[bytes | None, int]:
    if p + 4 > end:
        raise DecodeError("truncated", p, "message key/value length")
    n = _I32.unpack_from(buf, p)[0]
    p += 4
    if n < 0:
        if n != -1:
            raise DecodeError("negative_length", p - 4, f"length {n}")
        return None, p
    if p + n > end:
        raise DecodeError("length_too_large", p - 4, f"length {n} with {end - p} bytes left in the message")
    return bytes(buf[p : p + n]), p + n


def inner_records(wrapper: tuple, value_at: int, limit: int) -> list[Record]:
    """Decompress a wrapper message's value and decode the inner message set into records with absolute offsets.

    Magic 1 wrappers carry the absolute offset of the last inner message and inner offsets are relative
    (absolute = wrapper offset - last relative offset + relative offset, kept relative when that base would be
    negative, as in Produce requests, like Kafka's own reader); magic 0 inner offsets are absolute.
    `value_at` is where the value sits in the caller's data, for error offsets.
    """
    w_offset, _, w_magic, w_attributes, w_timestamp, _, value = wrapper
    if value is None:
        raise DecodeError("null_not_allowed", value_at, "compressed wrapper message without a value")
    try:
        data = compression.decompress(w_attributes & 7, value, limit, legacy_lz4=w_magic == 0)
    except DecodeError as e:
        raise DecodeError(e.reason, value_at, e.detail) from None
    messages = []
    pos, n = 0, len(data)
    while pos < n:
        if pos + 12 > n:
            raise DecodeError("truncated", value_at, f"inner message at decompressed byte {pos} cut short")
        size = _I32.unpack_from(data, pos + 8)[0] + 12
        if size < 12 + MIN_SIZE[0] or pos + size > n:
            raise DecodeError("length_too_large" if size > 12 else "negative_length", value_at,
                              f"inner message size {size - 12} at decompressed byte {pos}")
        magic = data[pos + 16]
        if magic > 1 or size < 12 + MIN_SIZE[magic]:
            raise DecodeError("bad_magic" if magic > 1 else "truncated", value_at,
                              f"inner message magic {magic} size {size - 12} at decompressed byte {pos}")
        try:
            message = parse_message(data, pos, size)
        except DecodeError as e:
            raise DecodeError(e.reason, value_at, f"{e.detail} (inner message at decompressed byte {pos})") from None
        if message[3] & 7:
            raise DecodeError("bad_compression", value_at, "compressed message nested inside a compressed message")
        messages.append(message)
        pos += size
    if not messages:
        return []
    shift = w_offset - messages[-1][0] if w_magic == 1 else 0
    if shift < 0:  # as Kafka's reader: a wrapper offset below the last relative one (Produce requests) is no base
        shift = 0
    log_append = w_magic == 1 and w_attributes & 0x08
    base = messages[0][0] + shift
    return [Record(offset + shift, w_timestamp if log_append else timestamp, key, value, [], offset + shift - base, -1)
            for offset, _, _, _, timestamp, key, value in messages]


def legacy_batch(data: bytes | bytearray | memoryview, view: memoryview, pos: int, size: int, limit: int) -> Batch:
    """One top-level magic 0/1 message; a problem inside it is kept on the batch for records() to raise."""
    offset, _, crc, magic, attributes = _PREFIX.unpack_from(data, pos)
    timestamp = _I64.unpack_from(data, pos + 18)[0] if magic == 1 else -1
    crc_ok = zlib.crc32(view[pos + 16 : pos + size]) == crc
    compressed = attributes & 7
    inner: list[Record] | DecodeError
    try:
        message = parse_message(data, pos, size)
        if compressed:
            value_at = pos + size - len(message[6] or b"")
            inner = inner_records(message, value_at, limit)
        else:
            inner = [Record(offset, timestamp, message[5], message[6], [], 0, -1)]
    except DecodeError as e:
        inner = e
    if isinstance(inner, DecodeError) or not inner:
        count = len(inner) if isinstance(inner, list) else (None if compressed else 1)
        return Batch(pos, size, magic, offset, offset, count, -1, crc, crc_ok, attributes, timestamp, timestamp,
                     -1, -1, -1, data, inner)
    return Batch(pos, size, magic, inner[0].offset, inner[-1].offset, len(inner), -1, crc, crc_ok, attributes,
                 inner[0].timestamp, max(r.timestamp for r in inner), -1, -1, -1, data, inner)
